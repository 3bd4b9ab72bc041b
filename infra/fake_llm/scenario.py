"""Scenarios for the fake Anthropic server: ordered rules, loaded from readable TOML.

A scenario is a list of ``[[rules]]`` tried in order (first match wins) plus an optional
``[default]`` reply. A rule has ``match`` conditions (all must hold), and a ``respond``
reply and/or a ``fault``. When no rule answers and there is no default, the fallback
answerer (the scripted model, wired in by the server) replies.

This module also holds the read-only view of a Messages API request
(:class:`MessagesRequest`) and the :class:`ScenarioEngine`, which owns the mutable
state of a scenario run: the call counter, the per-rule fault counters and the pending
``max_tokens`` continuations.

>>> scenario = Scenario.from_toml('''
... [[rules]]
... match = { last_user_regex = "hello" }
... respond = { content = [{ type = "text", text = "hi" }] }
... ''')
>>> engine = ScenarioEngine(scenario, fallback=lambda request: Reply(content=[]))
>>> body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hello"}]}
>>> engine.decide(MessagesRequest(body)).reply.content
[{'type': 'text', 'text': 'hi'}]
"""

from __future__ import annotations

import copy
import json
import re
import threading
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

JSON = dict[str, Any]

STOP_REASONS = frozenset({"end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal"})
FAULT_KINDS = frozenset({"status", "delay", "cut_stream", "max_tokens"})


class ScenarioError(ValueError):
    """A scenario file or structure is invalid; the message says where."""


# --------------------------------------------------------------------------- request view


def content_text(content: Any) -> str:
    """Text of a message ``content``: the string itself, or its text and tool_result blocks joined."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_result":
            parts.append(content_text(block.get("content", "")))
    return "\n".join(parts)


@dataclass(frozen=True)
class MessagesRequest:
    """Read-only helpers over a parsed ``POST /v1/messages`` body."""

    body: Mapping[str, Any]

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream", False))

    @property
    def messages(self) -> list[JSON]:
        messages = self.body.get("messages")
        return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []

    @property
    def tools(self) -> list[JSON]:
        tools = self.body.get("tools")
        return [t for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []

    def tool_names(self) -> list[str]:
        return [str(tool.get("name", "")) for tool in self.tools]

    def tool_choice_type(self) -> str:
        choice = self.body.get("tool_choice")
        return str(choice.get("type", "auto")) if isinstance(choice, Mapping) else "auto"

    def forced_tool(self) -> str | None:
        """Name of the tool forced by ``tool_choice={"type": "tool", "name": ...}``, else None."""
        choice = self.body.get("tool_choice")
        if isinstance(choice, Mapping) and choice.get("type") == "tool":
            return str(choice.get("name", ""))
        return None

    def system_text(self) -> str:
        return content_text(self.body.get("system", ""))

    def last_user_text(self) -> str:
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return content_text(message.get("content", ""))
        return ""

    def last_role(self) -> str | None:
        return str(self.messages[-1].get("role")) if self.messages else None

    def prefill_text(self) -> str | None:
        """Text of a trailing assistant message (a prefill), or None if the last turn is the user's."""
        if self.last_role() != "assistant":
            return None
        return content_text(self.messages[-1].get("content", ""))

    def conversation_text(self) -> str:
        return "\n".join(content_text(m.get("content", "")) for m in self.messages)


# --------------------------------------------------------------------------- scenario model


@dataclass
class Reply:
    """A model answer before it becomes a wire Message: API-shaped content blocks and stop details.

    ``tool_use`` blocks may omit ``id``; the server assigns a fresh ``toolu_...`` per response.
    """

    content: list[JSON] = field(default_factory=list)
    stop_reason: str | None = None
    stop_sequence: str | None = None
    usage: dict[str, int] = field(default_factory=dict)

    def resolved_stop_reason(self) -> str:
        if self.stop_reason:
            return self.stop_reason
        return "tool_use" if any(b.get("type") == "tool_use" for b in self.content) else "end_turn"

    def copy(self) -> Reply:
        return copy.deepcopy(self)


