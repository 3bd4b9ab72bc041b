"""Fakes and builders for the rollout tests: a scripted LLM, controllable clocks, and an
in-process runtime whose live flags document is seeded from a flags file.

The runtime is the real in-process pipeline: the observer itself calls the comparison
hooks (``shared_lib.rollout.comparison``) and the rollback guard."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from infra.fake_llm.scenario import MessagesRequest
from infra.fake_llm.scripted import answer
from shared_lib.errors import LLMError
from shared_lib.flags import REPO_FLAGS_FILE, FlagsProvider, seed_flags
from shared_lib.layers.ingress import accept
from shared_lib.ports import LLMRequest, LLMResponse, LLMUsage, Store
from shared_lib.runtime import Runtime
from shared_lib.tools.directory import seed_directory
from shared_lib.turn.inbound import InboundMessage
from shared_lib.wiring.composition import build_runtime, wire_inprocess

ORG = "acme"
USER_MARK = "【ユーザーのメッセージ】\n"
PEOPLE = [
    {"user_id": "u1", "name": "鈴木一郎", "level": 2, "department_id": "d1"},
    {"user_id": "u2", "name": "田中太郎", "level": 2, "department_id": "d1"},
    {"user_id": "u3", "name": "山田次郎", "level": 4, "department_id": "d1"},
]


class ScriptedLLM:
    """The fake server's scripted model behind the ``LLM`` port, without HTTP.

    It answers from the user's message only (the product also sends the rendered context,
    which quotes earlier messages). ``gate`` lets a test hold a call until it releases it.
    """

    def __init__(self, *, input_tokens: int = 120, output_tokens: int = 60, duration_ms: float = 5.0) -> None:
        self.calls: list[LLMRequest] = []
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.duration_ms = duration_ms
        self.gate: threading.Event | None = None

    def complete(self, request: LLMRequest) -> LLMResponse:
        self.calls.append(request)
        if self.gate is not None:
            self.gate.wait()
        body = request.model_dump(exclude_none=True)
        for message in body["messages"]:
            if isinstance(message.get("content"), str) and USER_MARK in message["content"]:
                message["content"] = message["content"].split(USER_MARK, 1)[1]
        reply = answer(MessagesRequest(body))
        return LLMResponse(
            content=reply.content,
            stop_reason=reply.resolved_stop_reason(),
            model=request.model,
            usage=LLMUsage(input_tokens=self.input_tokens, output_tokens=self.output_tokens),
            duration_ms=self.duration_ms,
        )


@dataclass
class Ticker:
    """A monotonic clock a test advances by hand (cache TTLs, throttles)."""

    now: float = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class WallClock:
    """The runtime's ``clock``: a fixed UTC time a test moves forward."""

    at: datetime = field(default_factory=lambda: datetime(2026, 11, 23, 9, 0, tzinfo=UTC))

    def __call__(self) -> datetime:
        return self.at

    def advance(self, **delta: float) -> None:
        self.at += timedelta(**delta)


def write_flags(path: Path, **changes: Any) -> Path:
    """A flags file: the repository's file with ``changes`` applied."""
    data = json.loads(REPO_FLAGS_FILE.read_text(encoding="utf-8"))
    data.update(changes)
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    return path


def make_runtime(
    tmp_path: Path,
    *,
    llm: Any = None,
    store: Store | None = None,
    clock: Any = None,
    orgs: tuple[str, ...] = (ORG,),
    **flag_changes: Any,
) -> Runtime:
    """An in-process runtime whose live flags document was seeded from a file with ``flag_changes``
    (the same directory of people in each of ``orgs``)."""
    overrides: dict[str, Any] = {"llm": llm}
    if store is not None:
        overrides["store"] = store
    if clock is not None:
        overrides["clock"] = clock
    rt = build_runtime(
        {"CHARTER_ENV": "test", "CHARTER_LLM": "none", "CHARTER_CHANNELS": "recording"}, **overrides
    )
    rt.flags = FlagsProvider(rt.store, ttl_seconds=0)
    seed_flags(rt.store, write_flags(tmp_path / "flags.json", **flag_changes))
    for org in orgs:
        seed_directory(rt.store, org, PEOPLE, {"d1": None})
    wire_inprocess(rt)
    return rt


_event_counter = iter(range(1, 10**9))


def send(rt: Runtime, text: str, *, user: str = "u1", org: str = ORG, room: str = "r1") -> str:
    n = next(_event_counter)
    msg = InboundMessage(
        channel="http",
        org_id=org,
        room_id=room,
        user_id=user,
        text=text,
        message_id=f"m{n}",
        event_id=f"e{n}",
        received_at=datetime.now(UTC),
    )
    turn_id = accept(rt, msg)
    assert turn_id is not None
    return turn_id


def replies(rt: Runtime) -> list[str]:
    return [r.text for r in rt.channels["http"].sent]  # type: ignore[attr-defined]


_record_ids = iter(range(1, 10**9))


def guard_record(
    *,
    org: str = ORG,
    tools: int = 0,
    failed: int = 0,
    code: str = "execution_error",
    block: str | None = None,
    errors: tuple[str, ...] = (),
    llm_ms: float = 800.0,
    calls: int = 1,
    cost: float = 0.001,
    **extra: Any,
) -> dict[str, Any]:
    """A stored observability record of the LLM arm, as the observer hands it to the guard.

    ``block`` is the guardian's reason code of a block; ``errors`` the catalogue codes on the turn.
    """
    results = [
        {"tool_name": "t", "ok": i >= failed, "error_code": code if i < failed else None, "dry_run": False}
        for i in range(tools)
    ]
    return {
        "turn_id": f"T{next(_record_ids)}",
        "org_id": org,
        "flags_arm": "llm",
        "arm": "llm",
        "execution_result": results,
        "guardian_action": "block" if block else "allow",
        "guardian_reason": block or "pass",
        "auth_result": "not_applicable" if block else "allowed",
        "errors": [{"code": c} for c in errors],
        "usage": {"llm_calls": calls},
        "llm_duration_ms": llm_ms,
        "cost_usd": cost,
        **extra,
    }


class FailingLLM(ScriptedLLM):
    """The scripted model, failing every call with ``llm_unavailable`` while ``failing`` is set
    (what the Anthropic adapter raises after its retries): an injected regression."""

    def __init__(self) -> None:
        super().__init__()
        self.failing = False

    def complete(self, request: LLMRequest) -> LLMResponse:
        if self.failing:
            self.calls.append(request)
            raise LLMError("llm_unavailable", "injected regression")
        return super().complete(request)
