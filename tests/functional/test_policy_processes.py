"""The policy's commands and checks in a process of their own: ``charter policy check`` as the
installed command runs it, and the Authorization Gate's denial under ``python -O`` (which strips
every ``assert``). Their in-process cases are ``tests/unit/policy``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.unit.policy.test_policy_simulator_cli import USER, call

ROOT = Path(__file__).resolve().parents[2]
NOW = "2025-01-15T10:00:00+09:00"


def test_the_installed_command_runs_as_a_process():
    payload = json.dumps({"proposal": call("delete_task", {"task_id": "t1"}), "user": USER, "now": NOW})
    proc = subprocess.run(
        [sys.executable, "-m", "shared_lib.cli", "policy", "check"],
        input=payload,
        text=True,
        capture_output=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert (out["guardian"]["reason_code"], out["authorization"]["result"]) == ("danger.medium", "allowed")


def test_the_denial_holds_under_python_dash_o():
    # GIVEN an interpreter that strips asserts WHEN the gate sees an unknown user without calls
    script = (
        "from tests.unit.policy.test_policy_authorization_fail_closed import decide, without_calls\n"
        "print(decide(without_calls(), 'nobody').reason_code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-O", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    # THEN it still denies
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "level.insufficient"
