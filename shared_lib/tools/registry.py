"""Tool registry (seed 000 §7.1b): one entry per capability.

An entry is data (description, trigger examples, minimum level, danger class, whether it
needs confirmation, enabled, effect kind, timeout; see ``config/tools.json``) bound to two
pieces of fixed logic: a pydantic parameter model (the LLM's values are candidates,
validated here) and a handler. The same entries feed the brain (Anthropic tool
definitions, ``converter``), the guardian (danger classes), the authorization gate
(minimum levels) and the legacy keyword brain (examples and keywords).

Handlers write only through the transaction they are given, so the executor can claim
the effect's receipt in the same transaction (exactly-once effects). Effects that leave
the store (the ChatWork task API) go through ``ToolContext.task_backend``.

>>> reg = ToolRegistry()
>>> reg.min_level("no_such_tool")
2
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from cryptography.fernet import MultiFernet
from pydantic import BaseModel

from shared_lib.errors import CharterError, ConfigError
from shared_lib.ports import Embedder, Store, Transaction

if TYPE_CHECKING:
    from shared_lib.tools.task_backend import TaskBackend

Danger = Literal["none", "low", "medium", "high", "critical"]
DangerAction = Literal["confirm", "block"]
# read: no effect; store: writes only through the transaction; tasks: an effect through
# the task backend (in the transaction when the backend is the store, external otherwise)
Effect = Literal["read", "store", "tasks"]
DEFAULT_MIN_LEVEL = 2  # seed 000 §6.4.4: tools without an entry need level 2
UNKNOWN_TOOL = "その操作"
UNKNOWN_PARAMETER = "指定した内容"


@dataclass(frozen=True)
class ToolContext:
    """What a handler may know: who, where, when. Never the LLM's opinion of any of it.

    ``turn_id`` is the id of this *call* (``{turn}-{step}-{index}``): handlers derive
    document ids and provider markers from it, so a replay names the same effect.
    ``recovering`` is set when an earlier attempt of the same call may have reached an
    external provider: the handler must look for that effect before creating it again.
    ``confirmed`` holds the guardian's reason codes the user answered 「はい」 to for this very
    action (``date.past``: a date in the past is what the user meant, so it is not refused).
    """

    store: Store
    org_id: str
    user_id: str
    room_id: str
    turn_id: str
    now: datetime
    dry_run: bool = False
    conversation_key: str = ""
    tasks: TaskBackend | None = None
    recovering: bool = False
    confirmed: frozenset[str] = frozenset()
    channel: str = ""  # the conversation's channel (chatwork, line, slack, http); "" when unknown
    embedder: Embedder | None = None  # the memory tools' hybrid search; None: keyword only
    job_id: str = ""  # the delegated job whose turn this call is part of ("" for a person's own turn)
    cipher: MultiFernet | None = None  # the vault's key: opens a kept document for a reader it allows
    # work the executor runs once the effect's transaction committed (never on a replay), with
    # the writable store and the organisation's retention (personal data's expiry): what must not
    # lengthen or contend the effect's own transaction
    after_commit: list[Callable[[Store, timedelta | None], None]] = field(default_factory=list)

    @property
    def task_backend(self) -> TaskBackend:
        if self.tasks is not None:
            return self.tasks
        from shared_lib.tools.task_backend import StoreTaskBackend

        return StoreTaskBackend(self.store)


class ToolInputError(CharterError):
    """A parameter failed the handler's fixed logic (maps to ``validation_error``).

    With ``options`` it is a clarification: the input named more than one thing (two
    田中さん) and the user must choose; the handler never guesses.

    ``key`` names what the user reads: the persona's ``tool_error.<key>`` message, filled with
    ``values`` (``tests/unit/persona/test_voice.py`` holds every raise to one). The message is
    the operator's detail in records and logs, never shown.

    >>> ToolInputError("「山田」が見つからない", key="person_not_found", name="山田").values
    {'name': '山田'}
    """

    def __init__(
        self,
        message: str,
        *,
        key: str | None = None,
        field: str | None = None,
        options: list[str] | None = None,
        **values: object,
    ) -> None:
        super().__init__(message)
        self.key = key
        self.field = field
        self.options = options or []
        self.values = values

    @property
    def is_clarification(self) -> bool:
        return bool(self.options)

    def as_result(self) -> dict[str, Any]:
        """The failed call's result, as a reply reads it (``brain.integration.failure_text``)."""
        return {
            "detail": str(self),
            "error_key": self.key,
            "values": {k: v if isinstance(v, int | float) else str(v) for k, v in self.values.items()},
            "field": self.field,
            "options": self.options,
            "clarification": self.is_clarification,
        }


Handler = Callable[[Any, ToolContext, Transaction | None], dict[str, Any]]


@dataclass(frozen=True)
class PrecheckReads:
    """What a precheck may read: the organisation's store (its directory), nothing it writes."""

    store: Store
    org_id: str


