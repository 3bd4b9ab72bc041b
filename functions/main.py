"""The one ``--source`` for functions-framework: every target of topology.json.

Importing it validates the configuration, so a mis-configured service fails at start-up.
"""

from functions.admin import admin
from functions.authorizer import authorizer
from functions.brain import brain
from functions.brain_shadow import brain_shadow
from functions.context import context
from functions.executor import executor
from functions.guardian import guardian
from functions.ingress import ingress
from functions.memory import memory
from functions.observer import observer
from functions.responder import responder
from shared_lib.wiring.composition import check_startup

check_startup()

__all__ = [
    "admin",
    "authorizer",
    "brain",
    "brain_shadow",
    "context",
    "executor",
    "guardian",
    "ingress",
    "memory",
    "observer",
    "responder",
]
