"""The agent state at rest (``shared_lib.features.agent_state.store``): what the charter decided on each
step becomes the code's transition, a turn is applied once in one transaction (a redelivery
changes nothing), a multi-step turn takes at most one transition, the document is masked, kept
for the organisation's retention and named by its user — on the memory and the SQLite store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.adapters.sqlite_store import SQLiteStore
from shared_lib.collections import of_path
from shared_lib.features.agent_state.store import (
    agent_state_path,
    code_transition,
    load_agent_state,
    record_turn,
)
from shared_lib.ports import Store
from shared_lib.turn.agent_record import Status, Step
from shared_lib.turn.decisions import AuthDecision, Verdict
from shared_lib.turn.envelope import StepRecord, ToolResult, Turn
from shared_lib.turn.inbound import InboundMessage
from shared_lib.turn.proposal import Proposal
from tests.unit.core.table_steps import StoreRuntime, only

NOW = datetime(2026, 11, 22, 3, 0, tzinfo=UTC)
RETENTION = timedelta(days=90)
REASONING = {
    "intent_understanding": "依頼内容を読み取って実行する",
    "tool_selection_reason": "タスク作成の依頼だから",
}


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    return MemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "charter.db")


def make_turn(text: str = "田中さんにタスクをお願い", turn_id: str = "t-1") -> Turn:
    msg = InboundMessage(
        channel="http",
        org_id="acme",
        room_id="r1",
        user_id="u1",
        text=text,
        message_id=f"m-{turn_id}",
        event_id=f"e-{turn_id}",
        received_at=NOW,
    )
    turn = Turn.from_inbound(msg)
    turn.turn_id = turn_id
    return turn


def tool_call(update: dict[str, Any] | None = None) -> Proposal:
    return Proposal.model_validate(
        {
            "output_type": "tool_call",
            "reasoning": REASONING,
            "confidence": {"overall": 0.9},
            "tool_calls": [{"tool_name": "chatwork_task_create", "parameters": {"body": "見積書"}}],
            **({"state_update": update} if update else {}),
        }
    )


def text_reply(update: dict[str, Any] | None = None, *, clarify: bool = False) -> Proposal:
    if clarify:
        body = {
            "output_type": "clarification_needed",
            "reasoning": {
                "ambiguity_detected": "佐藤さんが二人いる",
                "possible_interpretations": ["一郎", "花子"],
            },
            "clarification_question": "どちらの佐藤さんウル？",
        }
    else:
        body = {
            "output_type": "text_response",
            "reasoning": {"intent_understanding": "雑談に応える", "no_tool_reason": "業務操作ではないため"},
            "text_response": "そうだねウル🐺",
        }
    return Proposal.model_validate(
        {**body, "confidence": {"overall": 0.9}, **({"state_update": update} if update else {})}
    )


ALLOWED = AuthDecision.allowed(user_level=3, required_level=2)
CONFIRM = Verdict.confirm("danger.high", priority=3, message="危険な操作")


def ran(ok: bool = True) -> list[ToolResult]:
    return [
        ToolResult(
            tool_name="chatwork_task_create", call_index=0, ok=ok, error_code=None if ok else "api_error"
        )
    ]


def step(
    proposal: Proposal | None, *, verdict: Verdict | None = None, auth: AuthDecision | None = None,
    results: list[ToolResult] | None = None, arm: str = "llm", turn_id: str = "t-1", n: int = 1,
) -> StepRecord:  # fmt: skip
    return StepRecord(
        step=n,
        turn_id=turn_id,
        arm=arm,
        proposal=proposal,
        guardian=verdict,
        authorization=auth,
        results=results or [],
    )


def finish(
    turn: Turn, last: StepRecord, kind: str = "reply", earlier: list[StepRecord] | None = None
) -> Turn:
    """The turn as the responder sees it at its end: earlier steps in the loop, the last in the sections."""
    turn.loop.steps = list(earlier or [])
    turn.proposal.arm, turn.proposal.proposal = last.arm, last.proposal  # type: ignore[assignment]
    turn.guardian, turn.authorization = last.guardian, last.authorization
    turn.execution.results = list(last.results)
    turn.response.kind = kind  # type: ignore[assignment]
    return turn


def seed(store: Store, step_now: Step, **fields: Any) -> None:
    store.set(agent_state_path("acme", "acme/r1/u1"), {"step": step_now.value, **fields})


# -- the code's transition of one step ---------------------------------------------------------


@pytest.mark.parametrize(
    ("made", "kw", "expected"),
    [
        (lambda: step(tool_call(), verdict=CONFIRM, auth=ALLOWED), {"reply_kind": "confirm"},
         (Step.AWAITING_APPROVAL, Status.REQUIRES_USER_INPUT, True)),
        (lambda: step(tool_call(), verdict=Verdict.allow(), auth=ALLOWED, results=ran(), arm="state"),
         {"approval": {"approval_id": "ap-1", "approved": True}}, (Step.EXECUTION, Status.SUCCESS, False)),
        (lambda: step(tool_call(), verdict=Verdict.allow(), auth=ALLOWED, results=ran(False), arm="state"),
         {"approval": {"approval_id": "ap-1", "approved": True}}, (Step.EXECUTION, Status.ERROR, False)),
        (lambda: step(text_reply(), arm="state"), {"approval": {"approval_id": "ap-1", "approved": False}},
         (Step.PLANNING, Status.IN_PROGRESS, False)),
        (lambda: step(text_reply(), arm="state"), {"approval": {"expired_approval_id": "ap-1"}},
         (Step.PLANNING, Status.IN_PROGRESS, False)),
        (lambda: step(text_reply()), {"approval": {}, "pending_before": True},
         (Step.PLANNING, Status.IN_PROGRESS, False)),
        (lambda: step(text_reply(), arm="state"), {"approval": {"approval_id": "ap-1", "reminder": True}},
         (None, Status.REQUIRES_USER_INPUT, None)),
        (lambda: step(tool_call(), verdict=Verdict.allow(), auth=ALLOWED, results=ran()), {},
         (Step.EXECUTION, Status.SUCCESS, None)),
        (lambda: step(tool_call(), verdict=Verdict.allow(), auth=ALLOWED, results=ran(False)), {},
         (Step.PLANNING, Status.ERROR, None)),
        (lambda: step(tool_call(), verdict=Verdict.block("danger.forbidden", priority=1, message="禁止")), {},
         (None, Status.ERROR, None)),
        (lambda: step(tool_call(), verdict=Verdict.allow(), auth=AuthDecision.denied("level.too_low")), {},
         (None, Status.ERROR, None)),
        (lambda: step(text_reply(clarify=True)), {}, (None, Status.REQUIRES_USER_INPUT, None)),
        (lambda: step(text_reply()), {}, (None, None, None)),
    ],
    ids=[
        "confirm-asked", "approved-executed", "approved-failed", "denied", "expired", "urgent-cancel",
        "reminder", "executed", "failed", "blocked", "gate-denied", "clarification", "text",
    ],
)  # fmt: skip
def test_each_decision_of_the_charter_is_its_code_transition(made, kw, expected):
    c = code_transition(made(), **kw)
    assert (c.to, c.status, c.pending_gate) == expected


# -- a turn applied, once ----------------------------------------------------------------------


def test_a_turn_is_applied_in_one_write_masked_kept_for_the_retention_and_named_by_its_user(store):
    # GIVEN a turn whose tool ran, and whose proposal carried a goal with a phone number in it
    update = {
        "goal": "090-1234-5678 に折り返す",
        "plan_brief": ["電話する"],
        "step": "EXECUTION",
        "decision": "引き受ける",
    }
    turn = finish(make_turn(), step(tool_call(update), verdict=Verdict.allow(), auth=ALLOWED, results=ran()))
    # WHEN the responder records it
    section = record_turn(store, turn, now=NOW, retention=RETENTION)
    # THEN the step moved once, by the code (the LLM agreed), and the state was written
    assert section.applied and [(t.from_step, t.to_step, t.by) for t in section.transition] == [
        (Step.PLANNING, Step.EXECUTION, "code")
    ]
    assert section.refused == [] and section.state["status"] == "SUCCESS"
    doc = store.get(agent_state_path("acme", "acme/r1/u1"))
    assert doc is not None and "090-1234-5678" not in str(doc) and doc["goal"].startswith("[PHONE]")
    assert doc["user_id"] == "u1" and doc["expires_at"] == NOW + RETENTION
    assert doc["decision_log"] == ["引き受ける"] and doc["applied_utterances"] == ["t-1"]
    entry = of_path(agent_state_path("acme", "acme/r1/u1"))
    assert entry is not None and entry.retention == "org" and entry.ttl_field == "expires_at"
    # AND the next turn's context reads it
    assert load_agent_state(store, "acme", "acme/r1/u1")["step"] == "EXECUTION"


def test_a_redelivered_turn_applies_nothing_twice_and_reads_back_its_outcome(store):
    turn = finish(
        make_turn(),
        step(tool_call({"decision": "引き受ける"}), verdict=Verdict.allow(), auth=ALLOWED, results=ran()),
    )
    first = record_turn(store, turn, now=NOW, retention=RETENTION)
    before = store.get(agent_state_path("acme", "acme/r1/u1"))
    # WHEN the same turn is recorded again (a redelivery of the responder)
    again = record_turn(store, turn, now=NOW + timedelta(seconds=30), retention=RETENTION)
    # THEN the document is as it was: no second decision, no second transition
    assert store.get(agent_state_path("acme", "acme/r1/u1")) == before
    assert not again.applied and again.transition == first.transition and again.state == first.state


def test_a_multi_step_turn_takes_at_most_one_transition_and_records_the_refused_one(store):
    seed(store, Step.PLANNING)
    turn = make_turn("自分のタスクを確認して、資料のタスクは完了にして")
    # GIVEN step 1 ran a search (the code moves PLANNING -> EXECUTION) and step 2, a text, proposes REVIEW
    first = step(tool_call({"step": "EXECUTION"}), verdict=Verdict.allow(), auth=ALLOWED, results=ran())
    last = step(text_reply({"step": "REVIEW"}), n=2)
    section = record_turn(store, finish(turn, last, earlier=[first]), now=NOW, retention=RETENTION)
    # THEN one transition was taken, the second refused and recorded, the step stays EXECUTION
    assert [(t.to_step, t.by) for t in section.transition] == [(Step.EXECUTION, "code")]
    assert [(t.to_step, t.by, t.reason) for t in section.refused] == [
        (Step.REVIEW, "llm", "second_transition")
    ]
    assert section.state["step"] == "EXECUTION"


def test_a_resumed_loops_earlier_steps_belong_to_the_paused_utterance(store):
    seed(store, Step.AWAITING_APPROVAL, pending_gate=True)
    turn = make_turn("はい", turn_id="t-2")
    # GIVEN the paused turn's search step (applied then) and this turn's approved action
    paused = step(
        tool_call({"step": "REVIEW"}), verdict=Verdict.allow(), auth=ALLOWED, results=ran(), turn_id="t-1"
    )
    action = step(
        tool_call({"step": "REVIEW"}),
        verdict=Verdict.allow(),
        auth=ALLOWED,
        results=ran(),
        arm="state",
        turn_id="t-2",
        n=2,
    )
    turn.context.pending_action = {"approval_id": "ap-1"}
    finish(turn, action, earlier=[paused])
    turn.proposal.approval = {"approval_id": "ap-1", "approved": True}
    section = record_turn(store, turn, now=NOW, retention=RETENTION)
    # THEN only the approval moved the step; the stored action's old proposal updates nothing
    assert [(t.from_step, t.to_step, t.reason) for t in section.transition] == [
        (Step.AWAITING_APPROVAL, Step.EXECUTION, "approval.granted")
    ]
    assert section.refused == [] and section.state["pending_gate"] is False


def test_a_turn_that_proposed_and_decided_nothing_writes_nothing(store):
    turn = finish(make_turn("今日は暑いね"), step(text_reply()))
    turn.context.agent_state = {"step": "REVIEW", "goal": "前の目的"}
    section = record_turn(store, turn, now=NOW, retention=RETENTION)
    assert not section.applied and section.state == {"step": "REVIEW", "goal": "前の目的"}
    assert store.get(agent_state_path("acme", "acme/r1/u1")) is None


@pytest.mark.parametrize("shadow", [True, False])
def test_a_shadow_turn_never_writes(store, shadow):
    # GIVEN a finished turn that moved the state; WHEN the table's agent-state step runs on it
    turn = finish(
        make_turn(),
        step(tool_call({"step": "EXECUTION"}), verdict=Verdict.allow(), auth=ALLOWED, results=ran()),
    )
    turn.shadow = shadow
    only("responder", "agent_state.record").run(turn, StoreRuntime(store, NOW))
    # THEN the served turn's is applied, a shadow candidate's dry run writes nothing
    written = store.get(agent_state_path("acme", "acme/r1/u1"))
    assert (written is None) is shadow and turn.agent.applied is not shadow
