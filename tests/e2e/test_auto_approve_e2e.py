"""Auto-approve on the local stack (seed 002 §6.4): `charter approvals auto on` from the folder
the stack runs in (nothing exported), a turn that would confirm runs auto-approved, `charter
approvals auto off`, and the very next same turn asks for confirmation."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import uuid

import pytest

ORG = "demo"
USER = "u-suzuki"
# a task with a date already past: the charter confirms it once (date.past), no hard-require kind
ASK = "田中さんに2020-01-10までに見積書を作成するタスクをお願い"


def post(stack, text: str, *, room: str) -> str:
    resp = stack.send("http", text, org=ORG, room=room, user=USER)
    assert resp.status == 200, resp.body
    return str(resp.body["turn_ids"][0])


@pytest.mark.e2e
def test_auto_on_runs_a_confirmation_and_auto_off_asks_on_the_very_next_turn(local_stack):
    # GIVEN an operator in the stack's folder with nothing exported (only `.charter/`)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CHARTER_", "FIRESTORE_", "PUBSUB_", "GOOGLE_", "ANTHROPIC_"))
    }
    run = functools.partial(subprocess.run, env=env, cwd=local_stack.workdir, capture_output=True, text=True)
    cli = [sys.executable, "-m", "infra.cli", "approvals", "auto"]
    room = f"room-{uuid.uuid4().hex[:8]}"
    # AND without a grant the request is confirmed
    first = local_stack.record(ORG, post(local_stack, ASK, room=room))
    assert first["response_kind"] == "confirm"
    assert local_stack.record(ORG, post(local_stack, "いいえ", room=room))["response_kind"] != "confirm"
    # WHEN auto-approve is turned on for task creation
    on = run([*cli, "on", "--org", ORG, "--tools", "chatwork_task_create", "--json"], timeout=120)
    assert on.returncode == 0, on.stderr[-2000:]
    grant = json.loads(on.stdout)
    # THEN the same request runs auto-approved, and the job says so
    auto = local_stack.record(ORG, post(local_stack, ASK, room=room))
    assert auto["guardian_reason"] == "approval.auto_approved" and auto["execution_success"] is True, (
        auto.get("execution_result"),
        auto.get("execution_skipped_reason"),
        auto.get("final_response"),
    )
    assert "自動承認の範囲内" in auto["final_response"]
    jobs = [d for _, d in local_stack.store.query(f"orgs/{ORG}/approval_jobs") if d.get("room_id") == room]
    assert [(j["status"], j["approver"]) for j in jobs if j["status"] == "auto_approved"] == [
        ("auto_approved", f"auto:{grant['grant_id']}")
    ]
    # WHEN it is turned off
    off = run([*cli, "off", "--org", ORG], timeout=120)
    assert off.returncode == 0, off.stderr[-2000:]
    # THEN the very next same request asks for confirmation
    after = local_stack.record(ORG, post(local_stack, ASK, room=room))
    assert after["response_kind"] == "confirm" and after["execution_success"] is not True
    status = run([*cli, "status", "--org", ORG, "--json"], timeout=120)
    assert status.returncode == 0 and json.loads(status.stdout)["grants"] == []


@pytest.mark.e2e
def test_a_persons_auto_off_stops_their_own_requests_under_the_org_grant_until_their_auto_on(local_stack):
    # GIVEN an organisation-wide grant of task creation, made by an operator
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CHARTER_", "FIRESTORE_", "PUBSUB_", "GOOGLE_", "ANTHROPIC_"))
    }
    run = functools.partial(subprocess.run, env=env, cwd=local_stack.workdir, capture_output=True, text=True)
    cli = [sys.executable, "-m", "infra.cli", "approvals", "auto"]
    on = run([*cli, "on", "--org", ORG, "--tools", "chatwork_task_create"], timeout=120)
    assert on.returncode == 0, on.stderr[-2000:]
    mine, theirs = f"room-{uuid.uuid4().hex[:8]}", f"room-{uuid.uuid4().hex[:8]}"

    def say(text: str, *, user: str, room: str) -> dict:
        resp = local_stack.send("http", text, org=ORG, room=room, user=user)
        assert resp.status == 200, resp.body
        return local_stack.record(ORG, str(resp.body["turn_ids"][0]))

    try:
        # WHEN 鈴木 (level 2) turns auto-approve off in a chat
        off = say("/auto off", user=USER, room=mine)
        assert "ここからの操作は、また一つずつ確認する" in off["final_response"]
        # THEN 鈴木's next request under the organisation's grant is confirmed, not auto-approved
        asked = say(ASK, user=USER, room=mine)
        assert asked["response_kind"] == "confirm" and asked["execution_success"] is not True
        assert asked["guardian_reason"] != "approval.auto_approved"
        say("いいえ", user=USER, room=mine)
        # AND 田中's request is still auto-approved
        other = say("鈴木さんに2020-01-10までに議事録を送るタスクをお願い", user="u-tanaka", room=theirs)
        assert other["guardian_reason"] == "approval.auto_approved" and other["execution_success"] is True
        # WHEN 鈴木 turns it on again
        back = say("自動承認オン", user=USER, room=mine)
        assert "自動承認の範囲内なら" in back["final_response"]
        # THEN 鈴木's request runs under the organisation's grant again
        again = say(ASK, user=USER, room=mine)
        assert again["guardian_reason"] == "approval.auto_approved" and again["execution_success"] is True
    finally:  # the stack is shared by the session: no grant outlives this test
        assert run([*cli, "off", "--org", ORG], timeout=120).returncode == 0
