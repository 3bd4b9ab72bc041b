"""Tool registry (seed 000 §7.1b): one entry per capability.

An entry is data (description, trigger examples, minimum level, danger class, whether it
needs confirmation, enabled) plus two pieces of fixed logic: a pydantic parameter model
(the LLM's values are candidates, validated here) and a handler. The same entries feed
the brain (Anthropic tool definitions), the guardian (danger classes), the authorization
gate (minimum levels) and the legacy keyword brain (examples and keywords).

Handlers write only through the transaction they are given, so the executor can claim
the effect's receipt in the same transaction (exactly-once effects).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel

from shared_lib.ports import Store, Transaction

Danger = Literal["none", "medium", "high", "critical"]
DEFAULT_MIN_LEVEL = 2  # seed 000 §6.4.4: unknown tools need level 2


@dataclass(frozen=True)
class ToolContext:
    """What a handler may know: who, where, when. Never the LLM's opinion of any of it."""

    store: Store
    org_id: str
    user_id: str
    room_id: str
    turn_id: str
    now: datetime
    dry_run: bool = False


class ToolInputError(Exception):
    """A parameter failed the handler's fixed logic (maps to ``validation_error``)."""

    def __init__(self, message: str, *, field: str | None = None, options: list[str] | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.options = options or []


Handler = Callable[[Any, ToolContext, Transaction | None], dict[str, Any]]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    examples: tuple[str, ...]
    params: type[BaseModel]
    handler: Handler
    min_level: int = DEFAULT_MIN_LEVEL
    danger: Danger = "none"
    danger_action: Literal["confirm", "block"] | None = None  # explicit action wins over risk level
    requires_confirmation: bool = False
    writes: bool = False
    enabled: bool = True
    keywords: tuple[str, ...] = ()
    timeout_seconds: float = 10.0
    tags: tuple[str, ...] = field(default_factory=tuple)


class ToolRegistry:
    def __init__(self, specs: list[ToolSpec] | None = None) -> None:
        self._specs: dict[str, ToolSpec] = {}
        for spec in specs or []:
            self.register(spec)

    def register(self, spec: ToolSpec) -> None:
        if spec.name in self._specs:
            raise ValueError(f"tool {spec.name!r} registered twice")
        self._specs[spec.name] = spec

    def get(self, name: str) -> ToolSpec | None:
        return self._specs.get(name)

    def enabled(self) -> Iterator[ToolSpec]:
        return (s for s in self._specs.values() if s.enabled)

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(self._specs.values())

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def min_level(self, name: str) -> int:
        spec = self._specs.get(name)
        return spec.min_level if spec else DEFAULT_MIN_LEVEL
