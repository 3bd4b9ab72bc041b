"""An operator's ``charter jobs cancel`` of a running job on the Firestore emulator (issue 22): the
chain runs in process over the emulator's store with a scripted LLM; the operator's command
builds its own runtime over the same project (as a separate process would). The job's next step
runs no tool, and the requester is told of the cancel once, whoever sends it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "loop"))
from loop_fakes import ORG, SEARCH, Chain, tool_call

from shared_lib.cli import main
from shared_lib.features.jobs import cli as jobs_cli
from shared_lib.features.jobs import state as agent_jobs
from shared_lib.runtime import Runtime

pytestmark = pytest.mark.integration
TASK = "営業チームの期限切れタスクを集めて要約して"


def test_an_operators_cancel_of_a_running_job_stops_its_next_step_and_is_reported_once(
    firestore_project: str, emulator_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {
        **emulator_env,
        "CHARTER_STORE": "firestore",
        "CHARTER_BUS": "inproc",
        "CHARTER_PROJECT": firestore_project,
    }
    for key, value in {**env, "CHARTER_ENV": "test", "CHARTER_CHANNELS": "recording"}.items():
        monkeypatch.setenv(key, value)  # the operator's own runtime reads the process's settings
    operators: list[Runtime] = []
    built = jobs_cli.runtime_for
    monkeypatch.setattr(jobs_cli, "runtime_for", lambda args: operators.append(built(args)) or operators[-1])

    def operator_cancels_then_create(_request: Any) -> dict[str, Any]:
        # GIVEN the job is running (its first step searched); the operator cancels it now
        (job,) = agent_jobs.list_jobs(chain.rt.store, ORG)
        assert job["status"] == "running" and job["steps"] == 1
        cancel = ["jobs", "cancel", "--org", ORG, job["job_id"], "--by", "ops"]
        assert main([*cancel, "--store", "firestore", "--project", firestore_project]) == 0
        return tool_call("chatwork_task_create", {"body": "新しいタスク", "assignee_name": "自分"})

    # WHEN u1 delegates and the job's second step proposes a write after the cancel
    chain = Chain([tool_call("delegate_task", {"task": TASK}), SEARCH, operator_cancels_then_create], env=env)
    chain.say(TASK)
    # THEN the job is cancelled by the operator and its next step ran no tool
    (job,) = agent_jobs.list_jobs(chain.rt.store, ORG)
    assert (job["status"], job["reason"], job["cancelled_by"]) == ("cancelled", "operator", "ops")
    assert job["report_pending"] is False
    turn = chain.completed(job["turn_id"])
    assert turn.execution.skipped_reason == "job.not_running" and turn.execution.results == []
    assert sorted(chain.tasks()) == sorted(["資料を作る", "見積書を送る"])
    # AND the requester read "cancelled" once: from the operator's command, not again from the turn
    told = chain.rt.persona.message("job_cancelled_operator", task=TASK)
    (operator,) = operators
    sent = [r.text for r in operator.channels["http"].sent + chain.rt.channels["http"].sent]  # type: ignore[attr-defined]
    assert sent.count(told) == 1 and told not in chain.replies()
