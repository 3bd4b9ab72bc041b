"""Delegated jobs (seed 001 §15, 002 §4.4): one document per sub-agent job.

``orgs/{org}/agent_jobs/{job_id}``, masked at rest, kept for the organisation's retention (the
audit record). A job runs as a turn of its own (``Turn.job``) as its requester; code moves a
job, never the LLM::

    queued ──first step──► running ──answer──► succeeded | failed | denied
       └──────┴── watchdog: step / cost limit ──► cancelled     deadline, no heartbeat ──► timed_out
                  operator ──► cancelled (reason operator)

A status changes only from ``queued`` or ``running``, in one transaction, so a redelivered
step, the sweep and an operator stop a job once. A final job's report is due
(``report_pending``) until it is sent; the sweep sends one still due after ``REPORT_GRACE``
and gives it up past ``REPORT_WINDOW``. The watchdog's decisions are pure functions
(``step_stop``, ``sweep_action``) over the document and the clock.

>>> step_stop({"max_steps": 2, "max_cost_usd": 0.5}, steps_done=2, cost_usd=0.0, now=datetime(2026, 1, 1, tzinfo=UTC))
Stop(status='cancelled', reason='step_limit')
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta  # noqa: F401  (UTC: the doctest)
from typing import Any, Literal

from shared_lib.collections import collection_path
from shared_lib.errors import CharterError
from shared_lib.ports import Store, Transaction
from shared_lib.tools.job_doc import DELEGATE_TOOL as DELEGATE_TOOL
from shared_lib.tools.job_doc import LIVE as LIVE
from shared_lib.tools.job_doc import JobLimits as JobLimits
from shared_lib.tools.job_doc import job_id_for as job_id_for
from shared_lib.tools.job_doc import job_of_turn as job_of_turn
from shared_lib.tools.job_doc import job_path as job_path
from shared_lib.tools.job_doc import keep_handle as keep_handle
from shared_lib.tools.job_doc import live_count as live_count
from shared_lib.tools.job_doc import load_limits as load_limits
from shared_lib.tools.job_doc import new_job as new_job
from shared_lib.tools.job_doc import reply_handle as reply_handle
from shared_lib.tools.job_doc import turn_id_for as turn_id_for

JobStatus = Literal["queued", "running", "succeeded", "failed", "denied", "cancelled", "timed_out"]
STATUSES: tuple[str, ...] = ("queued", "running", "succeeded", "failed", "denied", "cancelled", "timed_out")
FINAL: frozenset[str] = frozenset(STATUSES) - LIVE
LIST_LIMIT = 500
REPORT_GRACE = timedelta(minutes=1)  # the job's own turn (or the cancel) is sending it
REPORT_WINDOW = timedelta(hours=24)  # a report older than this is no news any more
NESTED = "job.nested_delegation"  # the guardian's and the gate's reason: a sub-agent never delegates


class JobError(CharterError):
    """An operator's request about a job that cannot be done (unknown, or already over)."""


@dataclass(frozen=True)
class Stop:
    status: Literal["cancelled", "timed_out"]
    reason: str  # step_limit, cost_limit, deadline, no_heartbeat, operator


def delegates(tool_names: Iterable[str]) -> bool:
    """Whether a proposal's calls delegate a job (refused in a job's own turn: depth 1)."""
    return DELEGATE_TOOL in set(tool_names)


# -- the watchdog (fixed logic) ---------------------------------------------------------------
def step_stop(job: dict[str, Any], *, steps_done: int, cost_usd: float, now: datetime) -> Stop | None:
    """Whether the job may take its next step (``steps_done`` ran, ``cost_usd`` spent): a step
    past ``max_steps`` or a cost past ``max_cost_usd`` cancels it, ``ends_at`` passed times it out."""
    if steps_done >= int(job.get("max_steps") or 1):
        return Stop("cancelled", "step_limit")
    if cost_usd > float(job.get("max_cost_usd") or 0.0):
        return Stop("cancelled", "cost_limit")
    ends = job.get("ends_at")
    if isinstance(ends, datetime) and now >= ends:
        return Stop("timed_out", "deadline")
    return None


SweepAction = Literal["republish", "timed_out", "none"]


