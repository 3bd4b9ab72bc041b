"""The heartbeat's due tasks (seed 001 §17) on the in-memory store with a fake clock: a waiting
confirmation is reminded and a goal checked in, once per tick even when the task runs twice,
once per job and once per goal a day across ticks, never in the quiet hours, never for a goal
that is finished, in the persona's Japanese with dates as a person reads them."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.collections import path, session_path
from shared_lib.delivery.idempotency import Claims
from shared_lib.features.approvals import store as jobs
from shared_lib.ops import due_tasks, monitoring
from shared_lib.state import due, session
from shared_lib.wiring.composition import build_runtime

ORG, ROOM, USER = "acme", "room-1", "u-1"
KEY = f"{ORG}/{ROOM}/{USER}"
# 10:05 in Tokyo (the default organisation timezone), a Wednesday
DAY = datetime(2026, 11, 25, 1, 5, tzinfo=UTC)
ENV = {"CHARTER_ENV": "test", "CHARTER_LLM": "none", "CHARTER_CHANNELS": "recording"}
ISO = re.compile(r"\d{4}-\d{2}-\d{2}")


class Clock:
    def __init__(self, at: datetime) -> None:
        self.now = at

    def __call__(self) -> datetime:
        return self.now


def runtime(at: datetime = DAY):
    clock = Clock(at)
    return build_runtime(ENV, store=MemoryStore(), clock=clock), clock


def waiting_job(rt, *, job_id="J-AAAAAA", asked=timedelta(minutes=6), summary="田中さんの権限を管理者に変更"):
    requested = rt.clock() - asked
    jobs.create(
        rt.store,
        {
            "job_id": job_id,
            "org_id": ORG,
            "status": "pending",
            "requested_at": requested,
            "decide_by": requested + timedelta(minutes=10),
            "user_id": USER,
            "room_id": ROOM,
            "channel": "chatwork",
            "conversation_key": KEY,
            "summary": summary,
        },
    )
    session.set_pending(rt.store, ORG, KEY, {"approval_id": job_id, "user_id": USER}, requested)


def goal(rt, goal_id="G1", **fields):
    doc = {
        "org_id": ORG,
        "user_id": USER,
        "room_id": ROOM,
        "channel": "chatwork",
        "title": "月末までに見積書を10件出す",
        "status": "active",
        "progress": 40,
        "deadline": "2026-11-27",
        "reports": [],
        "created_at": rt.clock() - timedelta(days=1),
        "updated_at": rt.clock() - timedelta(days=1),
        **fields,
    }
    rt.store.set(f"orgs/{ORG}/goals/{goal_id}", doc)


def sent(rt) -> list[str]:
    return [r.text for r in rt.channels["chatwork"].sent]


def test_given_due_items_when_the_task_runs_twice_in_one_tick_then_each_is_sent_once():
    rt, _ = runtime()
    waiting_job(rt)
    goal(rt)
    first = due_tasks.run(rt)
    second = due_tasks.run(rt)
    assert first["reminders"] == {"sent": 1} and first["checkins"] == {"sent": 1}
    assert second == {"tick": "20261125T0105", "skipped": "done"}
    reminder, checkin = sent(rt)
    assert "田中さんの権限を管理者に変更" in reminder and "J-AAAAAA" in reminder and "10時" in reminder
    assert "月末までに見積書を10件出す" in checkin and "11月27日（金）" in checkin and "40%" in checkin
    for text in (reminder, checkin):
        assert "ウル" in text and not ISO.search(text) and "[" not in text


def test_a_doubled_call_while_the_tick_runs_does_nothing():
    rt, clock = runtime()
    waiting_job(rt)
    Claims(rt.store, ttl=timedelta(days=1)).claim(
        path("heartbeat_ticks", id=due.tick_of(clock(), due.HeartbeatConfig())),
        now=clock(),
        lease=timedelta(minutes=5),
    )
    assert due_tasks.run(rt)["skipped"] == "running"
    assert sent(rt) == []


def test_later_ticks_remind_a_job_once_and_check_in_a_goal_once_a_day():
    rt, clock = runtime()
    waiting_job(rt)
    goal(rt)
    due_tasks.run(rt)
    clock.now += timedelta(minutes=5)  # the next tick: the job still waits, the goal is still near
    assert due_tasks.run(rt)["reminders"] == {} and due_tasks.run(rt)["skipped"] == "done"
    assert len(sent(rt)) == 2
    clock.now = DAY + timedelta(days=1)  # the next day, 10:05 in Tokyo
    assert due_tasks.run(rt)["checkins"] == {"sent": 1}
    assert len(sent(rt)) == 3


def test_the_reminder_counts_as_the_one_reminder_of_the_chat_and_a_chat_reminder_counts_for_it():
    rt, clock = runtime()
    waiting_job(rt)
    due_tasks.run(rt)
    pending = session.load_session(rt.store, ORG, KEY, clock())["pending_actions"]
    assert [p.get("reminded") for p in pending] == [True]
    # a job the chat reminded already is not reminded again by the heartbeat
    other, _ = runtime()
    waiting_job(other, job_id="J-BBBBBB")
    session.mark_reminded(other.store, ORG, KEY, "J-BBBBBB", other.clock())
    assert due_tasks.run(other)["reminders"] == {}
    assert sent(other) == []


@pytest.mark.parametrize(
    ("hour_utc", "quiet"),
    [(14, True), (22, True), (23, False), (13, False)],  # 23:00 and 07:00 JST quiet; 08:00 and 22:00 not
)
def test_nothing_is_sent_in_the_quiet_hours_of_the_organisations_timezone(hour_utc, quiet):
    rt, _ = runtime(datetime(2026, 11, 25, hour_utc, 5, tzinfo=UTC))
    waiting_job(rt)
    goal(rt)
    result = due_tasks.run(rt)
    assert result.get("quiet", False) is quiet
    assert (sent(rt) == []) is quiet


def test_what_is_not_due_is_not_sent():
    rt, _ = runtime()
    waiting_job(rt, job_id="J-YOUNG1", asked=timedelta(minutes=2))  # asked too recently
    waiting_job(rt, job_id="J-GONE11", asked=timedelta(minutes=11))  # past its deadline: expired
    goal(rt, "done", status="done", progress=100)
    goal(rt, "deleted", status="deleted")
    goal(rt, "far", deadline="2027-03-31")  # far off and progressing
    goal(rt, "past", deadline="2026-11-20")  # past its deadline: nothing to check in on
    result = due_tasks.run(rt)
    assert result["reminders"] == {} and result["checkins"] == {}
    assert sent(rt) == []


def test_a_goal_without_progress_for_a_week_gets_a_check_in():
    rt, _ = runtime()
    goal(rt, deadline="2027-03-31", updated_at=DAY - timedelta(days=8), created_at=DAY - timedelta(days=30))
    assert due_tasks.run(rt)["checkins"] == {"sent": 1}
    (text,) = sent(rt)
    assert "8日" in text and "ウル" in text


def test_a_masked_summary_reaches_the_person_in_words():
    rt, _ = runtime()
    waiting_job(rt, summary="090-1234-5678 に折り返す")
    assert "090-1234-5678" not in str(rt.store.get(jobs.job_path(ORG, "J-AAAAAA")))  # masked at rest
    due_tasks.run(rt)
    (text,) = sent(rt)
    assert "[" not in text and "折り返す" in text


def test_a_goal_written_before_it_kept_its_channel_is_counted_unreachable():
    rt, _ = runtime()
    goal(rt, channel="")
    assert due_tasks.run(rt)["checkins"] == {"unreachable": 1}
    assert sent(rt) == []


def test_the_heartbeat_endpoint_runs_the_due_tasks():
    rt, _ = runtime()
    waiting_job(rt)
    assert monitoring.heartbeat(rt)["due"]["reminders"] == {"sent": 1}
    assert rt.store.get(session_path(ORG, KEY)) is not None
