"""The soak (``python -m infra.soak``), bounded: about a hundred turns on its own local stack
while layers are SIGKILLed and restarted, LLM calls fail and webhooks arrive twice. Nothing
may be lost or repeated, and the command must leave no process behind."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from infra.emulators import pid_alive

RATES = ["--kill-rate", "0.05", "--llm-fault-rate", "0.1", "--redelivery-rate", "0.1"]


@pytest.mark.e2e
@pytest.mark.timeout(1200)
def test_a_hundred_turns_under_kills_llm_faults_and_redeliveries_lose_and_repeat_nothing(tmp_path):
    # WHEN the soak runs 100 turns with the rates of the bigger runs (seeded)
    done = subprocess.run(
        [sys.executable, "-m", "infra.soak", "--turns", "100", *RATES, "--seed", "11", "--json"],
        capture_output=True,
        text=True,
        timeout=1100,
    )
    assert done.stdout.strip(), done.stderr[-3000:]
    report = json.loads(done.stdout)
    # THEN the chaos happened: layers were killed and came back, LLM faults and redeliveries were made
    assert report["kills"] >= 1 and report["kill_errors"] == 0, report["kill_log"]
    assert sum(report["llm_faults"].values()) >= 1 and report["redeliveries"] >= 1
    # AND every accepted turn was answered exactly once, and every effect happened at most once
    assert report["accepted"] == report["turns"] == 100
    assert (report["lost"], report["lost_turns"]) == (0, [])
    assert report["replies"] == report["accepted"]
    assert (report["duplicate_replies"], report["duplicate_turns"], report["duplicate_effects"]) == (0, 0, 0)
    assert report["missing_effects"] == []
    assert report["ok"] is True and done.returncode == 0
    # AND the stack it started is stopped
    assert report["stopped_pids"] and not any(pid_alive(p) for p in report["stopped_pids"])
