"""Delegated jobs on the whole local stack (issue 22, seed 001 §15): the fake Anthropic server's
scripted model delegates (``infra/fake_llm/jobs.py``); each job runs as a turn of its own through
Pub/Sub, as its requester, and reports into the parent's room. Three jobs run side by side: one
finishes and reports, one keeps asking for steps and its watchdog cancels it at the step limit,
one asks for a tool above its requester's level and is denied. (An operator's cancel of a live
job is covered on the in-process chain: ``tests/unit/cli/test_jobs_cli.py``,
``tests/unit/loop/test_jobs_chain.py``; its timing on a stack would make it flaky.)"""

from __future__ import annotations

import json
import urllib.request
import uuid
from typing import Any

import pytest

from shared_lib.features.jobs import state as agent_jobs

ORG, USER = "demo", "u-suzuki"  # level 2: may delegate, may not see the staff list (level 5)
FINISHES = "営業チームの期限切れタスクを集めて要約して"
KEEPS_GOING = "ずっと調べ続けて"
ABOVE_LEVEL = "全社員の一覧を集めてまとめて"


def post(stack: Any, text: str, room: str) -> None:
    resp = stack.send("http", text, org=ORG, room=room, user=USER)
    assert resp.status == 200, resp.body


def replies(stack: Any, room: str) -> list[str]:
    return [
        str(s.get("text", ""))
        for s in stack.fake_channel_sent()
        if s.get("channel") == "http" and s["body"].get("room_id") == room
    ]


def job_in(stack: Any, room: str) -> dict[str, Any] | None:
    found = [d for _, d in stack.store.query(f"orgs/{ORG}/agent_jobs", where=[("room_id", "==", room)])]
    return found[0] if len(found) == 1 else None


@pytest.mark.e2e
def test_a_job_finishes_and_reports_another_is_stopped_at_its_step_limit_a_third_is_denied(local_stack):
    stack, tag = local_stack, uuid.uuid4().hex[:6]
    rooms = {text: f"room-job-{i}-{tag}" for i, text in enumerate((FINISHES, KEEPS_GOING, ABOVE_LEVEL))}
    for text, room in rooms.items():
        post(stack, text, room)
    # each job ends (a final status) and its room got the start and exactly one report
    for room in rooms.values():
        try:
            stack.wait_for(
                lambda room=room: (j := job_in(stack, room)) is not None and j["status"] in agent_jobs.FINAL,
                stack.budgets.job,
            )
            stack.wait_for(lambda room=room: len(replies(stack, room)) >= 2, stack.budgets.job)
        except AssertionError as exc:  # say what the room and its job came to
            raise AssertionError(f"{room}: job {job_in(stack, room)} replies {replies(stack, room)}") from exc

    # (a) finished: the report names the task and arrives once; charter jobs show says succeeded
    done = job_in(stack, rooms[FINISHES])
    assert done is not None and done["status"] == "succeeded" and done["user_id"] == USER
    sent = replies(stack, rooms[FINISHES])
    assert sent[0].startswith(f"「{FINISHES[:39]}") and "お知らせするウル" in sent[0]
    reports = [r for r in sent if r.startswith("お願いされていた「")]
    assert len(reports) == 1 and "まとまったウル" in reports[0]
    shown = stack.charter("jobs", "show", "--org", ORG, done["job_id"], "--json")
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert json.loads(shown.stdout)["status"] == "succeeded"
    turn = stack.record(ORG, done["turn_id"])
    assert turn["user_id"] == USER
    listed = stack.charter("jobs", "list", "--status", "succeeded", "--json")  # every organisation
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert done["job_id"] in [j["job_id"] for j in json.loads(listed.stdout)["jobs"]]

    # (b) the watchdog stopped the job that kept asking for another step, at its step limit
    stopped = job_in(stack, rooms[KEEPS_GOING])
    assert stopped is not None and (stopped["status"], stopped["reason"]) == ("cancelled", "step_limit")
    assert stopped["steps"] == stopped["max_steps"]
    assert [r for r in replies(stack, rooms[KEEPS_GOING]) if "途中で止めたウル（手順の上限）" in r] != []

    # (c) the staff list (level 5) asked for by a level-2 person's job: denied, nothing shown
    denied = job_in(stack, rooms[ABOVE_LEVEL])
    assert denied is not None and denied["status"] == "denied"
    assert any("権限ではできない操作" in r for r in replies(stack, rooms[ABOVE_LEVEL]))
    assert all(
        "delegate_task" not in r and "view_all_users" not in r
        for room in rooms.values()
        for r in replies(stack, room)
    )
    # AND the minute's sweep, on the emulator's collection-group query, finds nothing left to do
    sweep = urllib.request.Request(
        f"{stack.admin_url}/tasks/jobs/watchdog",
        data=b"",
        method="POST",
        headers={"X-Charter-Admin-Token": stack.admin_token},
    )
    with urllib.request.urlopen(sweep, timeout=30) as resp:
        result = json.loads(resp.read())["result"]
    assert (result["republished"], result["timed_out"]) == (0, 0)
