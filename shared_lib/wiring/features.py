"""The features the composition root registers: the tuple of their manifests, and nothing else.

Adding a feature is one room (``shared_lib/features/<name>/``) and one line here. The CLI package
registers each manifest's ``cli`` and the admin app each manifest's ``admin``
(``docs/ARCHITECTURE.md``, "A feature"); a layer, the CLI and the admin app never import a room
themselves (``tests/static/test_architecture.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from shared_lib.errors import ConfigError
from shared_lib.features.agent_state.manifest import MANIFEST as AGENT_STATE
from shared_lib.features.approvals.manifest import MANIFEST as APPROVALS
from shared_lib.features.auto_approve.manifest import MANIFEST as AUTO_APPROVE
from shared_lib.features.best_of_n.manifest import MANIFEST as BEST_OF_N
from shared_lib.features.debounce.manifest import MANIFEST as DEBOUNCE
from shared_lib.features.finetune.manifest import MANIFEST as FINETUNE
from shared_lib.features.heartbeat_tasks.manifest import MANIFEST as HEARTBEAT_TASKS
from shared_lib.features.jobs.manifest import MANIFEST as JOBS
from shared_lib.features.manifest import Manifest
from shared_lib.features.memory_stories.manifest import MANIFEST as MEMORY_STORIES
from shared_lib.features.persona_learning.manifest import MANIFEST as PERSONA_LEARNING
from shared_lib.features.skills.manifest import MANIFEST as SKILLS
from shared_lib.runtime import Hooks
from shared_lib.tools.builtin import HANDLERS
from shared_lib.tools.catalog import load_registry
from shared_lib.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from shared_lib.runtime import MemoryJob
    from shared_lib.tools.catalog import Binding
    from shared_lib.turn.stages import Step

FEATURES: tuple[Manifest, ...] = (
    APPROVALS,
    AUTO_APPROVE,
    JOBS,
    MEMORY_STORIES,
    DEBOUNCE,
    PERSONA_LEARNING,
    AGENT_STATE,
    FINETUNE,
    BEST_OF_N,
    SKILLS,
    HEARTBEAT_TASKS,
)


def check(features: tuple[Manifest, ...] = FEATURES) -> None:
    """One name, collection, tool handler (a built-in's included), memory job or step per feature:
    a second claim is a ConfigError."""
    for label, names in (
        ("feature", [f.name for f in features]),
        ("collection", [c for f in features for c in f.collections]),
        ("tool handler", [*HANDLERS, *(t for f in features for t in f.tools)]),
        ("memory job", [j for f in features for j in f.jobs]),
        ("step", [s.name for f in features for s in f.steps]),
    ):
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ConfigError(f"features: {label} {', '.join(twice)} declared twice")


def tool_bindings(features: tuple[Manifest, ...] = FEATURES) -> Mapping[str, Binding]:
    """Every feature's tool handlers by name, for the registry."""
    check(features)
    return MappingProxyType({name: b for f in features for name, b in f.tools.items()})


def tool_registry(features: tuple[Manifest, ...] = FEATURES) -> ToolRegistry:
    """The product's tool registry: ``config/tools.json`` bound to the built-in handlers and to
    the features' (an entry whose handler nobody registered is a ``ConfigError``)."""
    return load_registry({**HANDLERS, **tool_bindings(features)})


def memory_jobs(features: tuple[Manifest, ...] = FEATURES) -> Mapping[str, MemoryJob]:
    """The background memory jobs the features contribute, by job name."""
    check(features)
    return MappingProxyType({name: job for f in features for name, job in f.jobs.items()})


def hooks(features: tuple[Manifest, ...] = FEATURES) -> Hooks:
    """What the features lend outside the stage table, each hook one feature's."""
    lent = Hooks()
    for f in features:
        lent = lent.merged(f.hooks, owner=f.name)
    return lent


def steps(features: tuple[Manifest, ...] = FEATURES) -> tuple[Step, ...]:
    """Every feature's steps, for the stage table (``shared_lib.wiring.stages``) to place."""
    check(features)
    return tuple(s for f in features for s in f.steps)


check()
