"""Fakes and builders for the observability/operations tests.

* ``ScriptedLLM`` — the fake server's scripted model behind the ``LLM`` port, no HTTP; it
  counts its calls so a test can prove none was made.
* ``Clock`` — the runtime's clock, moved by hand.
* ``make_runtime`` — the real in-process chain (memory store, in-process bus, recording
  channels) with the demo directory; ``send`` puts one message through it.
* ``traced_turn`` — a turn of organisation ``acme`` with a W3C ``traceparent`` (``TRACEPARENT``).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from infra.fake_llm.scenario import MessagesRequest
from infra.fake_llm.scripted import answer
from shared_lib.demo_data import DEMO_ORG, DEMO_ROOM, DEMO_USER, seed_demo_directory
from shared_lib.flags import FLAGS_DOC, flags_store_doc, load_flags_file
from shared_lib.layers.ingress import accept
from shared_lib.ports import LLMRequest, LLMResponse, LLMUsage
from shared_lib.runtime import Runtime
from shared_lib.turn.envelope import Turn
from shared_lib.turn.inbound import InboundMessage
from shared_lib.wiring.composition import build_runtime, wire_inprocess

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"
ORG = DEMO_ORG
ROOM = DEMO_ROOM
USER = DEMO_USER
TASK_DONE = "請求書のタスクを完了にして"  # scripted: chatwork_task_complete, confidence 0.75
TASK_CREATE = (
    "田中さんに明日までに見積書を作成するタスクをお願いできる？"  # chatwork_task_create, confidence 0.9
)


class ScriptedLLM:
    def __init__(
        self,
        *,
        input_tokens: int = 120,
        output_tokens: int = 60,
        cache_read: int = 40,
        duration_ms: float = 5.0,
    ) -> None:
        self.calls: list[LLMRequest] = []
        self.usage = LLMUsage(
            input_tokens=input_tokens, output_tokens=output_tokens, cache_read_input_tokens=cache_read
        )
        self.duration_ms = duration_ms

    def complete(self, request: LLMRequest) -> LLMResponse:
        self.calls.append(request)
        reply = answer(MessagesRequest(request.model_dump(exclude_none=True)))
        return LLMResponse(
            content=reply.content,
            stop_reason=reply.resolved_stop_reason(),
            model=request.model,
            usage=self.usage,
            duration_ms=self.duration_ms,
        )


@dataclass
class Clock:
    at: datetime = field(default_factory=lambda: datetime.now(UTC).replace(microsecond=0))

    def __call__(self) -> datetime:
        return self.at

    def advance(self, **delta: float) -> None:
        self.at += timedelta(**delta)


_events = itertools.count(1)


def make_runtime(
    *,
    llm: Any = None,
    clock: Any = None,
    store: Any = None,
    env: dict[str, str] | None = None,
    **services: Any,
) -> Runtime:
    overrides: dict[str, Any] = {"llm": llm, "notifiers": [], **services}
    if clock is not None:
        overrides["clock"] = clock
    if store is not None:
        overrides["store"] = store
    rt = build_runtime(
        {"CHARTER_ENV": "test", "CHARTER_CHANNELS": "recording", "CHARTER_FLAGS_TTL": "0", **(env or {})},
        **overrides,
    )
    wire_inprocess(rt)
    seed_demo_directory(rt.store)
    # the flags file's self-critique is sampled by the turn id's hash (a random ULID): a turn it
    # critiques makes another call and is staged only when the critique passes, so the operators'
    # tests, which count calls and staged turns, run without it (its own tests turn it on)
    if rt.store.get(FLAGS_DOC) is None:
        rt.store.set(
            FLAGS_DOC, flags_store_doc(load_flags_file().model_copy(update={"self_critique_rate": 0.0}))
        )
    return rt


def send(rt: Runtime, text: str, *, user: str = USER, org: str = ORG, room: str = ROOM) -> str:
    n = next(_events)
    msg = InboundMessage(
        channel="http",
        org_id=org,
        room_id=room,
        user_id=user,
        text=text,
        message_id=f"m{n}",
        event_id=f"ops-{n}",
        received_at=rt.clock(),
    )
    turn_id = accept(rt, msg)
    assert turn_id is not None
    return turn_id


def replies(rt: Runtime) -> list[str]:
    return [r.text for r in rt.channels["http"].sent]  # type: ignore[attr-defined]


def policy_file(tmp_path: Path, **sections: dict[str, Any]) -> Path:
    """The packaged policy with ``sections`` merged in (e.g. ``confidence={"medium": 0.8}``)."""
    from shared_lib.policy.config import POLICY_FILE

    data = json.loads(POLICY_FILE.read_text(encoding="utf-8"))
    for name, values in sections.items():
        data[name] = {**data.get(name, {}), **values}
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def make_record(at: datetime, **fields: Any) -> Any:
    """A synthetic served-turn record at ``at`` (fields override the defaults)."""
    from shared_lib.observability.records import ObservabilityRecord

    n = next(_events)
    base: dict[str, Any] = {
        "event_id": f"turn_record-T{n}-0",
        "kind": "turn_record",
        "record_id": f"T{n}",
        "turn_id": f"T{n}",
        "org_id": ORG,
        "organization_id": ORG,
        "timestamp": at,
        "occurred_at": at,
        "recorded_at": at,
        "user_id": USER,
        "room_id": ROOM,
        "channel": "http",
        "conversation_key": f"{ORG}/{ROOM}/{USER}",
        "input_message": "hi",
        "llm_model": "claude-sonnet-4-5",
        "arm": "llm",
        "flags_arm": "llm",
        "flags_reason": "DEFAULT",
        "flags_version": "v1",
        "llm_reasoning": "ユーザーは挨拶をしているので、挨拶を返すのが適切だと判断した。ツールは不要である。",
        "llm_confidence": 0.9,
        "output_type": "text_response",
        "guardian_action": "allow",
        "guardian_reason": "pass",
        "auth_result": "not_applicable",
        "execution_success": False,
        "final_response": "こんにちは",
        "response_kind": "reply",
        "total_duration_ms": 1000.0,
        "llm_duration_ms": 800.0,
        "tool_duration_ms": 0.0,
        "usage": {
            "input_tokens": 100,
            "output_tokens": 50,
            "cache_read_input_tokens": 100,
            "llm_calls": 1,
            "llm_duration_ms": 800.0,
            "cost_usd": 0.01,
        },
        "cost_usd": 0.01,
    }
    base.update(fields)
    return ObservabilityRecord.model_validate(base)


def traced_turn(traceparent: str = TRACEPARENT) -> Turn:
    msg = InboundMessage(
        channel="http",
        org_id="acme",
        room_id="r1",
        user_id="u1",
        text="hi",
        message_id="m1",
        event_id="e1",
        received_at="2026-11-23T00:00:00+00:00",
    )
    return Turn.from_inbound(msg, traceparent=traceparent)
