"""A periodic task given in conversation runs at its next due time, once, on the whole local
stack (issue 38, seed 001 §17): the scripted model proposes ``schedule_heartbeat_task``
(``infra/fake_llm/heartbeat.py``), the guardian asks, a yes sets it; then the heartbeat tick's
task step (``Hooks.heartbeat_tasks``, what ``ops.due_tasks.run`` calls outside the quiet hours),
run here with its clock at the task's due time (the stack keeps real time), takes the slot once
however often it is called and publishes the run as the creator's turn through Pub/Sub, which
every layer of the stack judges like any turn and answers in the room. The tick's other duties
are left out: with a clock days ahead they would remind and check in on other modules'
documents of the shared stack (the whole tick with a moved clock, the tick's claim and the
quiet hours are ``tests/unit/heartbeat/test_heartbeat_tasks_chain.py``)."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from shared_lib.wiring.composition import build_runtime

ORG, USER = "demo", "u-suzuki"  # level 2: a team announcement's level
ASK = "毎週月曜9時に、今週の締め切りをチームに共有して🙏"


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def post(stack: Any, text: str, room: str) -> None:
    resp = stack.send("http", text, org=ORG, room=room, user=USER)
    assert resp.status == 200, resp.body


def replies(stack: Any, room: str) -> list[str]:
    return [
        str(s.get("text", ""))
        for s in stack.fake_channel_sent()
        if s.get("channel") == "http" and s["body"].get("room_id") == room
    ]


def task_in(stack: Any, room: str) -> dict[str, Any] | None:
    found = [d for _, d in stack.store.query(f"orgs/{ORG}/heartbeat_tasks", where=[("room_id", "==", room)])]
    return found[0] if len(found) == 1 else None


def runs_of(stack: Any, task_id: str) -> list[dict[str, Any]]:
    return [d for _, d in stack.store.query(f"orgs/{ORG}/heartbeat_runs", where=[("task_id", "==", task_id)])]


@pytest.mark.e2e
def test_a_task_given_in_conversation_runs_at_its_next_due_time_once_judged_by_the_guardian(local_stack):
    stack, room = local_stack, f"room-hb-{uuid.uuid4().hex[:6]}"
    # GIVEN a person asks for a weekly task, and the guardian asks before it is set
    post(stack, ASK, room)
    stack.wait_for(lambda: len(replies(stack, room)) >= 1, what="the confirmation question")
    assert task_in(stack, room) is None, replies(stack, room)
    post(stack, "はい", room)
    task = stack.wait_for(lambda: task_in(stack, room), what="the task set after yes")
    assert (task["user_id"], task["schedule_text"]) == (USER, "毎週月曜 9:00"), task
    assert task["instruction"] == "今週の締め切りをチームに共有して🙏"
    due = task["next_due_at"]
    in_tokyo = due.astimezone(ZoneInfo("Asia/Tokyo"))
    assert (in_tokyo.weekday(), in_tokyo.hour, in_tokyo.minute) == (0, 9, 0), in_tokyo
    answered = len(replies(stack, room))

    # WHEN the heartbeat ticks just before, at, again at (two calls in the slot) and after its due time
    env = json.loads((Path(stack.root) / "function.env.json").read_text())
    clock = Clock(due - timedelta(minutes=5))
    rt = build_runtime(env, clock=clock, llm=None)
    tick = rt.hooks.heartbeat_tasks
    assert tick is not None
    before = tick(rt)
    assert runs_of(stack, task["task_id"]) == []
    clock.now = due + timedelta(minutes=1)
    at, again = tick(rt), tick(rt)
    clock.now = due + timedelta(minutes=6)
    after = tick(rt)
    assert at.get("started", 0) >= 1 and not again.get("started") and not after.get("started"), (
        before,
        at,
        again,
        after,
    )

    # THEN it ran once, as its creator's turn, judged by the guardian, answered in the room
    (run,) = runs_of(stack, task["task_id"])
    assert run["published"] is True, run
    record = stack.record(ORG, run["turn_id"], stack.budgets.turn)
    assert record["user_id"] == USER and record["guardian_action"] == "allow", record
    stack.wait_for(lambda: len(replies(stack, room)) > answered, what="the run's reply")
    assert len(runs_of(stack, task["task_id"])) == 1
    moved = task_in(stack, room)
    assert moved is not None and moved["runs"] == 1 and moved["next_due_at"] == due + timedelta(days=7)