@dataclass(frozen=True)
class Match:
    """Conditions of a rule; every condition given must hold."""

    last_user_regex: str | None = None
    system_regex: str | None = None
    tool_choice: str | None = None
    call: int | None = None
    model_regex: str | None = None

    def matches(self, request: MessagesRequest, call_number: int) -> bool:
        return all(
            (
                _search(self.last_user_regex, request.last_user_text()),
                _search(self.system_regex, request.system_text()),
                _search(self.model_regex, request.model),
                self.tool_choice is None or self.tool_choice == (request.forced_tool() or "none"),
                self.call is None or self.call == call_number,
            )
        )


def _search(pattern: str | None, text: str) -> bool:
    return pattern is None or re.search(pattern, text, re.DOTALL) is not None


@dataclass(frozen=True)
class Fault:
    """A failure injected for the first ``times`` matching requests (``times=None``: every one)."""

    kind: str
    status: int = 500
    retry_after: float | None = None
    seconds: float = 0.0
    after_blocks: int = 0
    times: int | None = None
    error_type: str | None = None
    message: str | None = None


@dataclass(frozen=True)
class Rule:
    name: str
    match: Match = field(default_factory=Match)
    respond: Reply | None = None
    fault: Fault | None = None


@dataclass(frozen=True)
class Scenario:
    """Ordered rules plus an optional default reply. Immutable; run state lives in ScenarioEngine."""

    rules: tuple[Rule, ...] = ()
    default: Reply | None = None
    name: str = ""
    description: str = ""

    @classmethod
    def from_file(cls, path: str | Path) -> Scenario:
        return cls.from_toml(Path(path).read_text(encoding="utf-8"))

    @classmethod
    def from_toml(cls, text: str) -> Scenario:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as err:
            raise ScenarioError(f"invalid TOML: {err}") from err
        return cls.from_dict(data)

    @classmethod
    def from_text(cls, text: str) -> Scenario:
        """JSON (when the text starts with ``{``) or TOML, as accepted by ``POST /_admin/scenario``."""
        if not text.strip().startswith("{"):
            return cls.from_toml(text)
        try:
            return cls.from_dict(json.loads(text))
        except json.JSONDecodeError as err:
            raise ScenarioError(f"invalid JSON: {err}") from err

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Scenario:
        _check_keys(data, {"name", "description", "rules", "default"}, "scenario")
        rules = data.get("rules", [])
        if not isinstance(rules, list):
            raise ScenarioError("scenario.rules: expected an array of tables")
        default = data.get("default")
        return cls(
            rules=tuple(_parse_rule(rule, i) for i, rule in enumerate(rules)),
            default=None if default is None else _parse_reply(default, "default"),
            name=str(data.get("name", "")),
            description=str(data.get("description", "")),
        )


# --------------------------------------------------------------------------- parsing


def _check_keys(data: Any, allowed: set[str], where: str) -> None:
    if not isinstance(data, Mapping):
        raise ScenarioError(f"{where}: expected a table")
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ScenarioError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(allowed)}")


def _typed(data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = data.get(key)
    if value is not None and (not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool)):
        raise ScenarioError(f"{where}.{key}: wrong type {type(value).__name__}")
    return value


def _parse_rule(data: Any, index: int) -> Rule:
    where = f"rules[{index}]"
    _check_keys(data, {"name", "match", "respond", "fault"}, where)
    if data.get("respond") is None and data.get("fault") is None:
        raise ScenarioError(f"{where}: a rule needs 'respond' and/or 'fault'")
    return Rule(
        name=str(data.get("name") or where),
        match=_parse_match(data.get("match", {}), f"{where}.match"),
        respond=None if data.get("respond") is None else _parse_reply(data["respond"], f"{where}.respond"),
        fault=None if data.get("fault") is None else _parse_fault(data["fault"], f"{where}.fault"),
    )


def _parse_match(data: Any, where: str) -> Match:
    regex_keys = ("last_user_regex", "system_regex", "model_regex")
    _check_keys(data, {*regex_keys, "tool_choice", "call"}, where)
    for key in regex_keys:
        pattern = _typed(data, key, str, where)
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as err:
                raise ScenarioError(f"{where}.{key}: invalid regex: {err}") from err
    call = _typed(data, "call", int, where)
    if call is not None and call < 1:
        raise ScenarioError(f"{where}.call: must be >= 1 (1-based)")
    return Match(
        last_user_regex=data.get("last_user_regex"),
        system_regex=data.get("system_regex"),
        tool_choice=_typed(data, "tool_choice", str, where),
        call=call,
        model_regex=data.get("model_regex"),
    )


