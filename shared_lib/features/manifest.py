"""A feature's manifest: what one room contributes, declared in one place.

The composition root registers the tuple of manifests (``shared_lib.wiring.features.FEATURES``);
nothing else lists a feature. A manifest names:

* ``steps``: the feature's steps of the stages (``shared_lib.turn.stages.Step``), which the
  stage table of the composition root places;
* ``collections``: the names in ``config/collections.json`` the room owns (their ``owner`` is a
  module of the room);
* ``tools``: the tool handlers the room contributes, by handler name (the ``handler`` of their
  entries in ``config/tools.json``), bound into the registry by the composition root;
* ``jobs``: the background memory target's scheduled jobs the room contributes, by job name
  (``POST /tasks/memory/<job>``);
* ``hooks``: what the room lends outside the stage table (``shared_lib.runtime.Hooks``: the
  ingress's message buffer, the persona's extension, the reply's phrasing, an organisation's
  own tools), each hook lent by one room;
* ``cli`` and ``admin``: the room's entry modules by dotted name. The entry floor loads them
  (the CLI package: ``register(subparsers)``; the admin app: ``blueprints(rt, gate)``), so a
  manifest never imports the floor above it.

>>> Manifest(name="echo", summary="says it back", cli="shared_lib.features.echo.cli").cli
'shared_lib.features.echo.cli'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

from shared_lib.errors import ConfigError
from shared_lib.runtime import Hooks

if TYPE_CHECKING:
    from shared_lib.runtime import MemoryJob
    from shared_lib.tools.catalog import Binding
    from shared_lib.turn.stages import Step

ROOMS = "shared_lib.features"


@dataclass(frozen=True)
class Manifest:
    """One feature's contributions; the entry modules by dotted name (loaded by the entry floor)."""

    name: str
    summary: str
    steps: tuple[Step, ...] = ()
    collections: tuple[str, ...] = ()
    tools: Mapping[str, Binding] = field(default_factory=lambda: MappingProxyType({}))
    jobs: Mapping[str, MemoryJob] = field(default_factory=lambda: MappingProxyType({}))
    hooks: Hooks = field(default_factory=Hooks)
    cli: str | None = None
    admin: str | None = None

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ConfigError(f"feature {self.name!r}: its name is its room's package name")
        for role, module in (("cli", self.cli), ("admin", self.admin)):
            room = f"{ROOMS}.{self.name}."
            if module is not None and not (
                module.startswith(room) and module[len(room) :].partition("_")[0] == role
            ):
                raise ConfigError(
                    f"feature {self.name}: {role} must name its room's {role} module, not {module!r}"
                )
