"""``compare`` over two observability records, and the observer hooks in any order."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from shared_lib.rollout.comparison import (
    compare,
    comparison_path,
    normalise_value,
    on_served_turn,
    on_shadow_candidate,
    store_comparison,
)
from shared_lib.turn.envelope import FlagsSection, Turn
from shared_lib.turn.inbound import InboundMessage
from shared_lib.wiring.composition import build_runtime


def record(**changes) -> dict:
    base = {
        "turn_id": "T1",
        "org_id": "acme",
        "timestamp": datetime(2026, 11, 23, tzinfo=UTC),
        "arm": "legacy",
        "output_type": "tool_call",
        "selected_tools": [
            {
                "tool_name": "chatwork_task_create",
                "parameters": {"body": "見積書を作成", "assignee_name": "田中"},
            }
        ],
        "guardian_action": "allow",
        "guardian_reason": "pass",
        "auth_result": "allowed",
        "auth_reason": "pass",
        "response_kind": "reply",
        "final_response": "作成したウル",
        "timings": {"brain": 2.0, "guardian": 1.0, "authorizer": 1.0, "responder": 50},
        "llm_duration_ms": 0.0,
        "usage": {"input_tokens": 0, "output_tokens": 0},
        "cost_usd": 0.0,
        "errors": [],
    }
    return {**base, **changes}


def test_given_identical_decisions_when_compared_then_everything_agrees():
    result = compare(record(), record(arm="llm"))
    assert result["all_agree"] is True and result["mismatches"] == []
    assert result["served_arm"] == "legacy" and result["candidate_arm"] == "llm"


def test_given_parameters_that_differ_only_in_width_space_and_case_when_compared_then_they_agree():
    served = record(
        selected_tools=[{"tool_name": "t", "parameters": {"body": "ＡＢＣ  見積", "limit_date": None}}]
    )
    candidate = record(selected_tools=[{"tool_name": "t", "parameters": {"body": " abc 見積"}}])
    assert compare(served, candidate)["agree"]["parameters"] is True


def test_given_a_different_tool_when_compared_then_tool_and_parameters_disagree():
    candidate = record(selected_tools=[{"tool_name": "chatwork_task_search", "parameters": {}}])
    result = compare(record(), candidate)
    assert result["agree"]["tool"] is False and result["agree"]["parameters"] is False
    assert result["agree"]["intent"] is True
    assert set(result["mismatches"]) == {"tool", "parameters"}


@pytest.mark.parametrize(
    ("served", "candidate", "agree"),
    [
        ("allowed", "denied", False),
        ("denied", "denied", True),
        ("allowed", "not_applicable", None),  # the candidate never reached the gate
        ("none", "allowed", None),
    ],
)
def test_given_authorization_results_when_compared_then_only_two_gate_answers_can_disagree(
    served, candidate, agree
):
    result = compare(record(auth_result=served), record(auth_result=candidate))
    assert result["agree"]["authorization"] is agree


def test_given_latency_tokens_and_cost_when_compared_then_deltas_are_candidate_minus_served():
    candidate = record(
        arm="llm",
        timings={"brain": 900.0, "guardian": 1.0, "authorizer": 1.0, "brain_shadow": 999},
        llm_duration_ms=880.0,
        usage={"input_tokens": 1000, "output_tokens": 200},
        cost_usd=0.0123,
        final_response="作成したウル！よろしくウル",
    )
    delta = compare(record(), candidate)["delta"]
    assert delta == {
        "reply_length": 7,
        "latency_ms": 898.0,
        "llm_ms": 880.0,
        "tokens": 1200,
        "cost_usd": 0.0123,
    }


def test_given_a_candidate_that_failed_when_compared_then_it_carries_no_agreement():
    failed = record(
        arm="llm",
        errors=[
            {
                "code": "execution_error",
                "layer": "brain_shadow",
                "message": "shadow candidate timed out after 45 s",
            }
        ],
    )
    result = compare(record(), failed)
    assert result["candidate_failed"] is True and result["all_agree"] is None
    assert set(result["agree"].values()) == {None}
    assert "timed out" in result["candidate"]["failure"]


def test_given_nested_values_when_normalised_then_keys_sort_and_empties_drop():
    assert normalise_value({"b": [" X ", 1], "a": "", "c": {"d": None, "e": True}}) == {
        "b": ["x", 1.0],
        "c": {"e": True},
    }


# --------------------------------------------------------------------------- hooks


def turns() -> tuple[object, Turn, Turn]:
    rt = build_runtime({"CHARTER_ENV": "test", "CHARTER_LLM": "none", "CHARTER_CHANNELS": "recording"})
    msg = InboundMessage(
        channel="http",
        org_id="acme",
        room_id="r",
        user_id="u1",
        text="こんにちは",
        message_id="m",
        event_id="e",
        received_at=datetime.now(UTC),
    )
    served = Turn.from_inbound(msg)
    served.flags = FlagsSection(arm="legacy", reason="DEFAULT", shadow_candidate_arm="llm", flags_version="v")
    candidate = served.model_copy(deep=True)
    candidate.shadow = True
    return rt, served, candidate


@pytest.mark.parametrize("order", ["served_first", "candidate_first"])
def test_given_both_sides_in_any_order_when_hooks_run_twice_then_one_comparison_is_written(order):
    rt, served, candidate = turns()
    calls = [(on_served_turn, served), (on_shadow_candidate, candidate)]
    if order == "candidate_first":
        calls.reverse()
    # WHEN the first side arrives THEN there is nothing to compare yet
    assert calls[0][0](rt, calls[0][1]) is None
    # WHEN the second side arrives (and both are redelivered) THEN one comparison exists
    first = calls[1][0](rt, calls[1][1])
    for hook, turn in calls:
        hook(rt, turn)
    stored = rt.store.query("orgs/acme/shadow_comparisons")
    assert len(stored) == 1 and stored[0][0] == served.turn_id
    assert first["turn_id"] == served.turn_id
    assert rt.store.get(comparison_path("acme", served.turn_id))["all_agree"] is True


def test_given_a_served_turn_without_sampling_when_recorded_then_no_side_is_stored():
    rt, served, _ = turns()
    served.flags = FlagsSection(arm="legacy", reason="DEFAULT")
    assert on_served_turn(rt, served) is None
    assert rt.store.query("orgs/acme/shadow_sides") == []


def test_given_only_the_observer_records_when_comparing_then_they_are_used():
    # GIVEN the observer's records (no sides stored by the hooks, e.g. a backfill)
    rt, _, _ = turns()
    rt.store.set("orgs/acme/observability/T1", record())
    rt.store.set("orgs/acme/shadow_candidates/T1-0", record(arm="llm", guardian_action="confirm"))
    # WHEN the comparison is stored THEN it is computed from them
    result = store_comparison(rt, "T1", "acme")
    assert result["mismatches"] == ["guardian_action"]
