"""The soak (``python -m infra.soak``), bounded: a hundred turns on its own local stack while
layers are SIGKILLed mid-turn and restarted, LLM calls fail (on one peer, and on every peer at
once), webhooks arrive twice and a few turns are poisoned. Every webhook must be accounted for,
nothing lost, repeated, missing or foreign, and the command must leave no process behind."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from infra.emulators import pid_alive

RATES = [
    "--kill-rate",
    "0.05",
    "--llm-fault-rate",
    "0.1",
    "--redelivery-rate",
    "0.1",
    "--poison-rate",
    "0.03",
]


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
    print(json.dumps(report, ensure_ascii=False, indent=1))  # the figures, shown when it fails
    # THEN the chaos happened: layers were killed with a turn in flight and came back, LLM calls
    # failed (every peer at once for some turns), webhooks came twice, poisoned turns were sent
    assert report["kills"] >= 1 and report["kill_errors"] == 0, report["kill_log"]
    assert report["kills_in_flight"] >= 1, report["kill_log"]
    assert sum(report["llm_faults"].values()) >= 1 and report["webhooks"]["redeliveries"] >= 1
    must_degrade = [o for o in report["outages"] if o["must_degrade"]]
    assert must_degrade and all(o["degraded"] for o in must_degrade), report["outages"]
    assert report["expected_dead_letters"] >= 1
    # AND every webhook sent and every planned turn is accounted for, and the counts reconcile
    assert report["reconciliation"] == []
    hooks = report["webhooks"]
    assert hooks["sent"] == sum(
        hooks[o] for o in ("accepted", "deduplicated", "refused", "timed_out", "unreachable")
    )
    assert report["fates"]["answered"] + report["fates"]["dead_lettered"] == report["turns"] == 100
    assert (report["lost"], report["lost_turns"], report["unaccepted"]) == (0, [], 0)
    assert report["fates"]["dead_lettered"] == report["expected_dead_letters"]
    # AND nothing was repeated, missing or foreign
    assert (report["duplicate_replies"], report["duplicate_turns"], report["duplicate_effects"]) == (0, 0, 0)
    assert (report["missing_effects"], report["unexpected_effects"], report["foreign_replies"]) == ([], [], 0)
    assert report["unexpected_dead_letters"] == []
    assert report["failures"] == [] and report["ok"] is True and done.returncode == 0
    # AND the stack it started is stopped
    assert report["stopped_pids"] and not any(pid_alive(p) for p in report["stopped_pids"])
