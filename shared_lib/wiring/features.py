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
from shared_lib.features.debounce.manifest import MANIFEST as DEBOUNCE
from shared_lib.features.finetune.manifest import MANIFEST as FINETUNE
from shared_lib.features.jobs.manifest import MANIFEST as JOBS
from shared_lib.features.manifest import Manifest
from shared_lib.features.memory_stories.manifest import MANIFEST as MEMORY_STORIES
from shared_lib.features.persona_learning.manifest import MANIFEST as PERSONA_LEARNING

if TYPE_CHECKING:
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
)


def check(features: tuple[Manifest, ...] = FEATURES) -> None:
    """One name, collection, tool handler or step per feature: a second claim is a ConfigError."""
    for label, names in (
        ("feature", [f.name for f in features]),
        ("collection", [c for f in features for c in f.collections]),
        ("tool handler", [t for f in features for t in f.tools]),
        ("step", [s.name for f in features for s in f.steps]),
    ):
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ConfigError(f"features: {label} {', '.join(twice)} declared twice")


def tool_bindings(features: tuple[Manifest, ...] = FEATURES) -> Mapping[str, Binding]:
    """Every feature's tool handlers by name, for the registry."""
    check(features)
    return MappingProxyType({name: b for f in features for name, b in f.tools.items()})


def steps(features: tuple[Manifest, ...] = FEATURES) -> tuple[Step, ...]:
    """Every feature's steps, for the stage table (``shared_lib.wiring.stages``) to place."""
    check(features)
    return tuple(s for f in features for s in f.steps)


check()
