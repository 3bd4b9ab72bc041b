"""End to end on the local stack: every provider's signed webhook gets exactly one reply at
that provider's fake API; shadow mode serves the legacy reply and only compares the LLM
candidate; `charter demo --stack` leaves records the operator commands can list and show."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import uuid
from typing import Any

import httpx
import pytest

from infra.webhook_sender import build_request
from shared_lib.demo_data import CONVERSATION
from shared_lib.flags import FLAGS_DOC, flags_store_doc, load_flags_file
from shared_lib.tools.directory import seed_directory

pytestmark = pytest.mark.e2e


def deliver(
    stack: Any, channel: str, text: str, *, org: str, room: str, user: str
) -> tuple[str, dict[str, Any]]:
    path, headers, body = build_request(
        channel, text, org=org, room=room, user=user, event_id=uuid.uuid4().hex
    )
    resp = httpx.post(stack.ingress_url + path, content=body, headers=headers, timeout=30)
    assert resp.status_code == 200, resp.text
    turn_ids = resp.json().get("turn_ids", [])
    assert len(turn_ids) == 1, resp.json()
    return turn_ids[0], json.loads(body)


def replies_at_fake(stack: Any, channel: str, webhook: dict[str, Any], room: str) -> list[dict[str, Any]]:
    def mine(call: dict[str, Any]) -> bool:
        if call["channel"] != channel or call["status"] >= 300:
            return False
        if channel == "line":
            return call["body"].get("replyToken") == webhook["events"][0]["replyToken"]
        if channel == "slack":
            return call["body"].get("channel") == room
        return (
            f"/rooms/{room}/" in call["path"] if channel == "chatwork" else room in json.dumps(call["body"])
        )

    return [c for c in stack.fake_channel_sent() if mine(c)]


@pytest.mark.parametrize("channel", ["chatwork", "line", "slack", "http"])
def test_a_signed_webhook_of_each_provider_gets_exactly_one_reply(local_stack, channel):
    room = str(uuid.uuid4().int % 10**9) if channel == "chatwork" else f"R{uuid.uuid4().hex[:10].upper()}"
    user = {"chatwork": "200001", "slack": "UALICE0001", "line": "Ualice00000000000000000000000001"}.get(
        channel, "u-suzuki"
    )
    if channel == "line":
        room = user  # a 1:1 chat: the reply goes back with the reply token
    turn_id, webhook = deliver(local_stack, channel, "こんにちは", org="demo", room=room, user=user)
    record = local_stack.record("demo", turn_id)
    assert record["channel"] == channel and record["final_response"]
    local_stack.wait_for(lambda: replies_at_fake(local_stack, channel, webhook, room))
    assert len(replies_at_fake(local_stack, channel, webhook, room)) == 1


def test_shadow_mode_serves_the_legacy_reply_and_never_runs_the_candidates_tool(local_stack):
    # GIVEN an organisation in shadow mode (per-organisation flag), with a person in its directory
    org = f"shadow{uuid.uuid4().hex[:6]}"
    seed_directory(
        local_stack.store,
        org,
        [
            {"user_id": "u1", "name": "鈴木一郎", "level": 2, "department_id": "d1"},
            {"user_id": "u2", "name": "田中太郎", "level": 2, "department_id": "d1"},
        ],
        {"d1": None},
    )
    base = load_flags_file()
    shadow_flags = base.model_copy(
        update={"org_modes": {**base.org_modes, org: "shadow"}, "version": base.version + "-shadow-e2e"}
    )
    local_stack.store.set(FLAGS_DOC, flags_store_doc(shadow_flags))
    try:
        import time

        time.sleep(local_stack.flags_ttl)
        # WHEN a person asks for something the LLM candidate would do with a tool
        room = f"room-{uuid.uuid4().hex[:6]}"
        turn_id, _ = deliver(
            local_stack,
            "http",
            "田中さんに明日までに見積書を作成するタスクをお願い",
            org=org,
            room=room,
            user="u1",
        )
        record = local_stack.record(org, turn_id)
        comparison = local_stack.wait_for(
            lambda: local_stack.store.get(f"orgs/{org}/shadow_comparisons/{turn_id}")
        )
    finally:
        local_stack.store.set(FLAGS_DOC, flags_store_doc(base))
    # THEN the served arm was the legacy brain, the reply is its reply, sent once
    assert record["arm"] == "legacy" and record["flags_reason"] == "ORG_MODE"
    sent = [
        c for c in local_stack.fake_channel_sent() if c["channel"] == "http" and room in json.dumps(c["body"])
    ]
    assert len(sent) == 1 and sent[0]["text"] == record["final_response"]
    # AND the candidate's tool call was compared, never executed: only the served arm's effects exist
    candidate = local_stack.store.get(f"orgs/{org}/shadow_candidates/{turn_id}-0")
    assert candidate is not None and candidate["arm"] == "llm"
    assert all(r.get("dry_run") for r in candidate["execution_result"])
    receipts = [i for i, _ in local_stack.store.query(f"orgs/{org}/receipts") if i.startswith(turn_id)]
    served_calls = len(record["execution_result"])
    assert len(receipts) == served_calls
    assert comparison["turn_id"] == turn_id


def test_demo_through_the_stack_then_turns_list_and_show(local_stack, tmp_path):
    # GIVEN an operator in the folder the stack was started from, with nothing exported: no
    # emulator host, no project, no store (only what `charter local up` left in .charter/)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CHARTER_", "FIRESTORE_", "PUBSUB_", "GOOGLE_", "ANTHROPIC_"))
    }
    run = functools.partial(subprocess.run, env=env, cwd=local_stack.workdir, capture_output=True, text=True)
    cli = [sys.executable, "-m", "infra.cli"]
    demo = run([*cli, "demo", "--stack", "--json"], timeout=600)
    assert demo.returncode == 0, demo.stderr[-2000:]
    demo_turns = json.loads(demo.stdout)["turns"]
    assert len(demo_turns) == len(CONVERSATION) and all(t["reply"] for t in demo_turns)
    # WHEN the operator lists and shows the turns
    listed = run([*cli, "turns", "list", "--org", "demo", "--since", "1h", "--json"], timeout=120)
    assert listed.returncode == 0, listed.stderr[-2000:]
    rows = json.loads(listed.stdout)
    rows = rows["turns"] if isinstance(rows, dict) else rows
    by_id = {r["turn_id"]: r for r in rows}
    # THEN every demo turn is there with the seed 000 §9.1.1 fields filled
    fields = [
        "user_id",
        "organization_id",
        "room_id",
        "input_message",
        "llm_model",
        "llm_reasoning",
        "llm_confidence",
        "guardian_action",
        "auth_result",
        "final_response",
        "total_duration_ms",
    ]
    for t in demo_turns:
        row = by_id[t["turn_id"]]
        assert all(row.get(f) not in (None, "") for f in fields), {f: row.get(f) for f in fields}
        shown = run([*cli, "turns", "show", t["turn_id"], "--org", "demo"], timeout=120)
        assert shown.returncode == 0, shown.stderr[-2000:]
        for layer in ("context", "brain", "guardian", "authorizer", "executor", "responder"):
            assert layer in shown.stdout


def test_replay_after_a_threshold_change_reports_the_new_verdict_without_calling_the_llm(
    local_stack, tmp_path
):
    # GIVEN a task turn the LLM proposed at confidence 0.9 (allowed), recorded by the stack
    room = f"room-{uuid.uuid4().hex[:6]}"
    turn_id, _ = deliver(
        local_stack,
        "http",
        "田中さんに明日までに見積書を作成するタスクをお願い",
        org="demo",
        room=room,
        user="u-suzuki",
    )
    assert local_stack.record("demo", turn_id)["guardian_action"] == "allow"
    # AND today's policy asks for confirmation below 0.95
    from shared_lib.policy.config import POLICY_FILE

    policy = json.loads(POLICY_FILE.read_text(encoding="utf-8"))
    policy["confidence"]["medium"] = 0.95
    (tmp_path / "policy.json").write_text(json.dumps(policy, ensure_ascii=False), encoding="utf-8")
    from infra.fake_llm.server import FakeAnthropicServer

    # the replay's own LLM endpoint: the stack's fakes also serve its targets' background work
    watcher = FakeAnthropicServer().start()
    # WHEN the operator replays the turn
    env = dict(
        os.environ,
        FIRESTORE_EMULATOR_HOST=local_stack.firestore_host,
        CHARTER_PROJECT=local_stack.project,
        CHARTER_STORE="firestore",
        CHARTER_ENV="local",
        CHARTER_POLICY=str(tmp_path / "policy.json"),
        ANTHROPIC_BASE_URL=watcher.url,
        ANTHROPIC_API_KEY="local-fake-key",
    )
    try:
        out = subprocess.run(
            [sys.executable, "-m", "shared_lib.cli", "replay", turn_id, "--org", "demo", "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        watcher.stop()
    # THEN the changed verdict is reported and the fake LLM server received nothing
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout)
    assert report["changed"] is True
    assert "confirm" in json.dumps(report)
    assert watcher.requests == []