def _parse_reply(data: Any, where: str) -> Reply:
    _check_keys(data, {"content", "stop_reason", "stop_sequence", "usage"}, where)
    content = _typed(data, "content", list, where) or []
    stop_reason = _typed(data, "stop_reason", str, where)
    if stop_reason is not None and stop_reason not in STOP_REASONS:
        raise ScenarioError(f"{where}.stop_reason: {stop_reason!r} not in {sorted(STOP_REASONS)}")
    usage = _typed(data, "usage", Mapping, where) or {}
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in usage.values()):
        raise ScenarioError(f"{where}.usage: values must be integers")
    return Reply(
        content=[_parse_block(block, f"{where}.content[{i}]") for i, block in enumerate(content)],
        stop_reason=stop_reason,
        stop_sequence=_typed(data, "stop_sequence", str, where),
        usage=dict(usage),
    )


def _parse_block(data: Any, where: str) -> JSON:
    block_type = data.get("type") if isinstance(data, Mapping) else None
    if block_type == "text":
        _check_keys(data, {"type", "text"}, where)
        return {"type": "text", "text": str(_typed(data, "text", str, where) or "")}
    if block_type == "tool_use":
        _check_keys(data, {"type", "id", "name", "input"}, where)
        if not _typed(data, "name", str, where):
            raise ScenarioError(f"{where}.name: a tool_use block needs a name")
        tool_input = dict(_typed(data, "input", Mapping, where) or {})
        block = {"type": "tool_use", "name": data["name"], "input": tool_input}
        return {"id": data["id"], **block} if data.get("id") else block
    raise ScenarioError(f"{where}.type: expected 'text' or 'tool_use', got {block_type!r}")


def _parse_fault(data: Any, where: str) -> Fault:
    _check_keys(
        data,
        {"kind", "status", "retry_after", "seconds", "after_blocks", "times", "error_type", "message"},
        where,
    )
    kind = data.get("kind")
    if kind not in FAULT_KINDS:
        raise ScenarioError(f"{where}.kind: {kind!r} not in {sorted(FAULT_KINDS)}")
    status = _typed(data, "status", int, where)
    if kind == "status" and (status is None or not 400 <= status <= 599):
        raise ScenarioError(f"{where}.status: a status fault needs an HTTP error status (400-599)")
    seconds = _typed(data, "seconds", (int, float), where)
    if kind == "delay" and seconds is None:
        raise ScenarioError(f"{where}.seconds: a delay fault needs seconds")
    times = _typed(data, "times", int, where)
    if times is not None and times < 1:
        raise ScenarioError(f"{where}.times: must be >= 1 (omit it for 'every matching request')")
    retry_after = _typed(data, "retry_after", (int, float), where)
    return Fault(
        kind=kind,
        status=status or 500,
        retry_after=None if retry_after is None else float(retry_after),
        seconds=float(seconds or 0.0),
        after_blocks=int(_typed(data, "after_blocks", int, where) or 0),
        times=times,
        error_type=_typed(data, "error_type", str, where),
        message=_typed(data, "message", str, where),
    )


# --------------------------------------------------------------------------- engine

Fallback = Callable[[MessagesRequest], Reply]


@dataclass(frozen=True)
class Decision:
    """What the server must do for one request: an error, or a reply with optional delay / cut."""

    reply: Reply | None = None
    error: Fault | None = None
    delay: float = 0.0
    cut_after_blocks: int | None = None
    source: str = ""


@dataclass
class _Effects:
    delay: float = 0.0
    cut_after_blocks: int | None = None
    max_tokens: bool = False

    def add(self, fault: Fault | None) -> None:
        if fault is None:
            return
        if fault.kind == "delay":
            self.delay += fault.seconds
        elif fault.kind == "cut_stream":
            self.cut_after_blocks = fault.after_blocks
        elif fault.kind == "max_tokens":
            self.max_tokens = True


