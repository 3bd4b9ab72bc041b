"""Local-only mode (seed 003 明示コマンド・セキュリティ): ``/local`` keeps every request away
from the cloud LLM until ``/cloud``; CODE is refused with the way out; the routing decision is
recorded. In process, over the real layers, with a counting fake LLM adapter."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from brain_fakes import ORG, FakeLLM, decision, runtime, served, text, text_answer, turn

from shared_lib.brain.integration import integrate
from shared_lib.observability.records import ObservabilityRecord
from shared_lib.ops.render import trail
from shared_lib.persona.catalogue import load_persona
from shared_lib.ports import LLMRequest, LLMResponse
from shared_lib.routing.guard import LocalOnlyGuard, LocalOnlyViolation
from shared_lib.runtime import Runtime
from shared_lib.state.local_only import write_local_only as set_local_only
from shared_lib.state.session import load_session
from shared_lib.turn.callctx import call_context, current
from shared_lib.turn.envelope import RouteSection, ToolResult
from shared_lib.wiring.composition import wire_inprocess

PERSONA = load_persona()
QUESTION = "今日は暑いですね、体調管理のコツはある？"
INTERNAL = ("local_only", "CODE", "route.")


def answer(request: LLMRequest) -> LLMResponse:
    """The model's answer to any call: a text proposal, or phrasing text."""
    if request.call_type == "proposal":
        return decision(text())
    return text_answer("できたウル🐺")


class Chain:
    """A wired in-process runtime over a counting fake LLM; ``say`` runs one turn."""

    def __init__(self) -> None:
        self.llm = FakeLLM(default=answer)
        self.rt: Runtime = runtime(self.llm)
        wire_inprocess(self.rt)
        self.n = 0

    def say(self, message: str) -> tuple[str, dict[str, Any], int]:
        """(reply, observability record, LLM requests the turn made)."""
        self.n += 1
        before = len(self.llm.requests)
        reply, record = served(self.rt, message, f"e{self.n}")
        return reply, record, len(self.llm.requests) - before

    def local_only(self) -> bool:
        session = load_session(self.rt.store, ORG, f"{ORG}/r1/u1", self.rt.clock())
        return bool(session.get("local_only"))


def brain_reason(record: dict[str, Any]) -> str:
    return next(e["reason_code"] for e in record["trail"] if e["layer"] == "brain")


def test_given_local_when_questions_follow_then_the_legacy_brain_answers_and_no_request_reaches_the_llm():
    chain = Chain()
    # GIVEN the user switched the conversation to local-only
    reply, record, calls = chain.say("/local")
    # THEN a short confirmation in the persona's voice, and no LLM call
    assert reply == PERSONA.message("route.local_on") and calls == 0
    assert chain.local_only()
    # WHEN ordinary questions follow
    for message in (QUESTION, "田中さんに見積書のタスクをお願い", "ありがとう、助かるよ"):
        reply, record, calls = chain.say(message)
        # THEN the legacy arm answers each, and the adapter receives zero requests
        assert (
            calls == 0
            and record["arm"] == "legacy"
            and brain_reason(record) == "route.local_only.no_local_peer"
        )
        assert record["route"]["local_only"] is True and reply.strip()
    assert chain.llm.requests == []
    # AND the conversation is still local-only
    assert chain.local_only()


def test_given_local_when_cloud_then_the_llm_answers_again_and_never_reads_the_command_word():
    chain = Chain()
    chain.say("/local")
    assert chain.say(QUESTION)[2] == 0
    # WHEN the user lifts the mode
    reply, _, calls = chain.say("/cloud")
    # THEN a confirmation without an LLM call, and the session is no longer local-only
    assert reply == PERSONA.message("route.local_off") and calls == 0 and not chain.local_only()
    # AND the next question is proposed by the LLM again
    _, record, calls = chain.say(QUESTION)
    assert calls >= 1 and record["arm"] == "llm" and record["route"]["local_only"] is False
    # AND a command in front of a question is not given to the model: only the question is
    chain.say(f"/cloud {QUESTION}")
    assert chain.llm.calls("proposal")[-1].messages[0]["content"] == QUESTION


def test_given_local_and_code_when_asked_to_fix_a_file_then_the_refusal_and_no_tool_and_no_llm():
    chain = Chain()
    # WHEN a coding request comes with /local
    reply, record, calls = chain.say("/local /code main.py を直して")
    # THEN the persona's refusal names the way out, nothing ran, the LLM was not called
    assert reply == PERSONA.message("route.code_local_only") and "/cloud" in reply
    assert calls == 0 and record["tool_calls_executed"] == 0 and record["selected_tools"] == []
    assert record["route"]["refused"] == "code_needs_cloud" and record["route"]["initial_route"] == "CHAT"
    assert brain_reason(record) == "route.code_local_only"
    # AND /local still took effect for the conversation
    assert chain.local_only()


def test_given_the_guarded_llm_when_called_inside_a_local_only_turn_then_it_raises_before_the_adapter():
    inner = FakeLLM(default=answer)
    guarded = LocalOnlyGuard(inner)
    request = LLMRequest(model="m", messages=[{"role": "user", "content": "hi"}])
    local = turn(QUESTION, route=RouteSection(local_only=True, source="command", commands=["/local"]))
    # WHEN a layer of a local-only turn calls the LLM
    with call_context(local, "responder"):
        assert current() is not None and current().local_only  # type: ignore[union-attr]
        with pytest.raises(LocalOnlyViolation, match="local_only"):
            guarded.complete(request)
    # THEN the adapter never saw it; outside a local-only turn the call goes through
    assert inner.requests == []
    with call_context(turn(QUESTION), "brain"):
        guarded.complete(request)
    assert len(inner.requests) == 1


