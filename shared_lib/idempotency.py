"""Idempotency claims: one per ``(turn_id, layer, step)``.

The algorithm (after AWS Lambda Powertools' idempotency base): a claim is created
``in_progress`` with a lease; the layer does its work and publishes; the claim is then
marked ``completed``. A redelivered message finds

* ``completed``            -> acknowledged, nothing repeated;
* ``in_progress``, leased  -> "try later" (another delivery is working on it);
* ``in_progress``, expired -> taken over (the earlier worker died mid-way).

A worker that dies after publishing but before completing lets a later delivery publish
again; the next layer's own claim absorbs that duplicate. External effects (tool runs,
sends) are protected separately by receipts written in the effect's own transaction.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from shared_lib.ports import Store, Transaction

CLAIM_TTL = timedelta(days=3)


class ClaimState(Enum):
    ACQUIRED = "acquired"
    COMPLETED = "completed"
    BUSY = "busy"


def claim_path(org_id: str, turn_id: str, layer: str, step: int, *, shadow: bool = False) -> str:
    suffix = "-shadow" if shadow else ""
    return f"orgs/{org_id}/idempotency/{turn_id}-{layer}-{step}{suffix}"


def acquire(store: Store, path: str, *, now: datetime, lease: timedelta) -> ClaimState:
    def _txn(txn: Transaction) -> ClaimState:
        doc = txn.get(path)
        if doc is not None:
            if doc.get("status") == "completed":
                return ClaimState.COMPLETED
            lease_until = doc.get("lease_until")
            if isinstance(lease_until, datetime) and lease_until > now:
                return ClaimState.BUSY
        record: dict[str, Any] = {
            "status": "in_progress",
            "lease_until": now + lease,
            "attempts": int((doc or {}).get("attempts", 0)) + 1,
            "expires_at": now + CLAIM_TTL,
        }
        txn.set(path, record)
        return ClaimState.ACQUIRED

    return store.run_transaction(_txn)


def complete(store: Store, path: str, *, now: datetime, summary: dict[str, Any] | None = None) -> None:
    store.set(
        path,
        {
            "status": "completed",
            "completed_at": now,
            "expires_at": now + CLAIM_TTL,
            **({"summary": summary} if summary else {}),
        },
    )


def release(store: Store, path: str) -> None:
    """Give the claim up after a failure so the redelivery can work at once."""
    store.delete(path)
