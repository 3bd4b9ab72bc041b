"""`charter local up/status/down` from the command line, and nothing left running."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from infra.emulators import pid_alive, process_alive
from tests.e2e import waits


@pytest.mark.e2e
def test_up_status_down_leaves_no_process(tmp_path):
    env = dict(os.environ, CHARTER_LOCAL_DIR=str(tmp_path))
    cli = [sys.executable, "-m", "infra.cli", "local"]
    try:
        up = subprocess.run([*cli, "up"], env=env, capture_output=True, text=True, timeout=240)
        assert up.returncode == 0, up.stdout + up.stderr
        # progress on stderr as each component comes up; stdout is the result
        assert "] ingress up on port " in up.stderr and up.stderr.rstrip().endswith("] ready")
        assert up.stdout.startswith("local stack up: ingress http://127.0.0.1:")
        st = subprocess.run([*cli, "status", "--json"], env=env, capture_output=True, text=True, timeout=60)
        status = json.loads(st.stdout)
        assert (
            st.returncode == 0 and status["running"] and status["ingress_url"].startswith("http://127.0.0.1:")
        )
        pids = [c["pid"] for c in status["components"].values()]
        ports = [c["port"] for c in status["components"].values()]
        assert {"pubsub", "firestore", "ingress", "observer", "fake_llm", "fake_channels"} <= set(
            status["components"]
        )
        # the layers' code runs in gunicorn workers under the recorded arbiter: status names them
        guardian = status["components"]["guardian"]
        assert guardian["workers"] and guardian["pid"] not in guardian["workers"]
        # WHEN one layer is restarted as after a crash
        rs = subprocess.run(
            [*cli, "restart", "guardian", "--kill"], env=env, capture_output=True, text=True, timeout=120
        )
        assert rs.returncode == 0, rs.stdout + rs.stderr
        after = json.loads(
            subprocess.run(
                [*cli, "status", "--json"], env=env, capture_output=True, text=True, timeout=60
            ).stdout
        )
        # THEN it runs again on the same port with new processes, and the old ones are gone
        again = after["components"]["guardian"]
        assert after["running"] and again["port"] == guardian["port"] and again["healthy"]
        assert again["pid"] != guardian["pid"] and not set(again["workers"]) & set(guardian["workers"])
        assert not pid_alive(guardian["pid"]) and not any(process_alive(w) for w in guardian["workers"])
        pids.append(again["pid"])
        bad = subprocess.run(
            [*cli, "restart", "no-such-layer"], env=env, capture_output=True, text=True, timeout=60
        )
        # an error goes to stderr, one line (it went to stdout before the CLI's convention)
        assert bad.returncode == 2 and bad.stdout == ""
        assert bad.stderr.startswith("charter: error: local restart: no component 'no-such-layer'")
    finally:
        down = subprocess.run([*cli, "down"], env=env, capture_output=True, text=True, timeout=120)
    assert down.returncode == 0
    assert not any(pid_alive(p) for p in pids)
    for port in ports:  # nothing listens any more on the stack's ports
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", port)) != 0, port


@pytest.mark.e2e
def test_a_killed_pubsub_emulator_loses_no_accepted_webhook_and_restarts_with_its_topics(tmp_path):
    from infra import local_stack
    from infra.emulators import kill_group
    from infra.webhook_sender import build_request

    root = tmp_path / ".charter" / "local"
    env = dict(os.environ, CHARTER_LOCAL_DIR=str(root))
    cli = [sys.executable, "-m", "infra.cli", "local"]
    state = local_stack.up(root=root)
    try:
        ingress, fake = state["ingress_url"], state["components"]["fake_channels"]["url"]

        def deliver(event_id: str, text: str) -> tuple[int, dict]:
            path, headers, body = build_request("http", text, org="demo", user="u-suzuki", event_id=event_id)
            request = urllib.request.Request(ingress + path, data=body, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=60) as resp:
                    return resp.status, json.loads(resp.read())
            except urllib.error.HTTPError as exc:
                return exc.code, json.loads(exc.read() or b"{}")

        def replied(turn_id: str) -> bool:
            with urllib.request.urlopen(fake + "/_admin/sent", timeout=10) as resp:
                return turn_id in resp.read().decode()

        # GIVEN the emulator killed as in a crash
        kill_group(int(state["components"]["pubsub"]["pid"]))
        # WHEN a webhook arrives THEN the ingress does not acknowledge it: the channel will retry
        status, answer = deliver("ev-down-1", "来週の出張申請ってどこから出すんだっけ？")
        assert status == 503, answer
        # WHEN `charter local restart pubsub` brings the emulator back with its topics and subscriptions
        rs = subprocess.run([*cli, "restart", "pubsub"], env=env, capture_output=True, text=True, timeout=240)
        assert rs.returncode == 0 and rs.stdout.startswith("restarted pubsub"), rs.stdout + rs.stderr
        # THEN the channel's retries of the same delivery (503 while the ingress's Pub/Sub client
        # reconnects) become one turn that is answered
        budgets = waits.Budgets.of_stack(root)
        status, answer = waits.wait_for(
            lambda: (d := deliver("ev-down-1", "来週の出張申請ってどこから出すんだっけ？"))[0] != 503 and d,
            budgets.turn,
            interval=1.0,  # a channel's retry interval
            what="the ingress taking the retried delivery after the restart",
        )
        assert status == 200 and answer.get("turn_ids"), answer
        turn_id = answer["turn_ids"][0]
        waits.wait_for(
            lambda: replied(turn_id), budgets.turn, what=f"a reply for {turn_id} after the restart"
        )
    finally:
        local_stack.down(root=root)