def test_given_a_runtime_then_its_llm_is_guarded_injected_or_not():
    llm = FakeLLM(default=answer)
    rt = runtime(llm)
    assert isinstance(rt.llm, LocalOnlyGuard) and rt.llm.inner is llm


def test_given_a_local_only_turn_with_results_when_integrating_then_templates_phrase_them_without_llm():
    llm = FakeLLM()
    rt = runtime(llm)
    t = turn("田中さんに見積書のタスクをお願い", route=RouteSection(local_only=True, source="fallback"))
    t.proposal.arm = "state"  # an approved action: the LLM would phrase it in cloud mode
    done = ToolResult(
        tool_name="chatwork_task_create",
        call_index=0,
        ok=True,
        result={"body": "見積書を作成", "assignee": "田中", "limit_date": "2026-02-01"},
    )
    t.execution.results = [done]
    with call_context(t, "responder"):
        reply = integrate(t, rt)
    assert reply.startswith("田中さんにタスク「見積書を作成」を作成したウル") and llm.requests == []


def test_given_local_then_the_session_keeps_it_and_a_redelivered_switch_does_not_apply_twice():
    chain = Chain()
    rt = chain.rt
    chain.say("/local")
    chain.say(QUESTION)
    assert chain.local_only()
    # WHEN the /local turn's first hop is delivered again
    topic, data, attrs, key = next(p for p in rt.bus.published if p[0] == "received")  # type: ignore[attr-defined]
    sent_before = len(rt.channels["http"].sent)  # type: ignore[attr-defined]
    rt.bus.publish(topic, data, attrs, key)
    # THEN nothing changes and nothing is sent again
    assert chain.local_only() and len(rt.channels["http"].sent) == sent_before  # type: ignore[attr-defined]
    # AND the session write itself is idempotent, and an older turn never overrides a newer one
    now = rt.clock()
    conv = f"{ORG}/r1/u1"
    assert set_local_only(rt.store, ORG, conv, True, now, turn_id="t-new", at=now) is True
    assert set_local_only(rt.store, ORG, conv, True, now, turn_id="t-new", at=now) is False
    old = now - timedelta(seconds=5)
    assert set_local_only(rt.store, ORG, conv, False, now, turn_id="t-old", at=old) is False
    assert chain.local_only()


def test_given_a_turn_then_its_record_and_turns_show_carry_the_routing_decision():
    chain = Chain()
    _, record, _ = chain.say("/local /plan 来週のリリース手順を整理して")
    # THEN the record's routing section is the router's decision
    assert record["route"] == {
        "initial_route": "PLAN",
        "source": "command",
        "confidence": 1.0,
        "reason": "command /plan",
        "rule_id": None,
        "local_only": True,
        "refused": None,
        "commands": ["/local", "/plan"],
        "classifier_route": None,  # a command decided: the classifier was not asked
        "classifier_confidence": None,
        "classifier_error": None,
        "peers": [],  # no local peer: the legacy brain answered, no model served
    }
    # AND the decision trail's context entry names it, and `charter turns show` prints it
    context = next(e for e in record["trail"] if e["layer"] == "context")
    assert "route=PLAN/command local_only=1" in context["detail"]
    shown = trail(ObservabilityRecord.from_doc(record))
    assert (
        "route      PLAN by command" in shown and "LOCAL ONLY" in shown and "commands /local /plan" in shown
    )


def test_given_local_only_turns_then_no_reply_shows_an_internal_name():
    chain = Chain()
    replies = [
        chain.say(m)[0]
        for m in ("/local", QUESTION, "/local /code main.py を直して", "/code 直して", "/cloud", QUESTION)
    ]
    for reply in replies:
        assert reply.strip()
        assert not any(word in reply for word in INTERNAL), reply


def _failing_session_source(chain: Chain) -> None:
    from dataclasses import replace

    from shared_lib.context.sources import default_sources

    def broken(_request: Any) -> Any:
        raise TimeoutError("session source too slow")

    chain.rt.context_builder.sources = [
        replace(s, fetch=broken) if s.name == "session" else s for s in default_sources()
    ]


def test_a_session_source_that_fails_is_read_once_more_so_a_slow_read_does_not_change_the_brain():
    # GIVEN a conversation that never said /local, and a session source that fails (as under load)
    chain = Chain()
    _failing_session_source(chain)
    # WHEN a question arrives
    _, record, calls = chain.say(QUESTION)
    # THEN the direct read finds no /local: the LLM arm answers as usual
    assert calls > 0 and record["route"]["local_only"] is False


def test_a_local_conversation_whose_session_source_fails_stays_local():
    chain = Chain()
    chain.say("/local")
    _failing_session_source(chain)
    _, record, calls = chain.say(QUESTION)
    assert calls == 0 and record["route"]["local_only"] is True


def test_a_session_that_cannot_be_read_at_all_counts_as_local_only(monkeypatch: pytest.MonkeyPatch):
    # GIVEN the session can be read neither by the source nor directly (the store is down for it)
    chain = Chain()
    _failing_session_source(chain)
    import shared_lib.layers.context as context_layer

    def down(*_a: Any, **_k: Any) -> Any:
        raise ConnectionError("store unavailable")

    monkeypatch.setattr(context_layer, "load_session", down)
    # WHEN a question arrives
    _, record, calls = chain.say(QUESTION)
    # THEN nothing reaches the cloud: a /local that cannot be read is assumed
    assert calls == 0 and record["route"]["local_only"] is True