# A check of the parameters, made before a confirmation is asked (raises ``ToolInputError``): what
# the handler would refuse after 「はい」 is said before the question instead. It may read the
# organisation's directory (``PrecheckReads``: 「経理部」 that does not exist), never write.
Precheck = Callable[[Any, PrecheckReads], None]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    examples: tuple[str, ...]
    params: type[BaseModel]
    handler: Handler
    min_level: int = DEFAULT_MIN_LEVEL
    danger: Danger = "none"
    danger_action: DangerAction | None = None  # explicit action wins over the risk level
    requires_confirmation: bool = False
    writes: bool = False
    enabled: bool = True
    keywords: tuple[str, ...] = ()
    timeout_seconds: float = 10.0
    tags: tuple[str, ...] = field(default_factory=tuple)
    effect: Effect | None = None
    # what a user reads (seed 000 §7.1b tool definitions as data): never the names above
    display_name: str = ""
    parameter_display: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    value_display: dict[str, dict[str, str]] = field(default_factory=dict, compare=False, hash=False)
    precheck: Precheck | None = field(default=None, compare=False, hash=False)

    def __post_init__(self) -> None:
        # ``writes`` and ``effect`` say the same thing; either may be given.
        effect = self.effect or ("store" if self.writes else "read")
        object.__setattr__(self, "effect", effect)
        object.__setattr__(self, "writes", effect != "read")

    @property
    def effect_kind(self) -> Effect:
        return self.effect or "read"


class ToolRegistry:
    def __init__(self, specs: list[ToolSpec] | None = None) -> None:
        self._specs: dict[str, ToolSpec] = {}
        for spec in specs or []:
            self.register(spec)

    def register(self, spec: ToolSpec) -> None:
        if spec.name in self._specs:
            raise ConfigError(f"tool {spec.name!r} registered twice")
        self._specs[spec.name] = spec

    def with_specs(self, specs: list[ToolSpec]) -> ToolRegistry:
        """A new registry: these entries and ``specs`` (an organisation's approved skills)."""
        return ToolRegistry([*self._specs.values(), *specs])

    def get(self, name: str) -> ToolSpec | None:
        return self._specs.get(name)

    def enabled(self) -> Iterator[ToolSpec]:
        return (s for s in self._specs.values() if s.enabled)

    def names(self) -> list[str]:
        return list(self._specs)

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(self._specs.values())

    def __len__(self) -> int:
        return len(self._specs)

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def min_level(self, name: str) -> int:
        spec = self._specs.get(name)
        return spec.min_level if spec else DEFAULT_MIN_LEVEL

    def display_name(self, name: str) -> str:
        """The tool as a user reads it (「タスクの作成」); an unknown tool is 「その操作」."""
        spec = self._specs.get(name)
        return spec.display_name if spec and spec.display_name else UNKNOWN_TOOL

    def parameter_label(self, tool: str, param: str) -> str:
        """A parameter as a user reads it (「担当者」): the tool's label, else another tool's
        label of the same name, else 「指定した内容」 — never the internal name."""
        spec = self._specs.get(tool)
        if spec and param in spec.parameter_display:
            return spec.parameter_display[param]
        return self.labels().get(param, UNKNOWN_PARAMETER)

    def labels(self) -> dict[str, str]:
        """Every parameter label of every tool by parameter name (the first tool's wins)."""
        out: dict[str, str] = {}
        for spec in self._specs.values():
            for param, label in spec.parameter_display.items():
                out.setdefault(param, label)
        return out

    def canonical_parameters(self, tool: str, parameters: dict[str, Any]) -> dict[str, Any]:
        """``parameters`` with every enumerated value given by its label (「人物」, 「ＰＥＲＳＯＮ」)
        as the value itself (``person``), from the tool's ``value_display``; anything else as is.

        A model or a person may well write the word the tool's own description uses; the
        parameter model then judges the value as always.
        """
        spec = self._specs.get(tool)
        if spec is None or not spec.value_display:
            return parameters
        out = dict(parameters)
        for param, table in spec.value_display.items():
            if param in out:
                out[param] = _enum_value(out[param], table)
        return out

    def value_label(self, tool: str, param: str, value: object) -> str | None:
        """An enumerated internal value as a user reads it (``preference`` → 「好み」), or ``None``."""
        spec = self._specs.get(tool)
        table = spec.value_display.get(param, {}) if spec else {}
        return table.get(value) if isinstance(value, str) else None


def _enum_value(value: Any, table: dict[str, str]) -> Any:
    """An enumerated value from its value or its label, in any width or case."""
    if isinstance(value, list):
        return [_enum_value(v, table) for v in value]
    if not isinstance(value, str) or value in table:
        return value
    key = _enum_key(value)
    for internal, label in table.items():
        if key in (_enum_key(internal), _enum_key(label)):
            return internal
    return value


def _enum_key(text: str) -> str:
    return "".join(unicodedata.normalize("NFKC", text).split()).casefold().strip("「」『』\"'")
