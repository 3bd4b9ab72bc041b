"""Routing (seed 003, seed 002 §2): which of six routes one user input takes, and why.

Routing only, no loop: ``decide(text, local_only=…, classify=…)`` returns a
``RoutingDecision``; running a worker, re-routing and the loop controller are someone
else's. The modules, in the order the router uses them:

==============  ==================================================================
``model``       ``Route`` (CHAT PLAN ANALYZE OPS RESEARCH CODE), ``RoutingDecision``
``commands``    the explicit commands at the head of the input
``config``      ``config/routing.json``: rules, classifier prompt and gate, announcements
``rules``       the rule dictionary: the first rule of strong evidence that matches
``classifier``  the classifier's answer checked and gated; ``llm_classifier`` (LLM port)
``router``      ``decide``, ``announcement`` and ``announcement_line`` (a route change's line)
==============  ==================================================================

``charter route "TEXT"`` (``shared_lib.cli.routing``) prints a decision for operators.
"""

from shared_lib.routing.classifier import Classify, llm_classifier
from shared_lib.routing.config import RoutingConfig, load_routing_config
from shared_lib.routing.model import GUIDANCE_CODE_LOCAL_ONLY, Route, RoutingDecision, RoutingFlags
from shared_lib.routing.router import announcement, announcement_line, decide

__all__ = [
    "GUIDANCE_CODE_LOCAL_ONLY",
    "Classify",
    "Route",
    "RoutingConfig",
    "RoutingDecision",
    "RoutingFlags",
    "announcement",
    "announcement_line",
    "decide",
    "llm_classifier",
    "load_routing_config",
]
