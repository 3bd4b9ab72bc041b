"""The turn's budget (CHARTER_TURN_BUDGET_SECONDS): stamped at ingress as an absolute deadline,
it bounds every LLM call; a turn whose budget is spent gets the persona's degraded reply, not
silence. The chain runs in process with a scripted LLM and a clock the test moves."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from brain_fakes import FakeLLM, decision, inbound, runtime, text, tool_call

from shared_lib.composition import wire_inprocess
from shared_lib.envelope import Turn
from shared_lib.layers.ingress import accept
from shared_lib.persona import load_persona
from shared_lib.ports import LLMRequest, LLMResponse
from shared_lib.runtime import Runtime

PERSONA = load_persona()
T0 = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def chain(llm: FakeLLM, **env: str) -> tuple[Runtime, Clock]:
    rt = runtime(llm, env=env)
    clock = Clock()
    rt.clock = clock  # type: ignore[misc]
    wire_inprocess(rt)
    return rt, clock


def replies(rt: Runtime) -> list[str]:
    return [r.text for r in rt.channels["http"].sent]  # type: ignore[attr-defined]


def published_turns(rt: Runtime, topic: str) -> list[Turn]:
    return [Turn.from_message(d, a, rt.store) for t, d, a, _ in rt.bus.published if t == topic]  # type: ignore[attr-defined]


def test_ingress_stamps_the_turns_deadline_from_the_budget_setting():
    # GIVEN a budget of 30 s
    rt, clock = chain(FakeLLM(default=decision(text())), CHARTER_TURN_BUDGET_SECONDS="30")
    # WHEN a message is accepted
    accept(rt, inbound("今日は暑いね"))
    # THEN the published turn carries ingress time + 30 s, and every layer passes it on unchanged
    (received,) = published_turns(rt, "received")
    assert received.deadline == clock.now + timedelta(seconds=30)
    assert {t.deadline for t in published_turns(rt, "executed")} == {received.deadline}


def test_a_turn_whose_budget_is_spent_gets_the_personas_degraded_reply_without_an_llm_call():
    # GIVEN a turn that reaches the chain after its deadline (it waited out crashes and redeliveries)
    llm = FakeLLM()  # any call would fail the test
    rt, clock = chain(llm)
    turn = Turn.from_inbound(inbound("今日は暑いね"), deadline=clock.now - timedelta(seconds=1))
    data, attrs = turn.to_message("ingress")
    # WHEN it goes through every layer
    rt.bus.publish("received", data, attrs, turn.conversation_key)
    # THEN the user gets the persona's message for a timed-out answer, and no LLM call was made
    assert replies(rt) == [PERSONA.message("api_timeout")]
    assert llm.requests == []
    (done,) = published_turns(rt, "completed")
    assert [e.code for e in done.errors] == ["api_timeout"]


def test_a_budget_spent_during_the_proposal_skips_the_phrasing_call_and_answers_from_the_template():
    # GIVEN a proposal call that returns a task creation only after the budget is spent
    rt: Runtime
    clock: Clock

    def slow_proposal(request: LLMRequest) -> LLMResponse:
        clock.now += timedelta(seconds=60)  # longer than the default budget (45 s)
        return decision(tool_call())

    llm = FakeLLM(slow_proposal)
    rt, clock = chain(llm)
    # WHEN the turn goes through the chain
    accept(rt, inbound("田中さんに見積書のタスクを明日までにお願い"))
    # THEN the task was created once, no phrasing call was made (only the router's classifier
    # and the proposal), and the fixed template answered
    assert [r.call_type for r in llm.requests] == ["routing", "proposal"]
    assert len(rt.store.query("orgs/acme/tasks")) == 1
    (reply,) = replies(rt)
    assert reply.startswith("田中さんにタスク「見積書を作成」を作成したウル")
