"""Approval jobs on the whole local stack (issue 17, seed 002 §6.2–6.3, §7.3): two requests that
need approval wait as two jobs, a plain 「はい」 asks which, 「承認 J-…」 runs exactly that one,
and the records carry approval.requested twice and approval.granted."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

ORG = "demo"
USER = "u-suzuki"
JOB = re.compile(r"確認ID: (J-[0-9A-Z]{6})")


def post(stack, text: str, room: str) -> dict[str, Any]:
    resp = stack.send("http", text, org=ORG, room=room, user=USER)
    assert resp.status == 200, resp.body
    return stack.record(ORG, str(resp.body["turn_ids"][0]))


def announcements(stack, room: str) -> list[dict[str, Any]]:
    return [d for _, d in stack.store.query(f"orgs/{ORG}/announcements") if d.get("room_id") == room]


def approval_events(records: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [e for r in records for e in r["loop"]["events"] if e["event"] == name]


@pytest.mark.e2e
def test_two_jobs_a_plain_yes_asks_which_and_approve_by_id_runs_exactly_one(local_stack):
    room = f"room-jobs-{uuid.uuid4().hex[:8]}"
    # GIVEN a request that needs approval: job 1
    first = post(local_stack, "全員に明日の全体会議は10時からとアナウンスして", room)
    assert first["response_kind"] == "confirm"
    (job1,) = JOB.findall(first["final_response"])
    # AND another message gets the reminder (seed 000 §5.1.7), once
    reminded = post(local_stack, "今日は暑いね〜", room)
    assert "さっきの確認がまだ終わってない" in reminded["final_response"]
    # AND a second request after the reminder is a new intent: job 2
    second = post(local_stack, "全員に金曜の懇親会は19時からとアナウンスして", room)
    assert second["response_kind"] == "confirm"
    (job2,) = JOB.findall(second["final_response"])
    assert job1 != job2
    # WHEN the person says only はい THEN they are asked which, and nothing is decided
    which = post(local_stack, "はい", room)
    assert job1 in which["final_response"] and job2 in which["final_response"]
    assert announcements(local_stack, room) == []
    # WHEN they approve job 1 by its id (twice: an announcement to everyone asks twice)
    again = post(local_stack, f"承認 {job1}", room)
    assert again["response_kind"] == "confirm" and job1 in again["final_response"]
    done = post(local_stack, f"承認 {job1}", room)
    # THEN exactly that one runs, once; job 2 still waits
    assert done["execution_success"] is True
    (sent,) = announcements(local_stack, room)
    assert "10時" in str(sent.get("message")) or "10時" in done["final_response"]
    records = [first, reminded, second, which, again, done]
    requested = approval_events(records, "approval.requested")
    assert [e["job_id"] for e in requested] == [job1, job2]
    (granted,) = approval_events(records, "approval.granted")
    assert granted["job_id"] == job1 and granted["approver"] == USER
    assert granted["approval_requested_at"] and granted["approval_decided_at"]
    jobs = {d["job_id"]: d for _, d in local_stack.store.query(f"orgs/{ORG}/approval_jobs")}
    assert (jobs[job1]["status"], jobs[job2]["status"]) == ("granted", "pending")
