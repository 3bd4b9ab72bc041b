"""The approval job store (seed 002 §6, §7.3): masked at rest, created once, decided once,
expired by its deadline, listed per room and person, and recorded as approval.* events."""

from __future__ import annotations

import re
from datetime import timedelta

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.features.approvals import store as jobs
from tests.unit.brain.brain_fakes import turn as make_turn
from tests.unit.policy.policy_fakes import NOW

ORG = "acme"


def job(job_id: str = "J-AAAAAA", **fields: object) -> dict[str, object]:
    return {
        "job_id": job_id,
        "org_id": ORG,
        "room_id": "r1",
        "user_id": "u1",
        "status": "pending",
        "summary": "タスクの作成（担当者: 田中太郎、電話 090-1234-5678）",
        "requested_at": NOW,
        "decide_by": NOW + timedelta(minutes=10),
        **fields,
    }


def test_a_job_id_reads_like_the_one_users_type():
    assert re.fullmatch(r"J-[0-9A-Z]{6}", jobs.new_job_id())


def test_a_job_is_stored_masked_and_created_once():
    store = MemoryStore()
    first = jobs.create(store, job())
    again = jobs.create(store, job(summary="別の内容"))
    stored = store.get(jobs.job_path(ORG, "J-AAAAAA"))
    assert stored is not None and "090-1234-5678" not in str(stored)
    assert again == first == stored  # a redelivered turn gets the job as first written


def test_a_job_is_decided_once_and_an_answer_after_the_deadline_decides_nothing():
    store = MemoryStore()
    jobs.create(store, job())
    jobs.create(store, job("J-BBBBBB"))
    granted = jobs.decide(store, ORG, "J-AAAAAA", "granted", NOW + timedelta(minutes=1), approver="u1")
    assert granted is not None and granted["status"] == "granted" and granted["approver"] == "u1"
    assert jobs.decide(store, ORG, "J-AAAAAA", "denied", NOW + timedelta(minutes=2), approver="u1") is None
    late = NOW + timedelta(minutes=11)
    assert jobs.decide(store, ORG, "J-BBBBBB", "granted", late, approver="u1") is None
    expired = jobs.get(store, ORG, "J-BBBBBB", late)
    assert expired is not None and expired["status"] == "expired" and expired.get("approver") is None


def test_a_pending_job_past_its_deadline_reads_expired_and_leaves_the_pending_list():
    store = MemoryStore()
    jobs.create(store, job())
    jobs.create(store, job("J-BBBBBB", room_id="r2", requested_at=NOW + timedelta(minutes=1)))
    jobs.create(store, job("J-CCCCCC", decide_by=NOW + timedelta(minutes=30)))
    assert [j["job_id"] for j in jobs.pending(store, ORG, NOW)] == ["J-AAAAAA", "J-CCCCCC", "J-BBBBBB"]
    assert [j["job_id"] for j in jobs.pending(store, ORG, NOW, room_id="r1")] == ["J-AAAAAA", "J-CCCCCC"]
    later = NOW + timedelta(minutes=15)
    assert [j["job_id"] for j in jobs.pending(store, ORG, later)] == ["J-CCCCCC"]
    read = jobs.get(store, ORG, "J-AAAAAA", later)
    assert read is not None and read["status"] == "expired"


def test_each_status_is_recorded_as_its_event_with_the_seed_fields():
    turn = make_turn("承認 J-AAAAAA")
    for status in ("pending", "granted", "denied", "auto_approved", "expired"):
        jobs.record_event(turn, job(status=status, decided_at=NOW, approver="u9"))
    events = turn.loop.events
    assert [e["event"] for e in events] == [
        "approval.requested",
        "approval.granted",
        "approval.denied",
        "approval.auto_approved",
        "approval.expired",
    ]
    for e in events:  # seed 002 §7.3
        assert {
            "job_id",
            "approval_status",
            "approval_requested_at",
            "approval_decided_at",
            "approver",
            "coder_output",
        } <= set(e)
        assert e["job_id"] == "J-AAAAAA" and e["approval_requested_at"] == NOW.isoformat()
