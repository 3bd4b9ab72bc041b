"""The registry as data: ``config/tools.json`` entries bound to code by handler name.

The file holds what product people change (descriptions, trigger examples, keywords,
minimum level, danger class, confirmation, enabled, timeout, and what a user reads: the
tool's ``display_name``, a Japanese label per parameter in ``parameter_display`` and, for
enumerated values a user may see, ``value_display``); the code holds what must
be fixed logic (the parameter model and the handler), registered in ``HANDLERS`` under
the entry's ``handler`` key — the seed's ``SYSTEM_CAPABILITIES`` + ``HANDLERS`` split
(seed 000 §7.1b). ``CHARTER_TOOLS_FILE`` points at another file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shared_lib.errors import ConfigError
from shared_lib.settings import config_files
from shared_lib.tools.registry import Danger, DangerAction, Effect, Handler, Precheck, ToolRegistry, ToolSpec

TOOLS_FILE = Path(__file__).resolve().parent.parent / "config" / "tools.json"


@dataclass(frozen=True)
class Binding:
    """The fixed logic behind an entry: its parameter model and its handler."""

    params: type[BaseModel]
    handler: Handler
    precheck: Precheck | None = None  # the parameters' check before a confirmation is asked


class CapabilityEntry(BaseModel):
    """One entry of ``tools.json``; level, danger class and effect have no default on purpose."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{1,63}$")]
    display_name: Annotated[str, Field(min_length=1, max_length=40)]
    parameter_display: dict[str, Annotated[str, Field(min_length=1, max_length=40)]] = Field(
        default_factory=dict
    )
    value_display: dict[str, dict[str, Annotated[str, Field(min_length=1)]]] = Field(default_factory=dict)
    handler: Annotated[str, Field(min_length=1)]
    description: Annotated[str, Field(min_length=1, max_length=1024)]
    trigger_examples: list[Annotated[str, Field(min_length=1)]]
    keywords: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    min_level: Annotated[int, Field(ge=1, le=6)]
    danger: Danger
    danger_action: DangerAction | None = None
    requires_confirmation: bool = False
    enabled: bool = True
    effect: Effect
    timeout_seconds: Annotated[float, Field(gt=0, le=120)] = 10.0


class CatalogueFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    version: int = 1
    tools: list[CapabilityEntry]


def read_catalogue(path: Path | None = None) -> CatalogueFile:
    file = path or config_files.current().tools or TOOLS_FILE
    try:
        raw: Any = json.loads(file.read_text(encoding="utf-8"))
        return CatalogueFile.model_validate(raw)
    except (OSError, ValueError) as exc:
        detail = exc.errors()[:5] if isinstance(exc, ValidationError) else exc
        raise ConfigError(f"tool registry {file}: {detail}") from exc


def bind(entry: CapabilityEntry, handlers: Mapping[str, Binding]) -> ToolSpec:
    binding = handlers.get(entry.handler)
    if binding is None:
        raise ConfigError(f"tool {entry.name!r}: no handler {entry.handler!r} is registered")
    return ToolSpec(
        name=entry.name,
        description=entry.description,
        examples=tuple(entry.trigger_examples),
        params=binding.params,
        handler=binding.handler,
        min_level=entry.min_level,
        danger=entry.danger,
        danger_action=entry.danger_action,
        requires_confirmation=entry.requires_confirmation,
        enabled=entry.enabled,
        keywords=tuple(entry.keywords),
        timeout_seconds=entry.timeout_seconds,
        effect=entry.effect,
        display_name=entry.display_name,
        parameter_display=dict(entry.parameter_display),
        value_display={k: dict(v) for k, v in entry.value_display.items()},
        precheck=binding.precheck,
    )


def load_registry(
    handlers: Mapping[str, Binding], path: Path | None = None, *, only_bound: bool = False
) -> ToolRegistry:
    """The catalogue's entries bound to ``handlers``; an entry without its handler is a
    ``ConfigError``, or, with ``only_bound``, left out (the built-ins without the features')."""
    catalogue = read_catalogue(path)
    entries = [e for e in catalogue.tools if not only_bound or e.handler in handlers]
    # A name given twice is a ConfigError from the registry itself.
    return ToolRegistry([bind(entry, handlers) for entry in entries])
