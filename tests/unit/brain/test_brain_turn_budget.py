"""The turn's budget (CHARTER_TURN_BUDGET_SECONDS): the ingress admits the turn with a processing
budget that counts work, never the time the turn waited (issue 33); it bounds every LLM call; a
turn whose processing outruns it gets the persona's degraded reply, a turn that waited long is
answered with a note that it is late, one whose budget was gone before the brain started is told
it was not done. The chain runs in process with a scripted LLM and a clock the test moves."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from brain_fakes import FakeLLM, decision, inbound, runtime, text, tool_call

from shared_lib.errors import LLMError
from shared_lib.layers.ingress import accept
from shared_lib.persona.catalogue import load_persona
from shared_lib.ports import LLMRequest, LLMResponse
from shared_lib.rollout.causes import record_signals
from shared_lib.runtime import Runtime
from shared_lib.turn import budgets
from shared_lib.turn.envelope import Turn
from shared_lib.wiring.composition import wire_inprocess

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


def test_ingress_admits_the_turn_with_its_processing_budget_and_every_layer_counts_its_work():
    # GIVEN a budget of 30 s
    rt, clock = chain(FakeLLM(default=decision(text())), CHARTER_TURN_BUDGET_SECONDS="30")
    # WHEN a message is accepted
    accept(rt, inbound("今日は暑いね"))
    # THEN the published turn carries when it was admitted and its 30 s of work, no wall-clock deadline
    (received,) = published_turns(rt, "received")
    assert (received.budget.admitted_at, received.budget.seconds) == (clock.now, 30)
    assert received.budget.backlog_seconds == 120 and received.deadline is None
    # AND every layer passes the admission on unchanged
    assert {t.budget.admitted_at for t in published_turns(rt, "executed")} == {clock.now}


def test_a_turn_whose_absolute_deadline_passed_before_the_brain_started_is_told_it_was_not_done():
    # GIVEN a turn whose absolute deadline (a job's, or one an older ingress stamped) passed while it waited
    llm = FakeLLM()  # any call would fail the test
    rt, clock = chain(llm)
    turn = Turn.from_inbound(inbound("今日は暑いね"), deadline=clock.now - timedelta(seconds=1))
    data, attrs = turn.to_message("ingress")
    # WHEN it goes through every layer
    rt.bus.publish("received", data, attrs, turn.conversation_key)
    # THEN the user reads that it was not done and may send it again (not a bare 「もう一度言って」),
    # no LLM call was made, and the error is the backlog's (the rollback guard leaves it out)
    assert replies(rt) == [PERSONA.message("turn_backlog")]
    assert "もう一度送って" in PERSONA.message("turn_backlog") and "混み合って" in PERSONA.message(
        "turn_backlog"
    )
    assert llm.requests == []
    (done,) = published_turns(rt, "completed")
    assert [e.code for e in done.errors] == ["turn_backlog"]


def admitted(rt: Runtime, clock: Clock, text: str, *, ago: timedelta) -> None:
    """A turn the ingress admitted ``ago`` (it sat in a backlog since), delivered now."""
    turn = Turn.from_inbound(inbound(text))
    turn.budget = budgets.admit(
        clock.now - ago, seconds=rt.settings.turn_budget_seconds, backlog_seconds=rt.settings.backlog_seconds
    )
    data, attrs = turn.to_message("ingress")
    rt.bus.publish("received", data, attrs, turn.conversation_key)


def test_a_turn_admitted_ten_minutes_ago_and_processed_quickly_is_answered_with_the_backlog_note():
    # GIVEN a turn that waited ten minutes in a backlog (far beyond the 45 s budget and the 120 s backlog)
    llm = FakeLLM(default=decision(text("暑いウル！水分をとってほしいウル🐺")))
    rt, clock = chain(llm)
    # WHEN it is delivered now and its processing is quick
    admitted(rt, clock, "今日ほんま暑いなあ…😵", ago=timedelta(minutes=10))
    # THEN it is answered: the note that it came late, then the real answer; no timeout
    assert replies(rt) == [f"{PERSONA.message('backlog_late')}\n暑いウル！水分をとってほしいウル🐺"]
    (done,) = published_turns(rt, "completed")
    assert done.errors == [] and done.budget.backlogged
    assert done.budget.queued_ms >= 10 * 60 * 1000 and done.budget.spent_ms < 45_000
    # AND the record says how long it waited, for the operators' alert (never the rollback guard)
    record = rt.store.get(f"orgs/acme/observability/{done.turn_id}")
    assert record["backlogged"] is True and record["queued_ms"] >= 600_000
    assert any(a.get("code") == "turn_backlog" for _, a in rt.store.query("alerts"))


def test_a_turn_that_waited_less_than_the_backlog_bound_is_answered_without_a_note():
    # GIVEN a turn that waited 60 s (more than the 45 s budget, less than the 120 s backlog)
    llm = FakeLLM(default=decision(text("了解ウル🐺")))
    rt, clock = chain(llm)
    # WHEN it is delivered now
    admitted(rt, clock, "明日の会議って何時からやったっけ", ago=timedelta(seconds=60))
    # THEN it is answered as any other turn: the waiting spent none of its budget
    assert replies(rt) == ["了解ウル🐺"]
    (done,) = published_turns(rt, "completed")
    assert done.errors == [] and not done.budget.backlogged


def test_a_turn_whose_proposal_really_outruns_the_budget_still_times_out_with_the_seeds_message():
    # GIVEN a proposal call that works 50 s and is then cut (what the adapter does at the budget)
    rt: Runtime
    clock: Clock

    def stalled(request: LLMRequest) -> LLMResponse:
        if request.call_type == "proposal":
            clock.now += timedelta(seconds=50)
            raise LLMError("api_timeout", "Request timed out.")
        return decision(text())

    rt, clock = chain(FakeLLM(stalled))
    # WHEN a fresh turn (no backlog) goes through the chain
    accept(rt, inbound("佐藤さんに来週の出張の件リマインドしといて"))
    # THEN it times out as before: the seed's message, an LLM error the guard counts as the brain's
    assert replies(rt) == [PERSONA.message("api_timeout")]
    (done,) = published_turns(rt, "completed")
    assert [e.code for e in done.errors] == ["api_timeout"]
    record = rt.store.get(f"orgs/acme/observability/{done.turn_id}")
    assert record_signals(record)["llm_errors"] == 1


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
