"""Seed 004's agent state in the observability record and in ``charter turns show``: the state
after the turn (masked), the transition taken and the refused ones."""

from __future__ import annotations

from datetime import UTC, datetime

from shared_lib.observability.records import ObservabilityRecord, build_record
from shared_lib.ops import render
from shared_lib.ops.schema import bigquery_schema
from shared_lib.turn.agent_record import AgentSection, Step, Transition
from shared_lib.turn.envelope import Turn
from shared_lib.turn.inbound import InboundMessage

NOW = datetime(2026, 11, 22, 3, 0, tzinfo=UTC)


def recorded_turn() -> Turn:
    msg = InboundMessage(
        channel="http", org_id="acme", room_id="r1", user_id="u1", text="タスクをお願い",
        message_id="m1", event_id="e1", received_at=NOW,
    )  # fmt: skip
    turn = Turn.from_inbound(msg)
    turn.agent = AgentSection(
        state={
            "goal": "090-1234-5678 に折り返す",
            "why_now": "今頼まれたため",
            "constraints": [],
            "plan_brief": ["電話する", "報告する"],
            "open_questions": [],
            "step": "EXECUTION",
            "status": "SUCCESS",
            "decision_log": ["引き受ける"],
            "last_delta": "ステップをPLANNINGからEXECUTIONに変更（code）",
            "pending_gate": False,
        },
        transition=[
            Transition(from_step=Step.PLANNING, to_step=Step.EXECUTION, by="code", reason="tool.executed")
        ],
        refused=[Transition(from_step=Step.PLANNING, to_step=Step.DONE, by="llm", reason="not_in_table")],
        applied=True,
    )
    return turn


def test_the_record_keeps_the_agent_state_masked_with_its_transition_and_refusals():
    rec = build_record(recorded_turn(), recorded_at=NOW)
    a = rec.agent
    assert (a.step, a.status, a.applied) == ("EXECUTION", "SUCCESS", True)
    assert "090-1234-5678" not in a.goal and a.plan_brief == ["電話する", "報告する"]
    assert [(t.from_step, t.to_step, t.by) for t in a.transition] == [("PLANNING", "EXECUTION", "code")]
    assert [t.reason for t in a.refused] == ["not_in_table"]
    # AND it survives the store's round trip, and the BigQuery table has its columns
    assert ObservabilityRecord.from_doc(rec.store_doc()).agent == a
    (column,) = [c for c in bigquery_schema() if c["name"] == "agent"]
    assert {f["name"] for f in column["fields"]} >= {"goal", "step", "status", "transition", "refused"}


def test_turns_show_prints_the_state_the_transition_and_the_refused_one():
    text = render.trail(build_record(recorded_turn(), recorded_at=NOW))
    assert "  agent      EXECUTION / SUCCESS" in text
    assert "  plan       電話する" in text
    assert "  transition PLANNING -> EXECUTION by code (tool.executed)" in text
    assert "  refused    PLANNING -> DONE by llm: not_in_table" in text


def test_a_record_without_agent_state_shows_no_agent_lines():
    turn = recorded_turn()
    turn.agent = AgentSection()
    assert "  agent " not in render.trail(build_record(turn, recorded_at=NOW))
