"""The one ``--source`` for functions-framework: every target of topology.json.

Importing it validates the configuration, so a mis-configured service fails at start-up.
A target's entry module is imported when functions-framework asks for the target (a module
``__getattr__``), so each service imports only its own layer and what that layer uses: the
guardian never loads an LLM SDK, numpy or the embedder (``python -m infra.bench.targets``).
"""

from __future__ import annotations

import importlib
from typing import Any

from shared_lib.wiring.composition import check_startup

check_startup()

# every target of topology.json, each in functions/<target>.py
TARGETS = (
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
)


def __getattr__(name: str) -> Any:
    """``functions/<name>.py``'s entry point, imported on first use (PEP 562)."""
    if name not in TARGETS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    entry = getattr(importlib.import_module(f"functions.{name}"), name)
    globals()[name] = entry
    return entry


def __dir__() -> list[str]:
    return sorted({*globals(), *TARGETS})