@dataclass(frozen=True)
class _Pending:
    """The rest of a reply cut by a ``max_tokens`` fault, served to the continuation request."""

    full_text: str
    partial: str
    rest: list[JSON]
    stop_reason: str | None

    def continues(self, request: MessagesRequest) -> bool:
        if request.prefill_text() is not None:
            return True
        return bool(self.partial) and self.partial in request.conversation_text()

    def remainder(self, request: MessagesRequest) -> Reply:
        prefill = request.prefill_text()
        start = len(self.partial)
        if prefill and self.full_text.startswith(prefill):
            start = len(prefill)
        text = self.full_text[start:]
        head = [{"type": "text", "text": text}] if text else []
        return Reply(content=[*head, *copy.deepcopy(self.rest)], stop_reason=self.stop_reason)


class ScenarioEngine:
    """Decides the answer to each request; thread-safe. Holds call, fault and continuation state."""

    def __init__(self, scenario: Scenario, fallback: Fallback) -> None:
        self._lock = threading.Lock()
        self._fallback = fallback
        self._calls = 0
        self._scenario = scenario
        self._fault_counts = [0] * len(scenario.rules)
        self._pending: list[_Pending] = []

    @property
    def scenario(self) -> Scenario:
        return self._scenario

    @property
    def calls(self) -> int:
        return self._calls

    def set_scenario(self, scenario: Scenario) -> None:
        """Swap the rules; fault counters and pending continuations restart, the call count does not."""
        with self._lock:
            self._scenario = scenario
            self._fault_counts = [0] * len(scenario.rules)
            self._pending = []

    def reset(self) -> None:
        self.set_scenario(self._scenario)
        with self._lock:
            self._calls = 0

    def decide(self, request: MessagesRequest) -> Decision:
        with self._lock:
            self._calls += 1
            continued = self._take_continuation(request)
            if continued is not None:
                return Decision(reply=continued, source="continuation")
            effects = _Effects()
            for index, rule in enumerate(self._scenario.rules):
                if not rule.match.matches(request, self._calls):
                    continue
                fault = self._consume_fault(index, rule.fault, request.stream)
                if fault is not None and fault.kind == "status":
                    return Decision(error=fault, source=rule.name)
                effects.add(fault)
                if rule.respond is not None:
                    return self._finish(rule.respond, effects, rule.name)
            if self._scenario.default is not None:
                return self._finish(self._scenario.default, effects, "default")
            return self._finish(self._fallback(request), effects, "scripted")

    def _consume_fault(self, index: int, fault: Fault | None, stream: bool) -> Fault | None:
        if fault is None or (fault.kind == "cut_stream" and not stream):
            return None
        if fault.times is not None and self._fault_counts[index] >= fault.times:
            return None
        self._fault_counts[index] += 1
        return fault

    def _finish(self, reply: Reply, effects: _Effects, source: str) -> Decision:
        answer = reply.copy()
        if effects.max_tokens:
            answer = self._truncate(answer)
        return Decision(
            reply=answer, delay=effects.delay, cut_after_blocks=effects.cut_after_blocks, source=source
        )

    def _truncate(self, reply: Reply) -> Reply:
        """Cut the first text block roughly in half (dropping later blocks) and remember the rest."""
        index = next((i for i, b in enumerate(reply.content) if b.get("type") == "text"), None)
        if index is None:
            self._pending.append(_Pending("", "", reply.content, reply.resolved_stop_reason()))
            return Reply(content=[], stop_reason="max_tokens", usage=reply.usage)
        text = str(reply.content[index].get("text", ""))
        partial = text[: max(1, len(text) // 2)] if text else ""
        rest = reply.content[index + 1 :]
        self._pending.append(_Pending(text, partial, rest, reply.resolved_stop_reason()))
        head = [*reply.content[:index], {"type": "text", "text": partial}]
        return Reply(content=head, stop_reason="max_tokens", usage=reply.usage)

    def _take_continuation(self, request: MessagesRequest) -> Reply | None:
        for index, pending in enumerate(self._pending):
            if pending.continues(request):
                del self._pending[index]
                return pending.remainder(request)
        return None
