"""The delegated jobs' store and watchdog (issue 22, seed 001 §15.5): pure decisions over a job's
document and the clock, and a status that changes once, from a live one only."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.features.jobs import state as agent_jobs
from shared_lib.features.jobs.handlers import DelegateTaskParams, delegate_task
from shared_lib.features.jobs.state import JobError, JobLimits, Stop
from shared_lib.tools.registry import ToolContext, ToolInputError

NOW = datetime(2026, 11, 25, 3, 0, tzinfo=UTC)
LIMITS = JobLimits(max_steps=6, max_seconds=300, max_cost_usd=0.5, alive_timeout_seconds=120)
PARENT = {"turn_id": "t1", "room_id": "r1", "channel": "http", "conversation_key": "o/r1/u1"}


def job(**changes: Any) -> dict[str, Any]:
    doc = agent_jobs.new_job(
        job_id="job-1",
        org_id="o",
        requester="u1",
        task="集めて",
        parent=PARENT,
        limits=LIMITS,
        max_steps=3,
        now=NOW,
    )
    return {**doc, **changes}


@pytest.mark.parametrize(
    ("steps", "cost", "later", "expected"),
    [
        (1, 0.0, 0, None),
        (2, 0.49, 10, None),
        (3, 0.0, 0, Stop("cancelled", "step_limit")),  # a 4th step would pass max_steps 3
        (1, 0.51, 0, Stop("cancelled", "cost_limit")),
        (1, 0.0, 300, Stop("timed_out", "deadline")),
        (3, 0.9, 400, Stop("cancelled", "step_limit")),  # the step limit is looked at first
    ],
)
def test_the_watchdog_at_a_step_boundary(steps: int, cost: float, later: int, expected: Stop | None) -> None:
    now = NOW + timedelta(seconds=later)
    assert agent_jobs.step_stop(job(), steps_done=steps, cost_usd=cost, now=now) == expected


@pytest.mark.parametrize(
    ("doc", "later", "expected"),
    [
        (job(), 10, ("none", "")),
        (job(), 60, ("republish", "not_started")),  # queued a minute: its publish was lost
        (job(status="running", heartbeat_at=NOW + timedelta(seconds=50)), 100, ("none", "")),
        (job(status="running", heartbeat_at=NOW), 120, ("timed_out", "no_heartbeat")),
        (job(status="running", heartbeat_at=NOW + timedelta(seconds=290)), 300, ("timed_out", "deadline")),
        (job(), 301, ("timed_out", "deadline")),
        (job(status="succeeded"), 1000, ("none", "")),
        (job(status="cancelled"), 1000, ("none", "")),
    ],
)
def test_the_sweep_decides_each_job(doc: dict[str, Any], later: int, expected: tuple[str, str]) -> None:
    assert agent_jobs.sweep_action(doc, NOW + timedelta(seconds=later), LIMITS) == expected


def test_a_new_job_never_gets_more_than_the_limits_and_its_turn_is_named_by_it() -> None:
    doc = agent_jobs.new_job(
        job_id="job-1",
        org_id="o",
        requester="u1",
        task="x",
        parent=PARENT,
        limits=LIMITS,
        max_steps=50,
        now=NOW,
    )
    assert (
        doc["max_steps"] == 6
        and doc["max_cost_usd"] == 0.5
        and doc["ends_at"] == NOW + timedelta(seconds=300)
    )
    assert doc["status"] == "queued" and doc["turn_id"] == agent_jobs.turn_id_for("job-1")
    assert (
        agent_jobs.job_id_for("t1-0-0") == agent_jobs.job_id_for("t1-0-0") != agent_jobs.job_id_for("t1-0-1")
    )


def test_a_status_changes_once_and_only_from_a_live_one() -> None:
    store = MemoryStore()
    store.set(agent_jobs.job_path("o", "job-1"), job())
    running = agent_jobs.heartbeat(store, "o", "job-1", steps=1, cost_usd=0.01, now=NOW)
    assert running is not None and running["status"] == "running" and running["heartbeat_at"] == NOW
    done = agent_jobs.finish(
        store, "o", "job-1", status="succeeded", reason="done", now=NOW, result={"result": "ok"}
    )
    assert done is not None and done["status"] == "succeeded"
    assert agent_jobs.finish(store, "o", "job-1", status="timed_out", reason="deadline", now=NOW) is None
    after = agent_jobs.heartbeat(store, "o", "job-1", steps=2, cost_usd=0.02, now=NOW)
    assert after is not None and after["status"] == "succeeded" and after["steps"] == 1
    with pytest.raises(JobError, match="already succeeded"):
        agent_jobs.cancel(store, "o", "job-1", by="ops", now=NOW)
    with pytest.raises(JobError, match="no job"):
        agent_jobs.cancel(store, "o", "job-9", by="ops", now=NOW)
    with pytest.raises(JobError):
        agent_jobs.finish(store, "o", "job-1", status="running", reason="", now=NOW)


def ctx(store: MemoryStore, *, job_id: str = "", call: str = "t1-0-0") -> ToolContext:
    return ToolContext(
        store=store,
        org_id="o",
        user_id="u1",
        room_id="r1",
        turn_id=call,
        now=NOW,
        conversation_key="o/r1/u1",
        channel="http",
        job_id=job_id,
    )


def run(store: MemoryStore, params: DelegateTaskParams, context: ToolContext) -> dict[str, Any]:
    return store.run_transaction(lambda txn: delegate_task(params, context, txn))


def test_delegate_task_writes_one_queued_job_per_call_masked_with_less_than_the_limits() -> None:
    store = MemoryStore()
    out = run(store, DelegateTaskParams(task="090-1234-5678 の件を調べて", max_steps=2), ctx(store))
    again = run(store, DelegateTaskParams(task="090-1234-5678 の件を調べて", max_steps=2), ctx(store))
    assert out["job_id"] == again["job_id"] and len(agent_jobs.list_jobs(store, "o")) == 1
    doc = agent_jobs.get(store, "o", out["job_id"])
    assert doc is not None and doc["status"] == "queued" and doc["max_steps"] == 2
    assert "090-1234-5678" not in doc["task"] and doc["parent_turn_id"] == "t1" and doc["user_id"] == "u1"
    big = run(store, DelegateTaskParams(task="調べて", max_steps=20), ctx(store, call="t2-0-0"))
    assert big["max_steps"] == agent_jobs.load_limits().max_steps


def test_a_jobs_own_turn_cannot_delegate_and_an_org_has_at_most_its_concurrent_jobs() -> None:
    store = MemoryStore()
    with pytest.raises(ToolInputError):
        run(store, DelegateTaskParams(task="調べて"), ctx(store, job_id="job-1"))
    assert agent_jobs.list_jobs(store, "o") == []
    limit = agent_jobs.load_limits().max_concurrent_per_org
    for i in range(limit):
        run(store, DelegateTaskParams(task="調べて"), ctx(store, call=f"t{i}-0-0"))
    with pytest.raises(ToolInputError):
        run(store, DelegateTaskParams(task="調べて"), ctx(store, call="tx-0-0"))
