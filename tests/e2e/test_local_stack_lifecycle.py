"""`charter local up/status/down` from the command line, and nothing left running."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from infra.emulators import pid_alive, process_alive


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
