"""Candidate revisions on the local stack: normal turns stay on the stable processes, smoke turns
run only on the candidates (``CHARTER_REVISION=candidate``), for the legacy arm and the LLM arm.

The stack's session (``local_stack``) gets a candidate process per target for this module
(``infra.local_candidates``), with the smoke twins' subscriptions pushing to them, as the
smoke subscriptions push to the candidates' tag URLs in the cloud. Each turn goes all the way:
signed webhook -> reply at the fake channel server -> observability record.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from infra import local_candidates
from infra.emulators import pid_alive
from infra.smoke_runner import LAYERS, run_smoke
from shared_lib.delivery.topology import TOPOLOGY
from shared_lib.flags import FLAGS_DOC, flags_store_doc, load_flags_file
from shared_lib.tools.directory import seed_directory
from tests.e2e import waits

TEXT = "田中さんに明日までに見積書を作成するタスクをお願い"
USER = "u1"


@pytest.mark.e2e
def test_local_up_with_candidates_then_down_leaves_no_process(tmp_path):
    # GIVEN `charter local up --candidates` in a folder of its own
    env = dict(os.environ, CHARTER_LOCAL_DIR=str(tmp_path))
    cli = [sys.executable, "-m", "infra.cli", "local"]
    pids: list[int] = []
    try:
        up = subprocess.run(
            [*cli, "up", "--candidates"], env=env, capture_output=True, text=True, timeout=300
        )
        assert up.returncode == 0, up.stdout + up.stderr
        assert "candidate ingress (smoke webhooks): http://127.0.0.1:" in up.stdout
        # THEN every target but admin has a healthy candidate beside its stable process
        st = subprocess.run([*cli, "status", "--json"], env=env, capture_output=True, text=True, timeout=60)
        status = json.loads(st.stdout)
        components = status["components"]
        pids = [c["pid"] for c in components.values()]
        expected = {f"candidate:{t}" for t in TOPOLOGY.targets if t != "admin"}
        assert expected <= set(components) and all(components[name]["healthy"] for name in expected)
    finally:
        down = subprocess.run([*cli, "down"], env=env, capture_output=True, text=True, timeout=120)
    # AND `down` stops the candidates with everything else
    assert down.returncode == 0 and "candidate:brain" in down.stdout
    assert pids and not any(pid_alive(p) for p in pids)


@pytest.fixture(scope="module")
def candidates(local_stack: Any) -> Iterator[dict[str, Any]]:
    root = Path(local_stack.root)
    state = local_candidates.start(root=root)
    try:
        yield state
    finally:
        local_candidates.stop(root=root)


@pytest.fixture
def org_on_arm(local_stack: Any, request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """``(org, arm)``: a fresh organisation with a directory, whose flags mode (org_modes) is the arm."""
    org = f"rev{uuid.uuid4().hex[:6]}"
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
    flags = base.model_copy(
        update={"org_modes": {**base.org_modes, org: request.param}, "version": f"{base.version}-{org}"}
    )
    local_stack.store.set(FLAGS_DOC, flags_store_doc(flags))
    time.sleep(local_stack.flags_ttl)  # every process's flags cache has expired
    try:
        yield org, request.param
    finally:
        local_stack.store.set(FLAGS_DOC, flags_store_doc(base))


def replies(stack: Any, room: str) -> list[dict[str, Any]]:
    return [s for s in stack.fake_channel_sent() if s.get("channel") == "http" and room in str(s.get("body"))]


@pytest.mark.e2e
@pytest.mark.parametrize("org_on_arm", ["legacy", "llm"], indirect=True)
def test_a_normal_turn_runs_on_stable_and_a_smoke_turn_only_on_the_candidates(
    local_stack, candidates, org_on_arm
):
    # GIVEN candidates of every layer beside the stable processes, and an organisation on one arm
    org, arm = org_on_arm
    normal_room, smoke_room = f"room-{uuid.uuid4().hex[:8]}", f"room-{uuid.uuid4().hex[:8]}"

    # WHEN a normal webhook arrives at the stable ingress
    answer = local_stack.send("http", TEXT, org=org, room=normal_room, user=USER)
    assert answer.status == 200, answer.body
    normal = local_stack.record(org, answer.body["turn_ids"][0])
    # AND a smoke webhook (signed X-Charter-Smoke) arrives at the candidate ingress
    smoke = run_smoke(
        candidates["candidate_ingress_url"],
        local_stack.store,
        expect="candidate",
        text=TEXT,
        org=org,
        room=smoke_room,
        user=USER,
        timeout=waits.scaled(local_stack.budgets.turn),
    )

    # THEN the normal turn was handled by the stable process of every layer, on the chosen arm
    assert normal["smoke"] is False
    assert normal["revisions"] == dict.fromkeys(LAYERS, "stable")
    assert (normal["flags_arm"], normal["arm"], normal["flags_reason"]) == (arm, arm, "ORG_MODE")
    # AND the smoke turn only by candidates: every layer recorded the candidate revision
    assert smoke.ok, smoke.problems
    assert smoke.record is not None and smoke.record["revisions"] == dict.fromkeys(LAYERS, "candidate")
    assert [e["revision"] for e in smoke.record["trail"]] == ["candidate"] * len(smoke.record["trail"])
    assert (smoke.record["flags_arm"], smoke.record["arm"]) == (arm, arm)
    # AND each turn did its whole job: the task written, one reply at the fake channel, recorded sent
    for record, room in ((normal, normal_room), (smoke.record, smoke_room)):
        assert record["execution_success"] is True and record["response_sent"] is True
        local_stack.wait_for(lambda room=room: replies(local_stack, room))
        sent = replies(local_stack, room)
        assert len(sent) == 1 and sent[0]["text"] == record["final_response"]
