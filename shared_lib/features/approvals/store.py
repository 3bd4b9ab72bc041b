"""Approval jobs (seed 002 §6.2–6.4, §7.3): one document per operation that needs approval.

``orgs/{org}/approval_jobs/{job_id}`` (``J-7K2M9Q``), masked at rest, kept for the
organisation's retention (an audit record). Code moves a job, never the LLM::

    pending ──granted / denied (a person allowed to answer) ──► decided
       └──── decide_by passed ──► expired          auto_approved (a grant covered it) is final

A status changes only from ``pending``, in one transaction, so two answers to one job (two
taps on a button, a redelivered turn) decide it once. A pending job past ``decide_by`` reads
as ``expired`` everywhere (``live``); the first reader that acts on it writes the expiry.

>>> live({"status": "pending", "decide_by": datetime(2026, 1, 1, tzinfo=UTC)}, datetime(2026, 1, 2, tzinfo=UTC))["status"]
'expired'
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from shared_lib.collections import collection_path, path
from shared_lib.ids import new_short_id, short_id_for
from shared_lib.ports import Store, Transaction
from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.turn.envelope import Turn

JobStatus = Literal["pending", "granted", "denied", "auto_approved", "expired"]
FINAL: frozenset[str] = frozenset({"granted", "denied", "auto_approved", "expired"})
# seed 002 §7.1: the event each status is recorded as
EVENTS: dict[str, str] = {
    "pending": "approval.requested",
    "granted": "approval.granted",
    "denied": "approval.denied",
    "auto_approved": "approval.auto_approved",
    "expired": "approval.expired",
}
# what a person reads about a job, masked at rest (identifiers and times stay as they are)
_SHOWN = ("summary", "impact", "targets", "job_type")


def new_job_id() -> str:
    return new_short_id("J")


def job_id_for(turn_id: str, step: int) -> str:
    """The job a turn's step asks about: a redelivered step names the same job (one job, not two)."""
    return short_id_for("J", f"{turn_id}:{step}")


def job_path(org_id: str, job_id: str) -> str:
    return path("approval_jobs", org=org_id, id=job_id)


def live(doc: dict[str, Any], now: datetime) -> dict[str, Any]:
    """The job as it stands at ``now``: a pending job past its ``decide_by`` is ``expired``."""
    deadline = doc.get("decide_by")
    if doc.get("status") == "pending" and isinstance(deadline, datetime) and deadline <= now:
        return {**doc, "status": "expired", "decided_at": deadline}
    return dict(doc)


def create(store: Store, job: dict[str, Any]) -> dict[str, Any]:
    """Write a new job (``job_id``, ``org_id``, ``status`` pending or auto_approved, …), masked.

    Idempotent: a job that exists already (a redelivered turn) is returned as stored."""
    doc = {k: (Sanitizer.default().mask_stored(v) if k in _SHOWN else v) for k, v in job.items()}
    target = job_path(str(job["org_id"]), str(job["job_id"]))
    if store.create(target, doc):
        return doc
    return store.get(target) or doc


def get(store: Store, org_id: str, job_id: str, now: datetime) -> dict[str, Any] | None:
    doc = store.get(job_path(org_id, job_id))
    return live(doc, now) if doc else None


def decide(
    store: Store,
    org_id: str,
    job_id: str,
    status: Literal["granted", "denied", "expired"],
    now: datetime,
    *,
    approver: str | None = None,
    turn_id: str | None = None,
) -> dict[str, Any] | None:
    """Move a pending job to ``status``; ``None`` when it was not pending (already decided, or
    expired when ``status`` is granted/denied: an answer after the deadline decides nothing).

    ``turn_id`` names the deciding turn: that turn redelivered reads its own decision back
    (the job as it decided it) instead of ``None``, so it goes on exactly as the first time."""
    target = job_path(org_id, job_id)

    def _txn(txn: Transaction) -> dict[str, Any] | None:
        doc = txn.get(target)
        if doc and turn_id and doc.get("decided_turn") == turn_id and doc.get("status") == status:
            return dict(doc)
        if not doc or doc.get("status") != "pending":
            return None
        if live(doc, now)["status"] == "expired" and status != "expired":
            status_now: str = "expired"
        else:
            status_now = status
        new = {**doc, "status": status_now, "decided_at": now, "decided_turn": turn_id}
        if status_now != "expired":
            new["approver"] = approver
        txn.set(target, new)
        return new if status_now == status else None

    return store.run_transaction(_txn)


def extend(store: Store, org_id: str, job_id: str, decide_by: datetime, now: datetime) -> bool:
    """A pending job waits until ``decide_by`` (a double confirmation's first "yes" re-arms the
    question); ``False`` when it was no longer pending at ``now``."""
    target = job_path(org_id, job_id)

    def _txn(txn: Transaction) -> bool:
        doc = txn.get(target)
        if not doc or live(doc, now)["status"] != "pending":
            return False
        txn.set(target, {**doc, "decide_by": decide_by})
        return True

    return store.run_transaction(_txn)


def pending(
    store: Store, org_id: str, now: datetime, *, room_id: str | None = None, user_id: str | None = None
) -> list[dict[str, Any]]:
    """Jobs of ``org_id`` still waiting for an answer at ``now`` (oldest first)."""
    where: list[tuple[str, Any, Any]] = [("status", "==", "pending")]
    if room_id is not None:
        where.append(("room_id", "==", room_id))
    if user_id is not None:
        where.append(("user_id", "==", user_id))
    rows = store.query(collection_path("approval_jobs", org=org_id), where=where)
    docs = [live(doc, now) for _, doc in rows]
    far = datetime.max.replace(tzinfo=UTC)
    return sorted((d for d in docs if d["status"] == "pending"), key=lambda d: d.get("requested_at") or far)


def event_fields(job: dict[str, Any]) -> dict[str, Any]:
    """Seed 002 §7.3: what the record keeps of a job with each ``approval.*`` event."""

    def _at(value: Any) -> str | None:
        return value.isoformat() if isinstance(value, datetime) else (str(value) if value else None)

    return {
        "job_id": job.get("job_id"),
        "approval_status": job.get("status"),
        "approval_requested_at": _at(job.get("requested_at")),
        "approval_decided_at": _at(job.get("decided_at")),
        "approver": job.get("approver"),
        "coder_output": job.get("summary") or "",
    }


def record_event(turn: Turn, job: dict[str, Any]) -> None:
    """The job's status as its seed 002 §7.1 event on the turn (the record and the trail keep it)."""
    status = str(job.get("status") or "pending")
    turn.loop.events.append({"event": EVENTS[status], "step": len(turn.loop.steps) + 1, **event_fields(job)})
