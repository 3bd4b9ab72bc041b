"""Staging: the fixed rules that make a completed turn a fine-tuning candidate (seed 001 §29.3)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shared_lib.features.finetune.state.config import load_config
from shared_lib.features.finetune.state.staging import candidate_path, held_out, ledger_path, stage
from shared_lib.turn.decisions import AuthDecision, Verdict
from shared_lib.turn.envelope import JobSection
from tests.unit.core.table_steps import StoreRuntime, only
from tests.unit.finetune.ft_fakes import NOW, ORG, RETENTION, completed_turn, opted_in_store, tool_proposal


@pytest.mark.parametrize(
    "kind",
    [
        lambda t: setattr(t, "shadow", True),  # a shadow candidate's dry run: the memory stage skips it
        lambda t: setattr(t, "job", JobSection(job_id="j1", parent_turn_id="t0")),  # a sub-agent's step
    ],
)
def test_a_shadow_or_a_delegated_jobs_turn_is_never_staged(kind):  # type: ignore[no-untyped-def]
    # GIVEN an organisation that opted in, and a turn that would be staged as a person's
    store = opted_in_store()
    served = completed_turn()
    # WHEN the table's staging step runs on it, and on the same turn of the other kind
    only("memory", "finetune.stage").run(served, StoreRuntime(store, NOW))
    other = completed_turn("明日の会議って何時からだっけ？")
    kind(other)
    only("memory", "finetune.stage").run(other, StoreRuntime(store, NOW))
    # THEN the person's turn is staged, the other kind never
    assert store.get(candidate_path(ORG, served.turn_id)) is not None
    assert store.get(candidate_path(ORG, other.turn_id)) is None


def _stage(store, turn, **kw):  # type: ignore[no-untyped-def]
    return stage(store, turn, now=NOW, retention=RETENTION, **kw)


def test_a_plain_reply_of_good_confidence_is_staged_masked_with_its_source():
    # GIVEN an organisation that opted in and a plain reply to a message carrying a phone number
    store = opted_in_store()
    turn = completed_turn("090-1234-5678 に電話してと言われた")
    # WHEN the completed turn is staged
    result = _stage(store, turn)
    # THEN it is a pending good candidate, the number masked, expiring with the retention
    assert result.result == "staged_good"
    doc = store.get(candidate_path(ORG, turn.turn_id))
    assert doc is not None
    assert doc["kind"] == "good" and doc["status"] == "pending"
    assert "090-1234-5678" not in str(doc) and "[PHONE_1]" in doc["input"]["user"]
    assert doc["target"]["proposal"]["output_type"] == "text_response"
    assert doc["source"]["route"] == "CHAT" and doc["source"]["user_id"] == "u1"
    assert doc["expires_at"] == NOW + RETENTION
    assert doc["held_out"] == held_out(turn.turn_id, 10)


def test_a_tool_call_is_good_only_when_every_result_is_ok():
    store = opted_in_store()
    ok = completed_turn("見積書のタスク", proposal=tool_proposal(), results_ok=True, n=1)
    failed = completed_turn("見積書のタスク", proposal=tool_proposal(), results_ok=False, n=2)
    never_ran = completed_turn("見積書のタスク", proposal=tool_proposal(), n=3)
    assert _stage(store, ok).result == "staged_good"
    assert store.get(candidate_path(ORG, ok.turn_id))["source"]["tool"] == "create_task"  # type: ignore[index]
    assert _stage(store, failed).result == "not_good_not_executed_ok"
    assert _stage(store, never_ran).result == "not_good_not_executed_ok"


@pytest.mark.parametrize(
    ("change", "code"),
    [
        (
            lambda t: setattr(t, "guardian", Verdict.block(reason_code="x", priority=1, message="m")),
            "guardian_block",
        ),
        (lambda t: setattr(t, "authorization", AuthDecision.denied(reason_code="x")), "gate_deny"),
        (
            lambda t: setattr(t.proposal, "self_critique", {"status": "ok", "appropriate": False}),
            "critique_not_passed",
        ),
        (
            lambda t: setattr(t.proposal, "self_critique", {"status": "error", "code": "timeout"}),
            "critique_not_passed",
        ),
        (lambda t: setattr(t.response, "kind", "confirm"), "response_confirm"),
        (lambda t: setattr(t.proposal, "arm", "fast_path"), "not_llm_proposal"),
    ],
)
def test_a_turn_failing_a_rule_is_not_staged_and_costs_no_read(change, code):  # type: ignore[no-untyped-def]
    store = opted_in_store()
    turn = completed_turn()
    change(turn)
    assert _stage(store, turn).result == f"not_good_{code}"
    assert store.reads == 0  # decided on the envelope alone: not even the opt-in is read
    assert store.get(candidate_path(ORG, turn.turn_id)) is None


def test_low_confidence_is_not_good():
    store = opted_in_store()
    assert _stage(store, completed_turn(proposal=tool_proposal(confidence=0.79), results_ok=True)).result == (
        "not_good_low_confidence"
    )


@pytest.mark.parametrize(
    ("change", "code"),
    [
        (lambda t: setattr(t, "smoke", True), "smoke"),
        (lambda t: t.context.debounce.update(role="absorbed"), "merged"),
        (lambda t: setattr(t.route, "local_only", True), "local"),
        (lambda t: setattr(t.flags, "arm", "legacy"), "legacy_arm"),
    ],
)
def test_skipped_kinds_are_never_staged(change, code):  # type: ignore[no-untyped-def]
    store = opted_in_store()
    turn = completed_turn()
    change(turn)
    assert _stage(store, turn).result == f"skipped_{code}"
    assert store.get(candidate_path(ORG, turn.turn_id)) is None


def test_staging_is_off_unless_the_organisation_opted_in():
    from shared_lib.adapters.memory_store import MemoryStore

    store = MemoryStore()
    turn = completed_turn()
    assert _stage(store, turn).result == "off"
    assert store.get(candidate_path(ORG, turn.turn_id)) is None


def test_a_redelivered_turn_is_staged_once_and_counted_once():
    store = opted_in_store()
    turn = completed_turn()
    assert _stage(store, turn).result == "staged_good"
    assert _stage(store, turn).result == "duplicate"
    assert store.get(ledger_path(ORG, "u1"))["pending"] == 1  # type: ignore[index]


def test_the_held_out_split_is_deterministic_and_about_ten_percent():
    ids = [f"t-{i}" for i in range(2000)]
    first = [held_out(i, 10) for i in ids]
    assert first == [held_out(i, 10) for i in ids]
    assert 150 <= sum(first) <= 250


def test_a_person_has_at_most_the_daily_cap_of_pending_candidates():
    store = opted_in_store()
    cfg = load_config().model_copy(update={"pending_per_person_per_day": 2})
    results = [_stage(store, completed_turn(f"雑談 {i}", n=i), cfg=cfg).result for i in range(3)]
    assert results == ["staged_good", "staged_good", "cap"]
    # another person, and the next day, have their own count
    assert _stage(store, completed_turn("雑談", user="u2", n=9), cfg=cfg).result == "staged_good"
    later = completed_turn("雑談", at=NOW + timedelta(days=1), n=10)
    assert _stage(store, later, cfg=cfg).result == "staged_good"


def test_the_next_message_correcting_the_assistant_marks_the_earlier_candidate_corrected():
    # GIVEN a staged good turn
    store = opted_in_store()
    first = completed_turn("田中さんにタスクを", proposal=tool_proposal(title="見積書"), results_ok=True, n=1)
    assert _stage(store, first).result == "staged_good"
    # WHEN the person's next message in the conversation corrects it, and its proposal is good
    fix = completed_turn(
        "違う、佐藤さんにお願い。電話は 090-1111-2222",
        proposal=tool_proposal(title="見積書", assignee="佐藤"),
        results_ok=True,
        at=NOW + timedelta(minutes=2),
        n=2,
    )
    result = _stage(store, fix)
    # THEN the earlier candidate is corrected, its target the correcting proposal, the reason masked
    assert result.result == "corrected" and result.candidate_id == first.turn_id
    doc = store.get(candidate_path(ORG, first.turn_id))
    assert doc is not None and doc["kind"] == "corrected" and doc["status"] == "pending"
    assert doc["target"]["proposal"]["tool_calls"][0]["parameters"]["assignee"] == "佐藤"
    assert doc["correction"]["turn_id"] == fix.turn_id and "090-1111-2222" not in doc["correction"]["text"]
    assert store.get(candidate_path(ORG, fix.turn_id)) is None  # the fix is the earlier one's target
    # AND a redelivery of the correction changes nothing
    assert _stage(store, fix).result == "duplicate"


@pytest.mark.parametrize(
    ("room", "after"), [("r2", timedelta(minutes=1)), ("r1", timedelta(hours=2))], ids=["elsewhere", "late"]
)
def test_a_correction_in_another_conversation_or_too_late_corrects_nothing(room, after):  # type: ignore[no-untyped-def]
    store = opted_in_store()
    first = completed_turn("雑談", n=1)
    _stage(store, first)
    cue = completed_turn("違うよ", room=room, at=NOW + after, n=2)
    assert _stage(store, cue).result == "staged_good"  # judged as a turn of its own
    assert store.get(candidate_path(ORG, first.turn_id))["kind"] == "good"  # type: ignore[index]
