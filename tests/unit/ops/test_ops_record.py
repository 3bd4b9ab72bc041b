"""The observability record: every §9.1.1 field, written once per turn, masked, streamed."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from ops_fakes import ORG, TASK_DONE, make_runtime, send

from shared_lib.demo_data import MULTI_STEP_TEXT
from shared_lib.layers import observer
from shared_lib.observability.records import ObservabilityRecord, build_record
from shared_lib.ops import queries
from shared_lib.turn.envelope import Turn

# seed 000 §9.1.1: the NOT NULL columns must be filled for every turn
SEED_REQUIRED = (
    "record_id",
    "timestamp",
    "user_id",
    "organization_id",
    "room_id",
    "input_message",
    "llm_model",
    "llm_reasoning",
    "guardian_action",
    "auth_result",
    "final_response",
)
SEED_COLUMNS = (
    *SEED_REQUIRED,
    "context_summary",
    "llm_confidence",
    "selected_tools",
    "guardian_reason",
    "auth_reason",
    "execution_success",
    "execution_result",
    "execution_error",
    "total_duration_ms",
    "llm_duration_ms",
    "tool_duration_ms",
    "self_critique_executed",
    "self_critique_result",
)
RUNTIME_FACTS = (
    "arm",
    "flags_arm",
    "flags_version",
    "step_count",
    "timings",
    "usage",
    "cache_hit_ratio",
    "cost_usd",
    "trail",
    "trace_id",
)


def records(rt) -> list[ObservabilityRecord]:
    return [ObservabilityRecord.from_doc(d) for _, d in rt.store.query(f"orgs/{ORG}/observability")]


def completed_messages(rt) -> list[tuple[str, bytes, dict[str, str], str]]:
    return [p for p in rt.bus.published if p[0] == "completed"]


def test_every_demo_turn_has_one_record_with_every_seed_field_filled(rt, demo_turns):
    # GIVEN the demo conversation went through the chain
    # WHEN the records are read back
    by_id = {r.record_id: r for r in records(rt)}
    # THEN there is one record per turn, each with the seed's columns and the runtime facts
    assert sorted(by_id) == sorted(demo_turns)
    for rec in by_id.values():
        doc = rec.model_dump()
        assert set(SEED_COLUMNS + RUNTIME_FACTS) <= set(doc)
        for name in SEED_REQUIRED:
            assert doc[name] not in (None, ""), (rec.record_id, name)
        assert rec.guardian_action in ("allow", "confirm", "block", "modify")
        assert rec.auth_result in ("allowed", "denied", "not_applicable")
        assert rec.flags_version and rec.trace_id
        # one step each, but the demo's look-then-act turn (seed 002 §3), which has a row per step
        assert rec.step_count == len(rec.steps) == (2 if rec.input_message == MULTI_STEP_TEXT else 1)
        assert rec.timings and {"context", "brain", "guardian", "authorizer", "executor", "responder"} <= set(
            rec.timings
        )


def test_the_llm_arm_record_carries_tokens_cache_hits_and_cost(rt, demo_turns):
    # GIVEN the first demo turn was a task request the scripted model proposed
    rec = queries.find_record(rt.store, demo_turns[0], org=ORG)
    # THEN its record has the model's reasoning, the tool, the verdicts and the usage
    assert rec is not None and rec.arm == "llm" and rec.output_type == "tool_call"
    assert rec.selected_tools[0].tool_name == "chatwork_task_create"
    assert len(rec.llm_reasoning) >= 20 and 0 < rec.llm_confidence <= 1
    assert rec.usage.llm_calls >= 1 and rec.usage.input_tokens > 0 and rec.usage.cache_read_input_tokens > 0
    assert rec.cost_usd > 0 and 0 < rec.cache_hit_ratio < 1
    assert rec.proposal is not None and rec.proposal["output_type"] == "tool_call"


@pytest.mark.parametrize("times", [1, 3])
def test_redelivered_completed_events_leave_one_record_per_turn(rt, demo_turns, times):
    # GIVEN every turn's final envelope was delivered once
    first = {r.record_id: r.recorded_at for r in records(rt)}
    # WHEN each is delivered again, several times
    for _ in range(times):
        for topic, data, attrs, key in completed_messages(rt):
            rt.bus.publish(topic, data, attrs, key)
    # THEN there is still exactly one record per turn, unchanged
    again = records(rt)
    assert len(again) == len(demo_turns)
    assert {r.record_id: r.recorded_at for r in again} == first


def test_a_later_step_supersedes_the_earlier_record_of_the_same_turn(rt):
    # GIVEN a recorded turn
    turn_id = send(rt, TASK_DONE)
    _, data, attrs, _ = completed_messages(rt)[-1]
    turn = Turn.from_message(data, attrs, rt.store)
    # WHEN its step 1 completes, then step 0 is redelivered
    later = turn.model_copy(update={"step": 1})
    assert observer.handle(rt, *later.to_message("responder", rt.store)) == "recorded"
    assert observer.handle(rt, data, attrs) == "duplicate"
    # THEN the one record is the later step's
    rec = queries.find_record(rt.store, turn_id, org=ORG)
    assert rec is not None and rec.step == 1 and rec.step_count == 2
    assert len(records(rt)) == 1


def test_secrets_and_personal_data_are_masked_in_the_record(rt):
    # GIVEN a message carrying an e-mail address and a phone number
    turn_id = send(rt, "覚えておいて：私のメールは taro@example.com 電話は 090-1234-5678")
    rec = queries.find_record(rt.store, turn_id, org=ORG)
    assert rec is not None
    # THEN none of it is in the stored record
    stored = json.dumps(rt.store.get(f"orgs/{ORG}/observability/{turn_id}"), ensure_ascii=False, default=str)
    assert "taro@example.com" not in stored and "090-1234-5678" not in stored
    assert "[EMAIL_1]" in rec.input_message


def test_the_record_is_streamed_to_the_events_topic_for_bigquery(rt):
    # GIVEN a turn
    turn_id = send(rt, TASK_DONE)
    # WHEN the events topic is read
    streamed = [
        json.loads(d)
        for t, d, a, _ in rt.bus.published
        if t == "events" and a.get("event_kind") == "turn_record"
    ]
    # THEN the record went out once, in the table's shape, and the observer did not store it as an event
    rows = [ObservabilityRecord.model_validate(row) for row in streamed if row["turn_id"] == turn_id]
    assert len(rows) == 1 and rows[0].kind == "turn_record" and rows[0].event_id.endswith(f"{turn_id}-0")
    stored = rt.store.query(f"orgs/{ORG}/events", where=[("turn_id", "==", turn_id)])
    assert [doc for _, doc in stored if doc.get("kind") == "turn_record"] == []


def test_a_shadow_candidate_is_recorded_beside_the_served_turn(rt):
    # GIVEN a served turn and its dry-run candidate
    turn_id = send(rt, TASK_DONE)
    _, data, attrs, _ = completed_messages(rt)[-1]
    candidate = Turn.from_message(data, attrs, rt.store).model_copy(update={"shadow": True})
    # WHEN the candidate arrives twice
    results = [observer.handle(rt, *candidate.to_message("brain_shadow", rt.store)) for _ in range(2)]
    # THEN it is stored once as a candidate, and the served record is untouched
    assert results == ["shadow", "duplicate"]
    cand = queries.find_record(rt.store, turn_id, org=ORG, shadow=True)
    served = queries.find_record(rt.store, turn_id, org=ORG)
    assert cand is not None and cand.shadow and cand.kind == "shadow_candidate"
    assert served is not None and not served.shadow


def test_build_record_of_a_turn_without_proposal_still_fills_the_seed_columns(rt):
    # GIVEN a turn whose brain produced nothing (e.g. it failed before proposing)
    turn_id = send(rt, TASK_DONE)
    _, data, attrs, _ = completed_messages(rt)[-1]
    turn = Turn.from_message(data, attrs, rt.store)
    turn.proposal.proposal = None
    turn.guardian = None
    # WHEN it is recorded
    rec = build_record(turn, recorded_at=rt.clock())
    # THEN the checks say they were skipped rather than leaving holes
    assert (
        rec.record_id == turn_id and rec.guardian_action == "none" and rec.auth_result in ("none", "allowed")
    )
    assert rec.llm_reasoning == "" and rec.output_type is None and rec.proposal is None


def test_a_failing_rollout_hook_never_costs_the_record(rt, monkeypatch):
    # GIVEN the shadow comparison hook is broken
    from shared_lib.rollout import comparison

    def broken(rt, turn):  # type: ignore[no-untyped-def]
        raise RuntimeError("comparison store down")

    monkeypatch.setattr(comparison, "on_served_turn", broken)
    # WHEN a turn completes THEN it is recorded all the same
    turn_id = send(rt, TASK_DONE)
    assert queries.find_record(rt.store, turn_id, org=ORG) is not None


def test_records_expire_by_the_organisations_retention(clock):
    # GIVEN an organisation that keeps personal data 30 days
    rt = make_runtime(clock=clock, env={"CHARTER_ORG_RETENTION_DAYS": json.dumps({ORG: 30})})
    # WHEN a turn is recorded
    turn_id = send(rt, TASK_DONE)
    # THEN its record and its history expire 30 days from now
    assert rt.store.get(f"orgs/{ORG}/observability/{turn_id}")["expires_at"] == clock() + timedelta(days=30)
    history = [d for p, d in rt.store.dump().items() if "/messages/" in p]
    assert history and {d["expires_at"] for d in history} == {clock() + timedelta(days=30)}


def test_an_event_is_stored_masked(rt):
    # GIVEN an event whose message quotes personal data (an alert about a failed call, say)
    payload = {
        "event_id": "ev-1",
        "kind": "alert",
        "code": "send_error",
        "org_id": ORG,
        "turn_id": "T-09012345678",
        "message": "send to taro@example.com failed",
    }
    # WHEN the observer records it
    observer.record_event(rt, payload)
    # THEN the stored event and alert keep the masked text and the ids as they were
    for path in (f"orgs/{ORG}/events/ev-1", "alerts/ev-1"):
        stored = rt.store.get(path)
        assert stored["message"] == "send to [EMAIL] failed" and stored["turn_id"] == "T-09012345678"
