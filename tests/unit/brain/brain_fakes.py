"""Fakes and builders of the brain tests: a scripted LLM port (no mocks), proposal builders,
an in-process runtime and turns."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from shared_lib.errors import LLMError
from shared_lib.flags import FLAGS_DOC, FlagsProvider, flags_store_doc, load_flags_file
from shared_lib.ports import LLMRequest, LLMResponse, LLMUsage
from shared_lib.runtime import Runtime
from shared_lib.tools.directory import seed_directory
from shared_lib.turn.envelope import FlagsSection, Turn
from shared_lib.turn.inbound import InboundMessage
from shared_lib.wiring.composition import build_runtime

ORG = "acme"
MODEL = "claude-sonnet-4-6"  # claude-sonnet-4-5 is deprecated by the SDK (end of life 2026-11-30)
FAST = "claude-haiku-4-5"
PEOPLE = [
    {"user_id": "u1", "name": "山田", "level": 3, "department_id": "d1"},
    {"user_id": "u2", "name": "田中", "level": 2, "department_id": "d1"},
]

Answer = LLMResponse | LLMError | Callable[[LLMRequest], LLMResponse]


def verdict(route: str = "CHAT", confidence: float = 0.3, reason: str = "雑談") -> LLMResponse:
    """The classifier's answer (JSON only, as its prompt asks)."""
    body = json.dumps({"route": route, "confidence": confidence, "reason": reason, "evidence": []})
    return LLMResponse(
        content=[{"type": "text", "text": body}], stop_reason="end_turn", model=FAST, usage=usage(40, 20)
    )