def sweep_action(job: dict[str, Any], now: datetime, limits: JobLimits) -> tuple[SweepAction, str]:
    """What the minute's sweep does with a job: a live job past ``ends_at`` or a running one
    without a heartbeat for ``alive_timeout`` times out; a queued one whose turn never started
    (its publish was lost) is published again."""
    status = job.get("status")
    if status not in LIVE:
        return "none", ""
    ends = job.get("ends_at")
    if isinstance(ends, datetime) and now >= ends:
        return "timed_out", "deadline"
    if status == "running":
        beat = job.get("heartbeat_at") or job.get("created_at")
        if isinstance(beat, datetime) and now - beat >= timedelta(seconds=limits.alive_timeout_seconds):
            return "timed_out", "no_heartbeat"
        return "none", ""
    created = job.get("created_at")
    if isinstance(created, datetime) and now - created >= timedelta(seconds=limits.republish_after_seconds):
        return "republish", "not_started"
    return "none", ""


def report_action(job: dict[str, Any], now: datetime) -> Literal["send", "give_up", "none"]:
    """What the sweep does with a job whose report is due: send it once the job's own sender had
    its ``REPORT_GRACE``, give it up past ``REPORT_WINDOW``."""
    finished = job.get("finished_at")
    if job.get("status") not in FINAL or not job.get("report_pending") or not isinstance(finished, datetime):
        return "none"
    if now - finished >= REPORT_WINDOW:
        return "give_up"
    return "send" if now - finished >= REPORT_GRACE else "none"


# -- the store ----------------------------------------------------------------------------------
def get(store: Store, org_id: str, job_id: str) -> dict[str, Any] | None:
    return store.get(job_path(org_id, job_id))


def is_running(store: Store, org_id: str, job_id: str) -> bool:
    """Whether a job's turn may still act (the executor asks before every effect)."""
    job = get(store, org_id, job_id)
    return job is not None and job.get("status") in LIVE


def list_jobs(store: Store, org_id: str | None = None, status: str | None = None) -> list[dict[str, Any]]:
    where: list[tuple[str, Any, Any]] = [("status", "==", status)] if status else []
    if org_id:
        rows = store.query(collection_path("agent_jobs", org=org_id), where=where, limit=LIST_LIMIT)
    else:
        rows = store.query("agent_jobs", where=where, group=True, limit=LIST_LIMIT)
    jobs = [doc for _, doc in rows]
    return sorted(jobs, key=lambda j: str(j.get("created_at") or ""), reverse=True)


def heartbeat(
    store: Store, org_id: str, job_id: str, *, steps: int, cost_usd: float, now: datetime
) -> dict[str, Any] | None:
    """A step boundary: the job is running, ``steps`` ran, ``cost_usd`` spent (one transaction).
    The job as it is after: a final one (an operator's cancel between steps) is left alone."""

    def txn_fn(txn: Transaction) -> dict[str, Any] | None:
        doc = txn.get(job_path(org_id, job_id))
        if doc is None or doc.get("status") in FINAL:
            return doc
        doc = {
            **doc,
            "status": "running",
            "steps": steps,
            "cost_usd": round(cost_usd, 6),
            "heartbeat_at": now,
        }
        doc.setdefault("started_at", now)
        txn.set(job_path(org_id, job_id), doc)
        return doc

    return store.run_transaction(txn_fn)


def finish(
    store: Store,
    org_id: str,
    job_id: str,
    *,
    status: str,
    reason: str,
    now: datetime,
    result: dict[str, Any] | None = None,
    by: str = "",
) -> dict[str, Any] | None:
    """Move a live job to a final ``status`` once; ``None`` when it was already final (or unknown)."""
    if status not in FINAL:
        raise JobError(f"{status!r} is not a final job status")

    def txn_fn(txn: Transaction) -> dict[str, Any] | None:
        doc = txn.get(job_path(org_id, job_id))
        if doc is None or doc.get("status") in FINAL:
            return None
        doc = {**doc, "status": status, "reason": reason, "finished_at": now, "report_pending": True}
        if result is not None:
            doc["result"] = result
        if by:
            doc["cancelled_by"] = by
        txn.set(job_path(org_id, job_id), doc)
        return doc

    return store.run_transaction(txn_fn)


def cancel(store: Store, org_id: str, job_id: str, *, by: str, now: datetime) -> dict[str, Any]:
    """An operator's cancel; ``JobError`` for an unknown job or one already over."""
    job = get(store, org_id, job_id)
    if job is None:
        raise JobError(f"no job {job_id} in {org_id}")
    done = finish(store, org_id, job_id, status="cancelled", reason="operator", now=now, by=by)
    if done is None:
        current = get(store, org_id, job_id) or job
        raise JobError(f"job {job_id} is already {current.get('status')}")
    return done
