"""The heartbeat reads every organisation's waiting confirmations, goals and periodic tasks a page
at a time (issue 38: a tick read at most 500 of each with no paging): with a small page and a
few pages per tick, a tick goes as far as its pages allow and the next goes on from there, so
every job is reminded and every goal checked in once, across organisations that reuse ids and
deadlines that tie; a due task beyond the first page runs too."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from shared_lib.adapters.inproc_bus import InProcessBus
from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.features.approvals import store as jobs
from shared_lib.features.heartbeat_tasks import store as hb_store
from shared_lib.features.heartbeat_tasks.state_schedule import read
from shared_lib.ops import due_tasks
from shared_lib.state import due, session
from shared_lib.wiring.composition import build_runtime

DAY = datetime(2026, 11, 25, 1, 5, tzinfo=UTC)  # 10:05 in Tokyo, a Wednesday
ENV = {"CHARTER_ENV": "test", "CHARTER_LLM": "none", "CHARTER_CHANNELS": "recording"}
ORGS = ("acme", "beta-kogyo", "kansai-shoji")
SMALL = due.HeartbeatConfig(page_size=2, pages_per_tick=2)


class Clock:
    def __init__(self, at: datetime) -> None:
        self.now = at

    def __call__(self) -> datetime:
        return self.now


def runtime():
    clock = Clock(DAY)
    return build_runtime(ENV, store=MemoryStore(), clock=clock, bus=InProcessBus()), clock


def waiting(rt, org: str, job_id: str, summary: str) -> None:
    requested = DAY - timedelta(minutes=6)
    key = f"{org}/room-1/u-{job_id[-1]}"
    jobs.create(
        rt.store,
        {
            "job_id": job_id,
            "org_id": org,
            "status": "pending",
            "requested_at": requested,
            "decide_by": requested + timedelta(minutes=30),  # three share a deadline per organisation
            "user_id": f"u-{job_id[-1]}",
            "room_id": "room-1",
            "channel": "chatwork",
            "conversation_key": key,
            "summary": summary,
        },
    )
    session.set_pending(rt.store, org, key, {"approval_id": job_id, "user_id": f"u-{job_id[-1]}"}, requested)


def sent(rt) -> list[str]:
    return [r.text for r in rt.channels["chatwork"].sent]


def test_every_waiting_job_of_every_organisation_is_reminded_once_over_ticks():
    rt, clock = runtime()
    # GIVEN three organisations with three waiting confirmations each, the same ids in each
    summaries = ["見積書の送付（山田商店さん宛）", "来週の全体MTGのお知らせ📣", "経費精算 ¥32,400 の承認"]
    for org in ORGS:
        for n, summary in enumerate(summaries):
            waiting(rt, org, f"J-AAAAA{n}", f"{summary}／{org}")
    # WHEN the heartbeat ticks with pages of two, two pages a tick
    first = due_tasks.run(rt, SMALL)
    clock.now += timedelta(minutes=5)
    second = due_tasks.run(rt, SMALL)
    clock.now += timedelta(minutes=5)
    third = due_tasks.run(rt, SMALL)
    # THEN the first tick reminds four, the second goes on where it stopped, and nobody twice
    assert first["reminders"] == {"sent": 4}
    assert second["reminders"] == {"sent": 4} and third["reminders"] == {"sent": 1}
    assert len(sent(rt)) == len(set(sent(rt))) == 9
    assert {org for org in ORGS if any(org in t for t in sent(rt))} == set(ORGS)
    # AND a later tick starts again from the first page and sends nothing again
    clock.now += timedelta(minutes=5)
    assert "sent" not in due_tasks.run(rt, SMALL)["reminders"] and len(sent(rt)) == 9


def test_every_active_goal_is_checked_in_once_a_day_over_ticks():
    rt, clock = runtime()
    # GIVEN five goals near their deadline in two organisations, all created the same second
    for n in range(5):
        org = ORGS[n % 2]
        rt.store.set(
            f"orgs/{org}/goals/G{n}",
            {
                "org_id": org,
                "user_id": f"u-{n}",
                "room_id": "room-1",
                "channel": "chatwork",
                "title": f"月末までに見積書を{n + 3}件出す",
                "status": "active",
                "progress": 20,
                "deadline": "2026-11-27",
                "created_at": DAY - timedelta(days=3),
                "updated_at": DAY - timedelta(days=1),
            },
        )
    one_page = due.HeartbeatConfig(page_size=2, pages_per_tick=1)
    # WHEN three ticks read a page of two each THEN 2 + 2 + 1 check-ins, each goal once
    counts = []
    for _ in range(4):
        counts.append(due_tasks.run(rt, one_page)["checkins"].get("sent", 0))
        clock.now += timedelta(minutes=5)
    assert counts == [2, 2, 1, 0]
    assert sorted(sent(rt)) == sorted(set(sent(rt))) and len(sent(rt)) == 5


def test_a_due_task_beyond_the_first_page_runs():
    rt, clock = runtime()
    # GIVEN five periodic tasks of two organisations due at the same minute
    for n in range(5):
        org = ORGS[n % 2]
        doc = hb_store.new_task(
            task_id=f"hb-{n}",
            org_id=org,
            creator="u-sato",
            instruction=f"今週の締め切りをチームに共有して（{n}）",
            schedule=read("毎週水曜10時"),
            where={"channel": "chatwork", "room_id": "room-eigyo"},
            now=DAY - timedelta(days=1),
            created_by="u-sato",
            cipher=rt.vault,
        )
        rt.store.set(hb_store.task_path(org, f"hb-{n}"), doc)
    # WHEN the due tasks are read two a page THEN all five come, each once
    due_now = list(hb_store.due(rt.store, clock.now, page_size=2))
    assert sorted((t["org_id"], t["task_id"]) for t in due_now) == sorted(
        (ORGS[n % 2], f"hb-{n}") for n in range(5)
    )
    # AND with one page a tick, what a tick did not reach is still due at the next
    first = list(hb_store.due(rt.store, clock.now, page_size=2, pages=1))
    for task in first:
        assert hb_store.claim_slot(rt.store, task, clock.now) is not None
    rest = list(hb_store.due(rt.store, clock.now, page_size=2))
    assert len(first) == 2 and len(rest) == 3
    assert not {t["task_id"] + t["org_id"] for t in first} & {t["task_id"] + t["org_id"] for t in rest}