class FakeLLM:
    """The ``LLM`` port with scripted answers (then ``default``); records every request.

    The router's classifier call (``call_type="routing"``) is answered by ``classifier`` and
    never takes a scripted answer: by default a low-confidence CHAT, which the router does not
    adopt, so a test of the brain reads the same turn as before the classifier was in it.
    """

    def __init__(
        self, *answers: Answer, default: Answer | None = None, classifier: Answer | None = None
    ) -> None:
        self.answers: list[Answer] = list(answers)
        self.default = default
        self.classifier: Answer = classifier if classifier is not None else verdict()
        self.requests: list[LLMRequest] = []

    def complete(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        if request.call_type == "routing":
            answer: Answer | None = self.classifier
        else:
            answer = self.answers.pop(0) if self.answers else self.default
        if answer is None:
            raise AssertionError(f"unexpected LLM call #{len(self.requests)} ({request.call_type})")
        if isinstance(answer, LLMError):
            raise answer
        return answer(request) if callable(answer) else answer

    def calls(self, call_type: str) -> list[LLMRequest]:
        return [r for r in self.requests if r.call_type == call_type]


def usage(i: int = 100, o: int = 50, cw: int = 0, cr: int = 0) -> LLMUsage:
    return LLMUsage(
        input_tokens=i, output_tokens=o, cache_creation_input_tokens=cw, cache_read_input_tokens=cr
    )


def decision(data: Any, *, stop_reason: str = "tool_use", u: LLMUsage | None = None) -> LLMResponse:
    return LLMResponse(
        content=[{"type": "tool_use", "id": "toolu_01", "name": "submit_proposal", "input": data}],
        stop_reason=stop_reason,
        model=MODEL,
        usage=u or usage(),
    )


def text_answer(text: str, *, stop_reason: str = "end_turn", u: LLMUsage | None = None) -> LLMResponse:
    content = [{"type": "text", "text": text}] if text else []
    return LLMResponse(content=content, stop_reason=stop_reason, model=MODEL, usage=u or usage())


REASON = {
    "intent_understanding": "田中さんに見積書の作成を依頼したいという意図だと理解した",
    "context_used": ["ユーザーの最新メッセージ"],
    "tool_selection_reason": "担当者を指定した作業の依頼なので、タスク作成ツールを提案する",
    "alternatives_considered": ["text_response では実際にタスクが作られない"],
}


def tool_call(
    tool: str = "chatwork_task_create",
    params: dict[str, Any] | None = None,
    *,
    overall: float = 0.95,
    reasoning: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "output_type": "tool_call",
        "reasoning": reasoning or dict(REASON),
        "confidence": {"overall": overall, "intent": overall, "parameters": overall},
        "tool_calls": [
            {
                "tool_name": tool,
                "parameters": params
                if params is not None
                else {"body": "見積書を作成", "assignee_name": "田中"},
                "parameter_sources": {"body": "user_message", "assignee_name": "user_message"},
            }
        ],
        **extra,
    }


def text(
    reply: str = "本当に暑いウルね🐺 水分をとってほしいウル！", *, overall: float = 0.95, **extra: Any
) -> dict[str, Any]:
    return {
        "output_type": "text_response",
        "reasoning": {
            "intent_understanding": "暑さについての雑談だと理解した",
            "response_strategy": "共感して気づかう",
            "no_tool_reason": "業務操作の依頼ではないのでツールは使わない",
        },
        "confidence": {"overall": overall},
        "text_response": reply,
        **extra,
    }


def clarification(question: str = "どちらの佐藤さんウル？", *, overall: float = 0.45) -> dict[str, Any]:
    return {
        "output_type": "clarification_needed",
        "reasoning": {
            "ambiguity_detected": "佐藤という社員が二人いて特定できない",
            "possible_interpretations": ["佐藤一郎さん", "佐藤花子さん"],
        },
        "confidence": {"overall": overall},
        "clarification_question": question,
        "options": ["佐藤一郎", "佐藤花子"],
    }


def runtime(llm: Any = None, *, env: dict[str, str] | None = None, **flag_changes: Any) -> Runtime:
    """An in-process runtime (memory store, in-process bus, recording channels) with live flags."""
    rt = build_runtime({"CHARTER_ENV": "test", "CHARTER_CHANNELS": "recording", **(env or {})}, llm=llm)
    # self-critique is sampled by the turn id's hash (a random ULID): a test that counts a turn's
    # calls would depend on the draw, so it is off unless a test asks for it (its own tests do)
    doc = load_flags_file().model_copy(
        update={
            "brain_mode": "llm",
            "model": MODEL,
            "fast_model": FAST,
            "self_critique_rate": 0.0,
            **flag_changes,
        }
    )
    rt.store.set(FLAGS_DOC, flags_store_doc(doc))
    rt.flags = FlagsProvider(rt.store, ttl_seconds=0)
    seed_directory(rt.store, ORG, PEOPLE, {"d1": None})
    return rt


def inbound(text: str, event_id: str = "e1", user: str = "u1") -> InboundMessage:
    return InboundMessage(
        channel="http",
        org_id=ORG,
        room_id="r1",
        user_id=user,
        text=text,
        message_id=event_id,
        event_id=event_id,
        received_at=datetime.now(UTC),
    )


def served(rt: Runtime, message: str, event_id: str) -> tuple[str, dict[str, Any]]:
    """One message through a wired in-process chain: (the reply sent, the turn's record)."""
    from shared_lib.layers.ingress import accept

    turn_id = accept(rt, inbound(message, event_id))
    assert turn_id is not None
    record = rt.store.get(f"orgs/{ORG}/observability/{turn_id}")
    assert record is not None
    return rt.channels["http"].sent[-1].text, record  # type: ignore[attr-defined]


def turn(text: str, *, arm: str = "llm", model: str = MODEL, **changes: Any) -> Turn:
    t = Turn.from_inbound(inbound(text))
    t.flags = FlagsSection(arm=arm, reason="DEFAULT", model=model)  # type: ignore[arg-type]
    for key, value in changes.items():
        setattr(t, key, value)
    return t


def events(rt: Runtime, kind: str | None = None) -> list[dict[str, Any]]:
    import json

    out = [json.loads(data) for topic, data, _, _ in rt.bus.published if topic == "events"]  # type: ignore[attr-defined]
    return [e for e in out if kind is None or e.get("kind") == kind]
