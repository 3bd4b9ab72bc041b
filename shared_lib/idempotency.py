"""Claims: the one exactly-once primitive (after AWS Lambda Powertools' idempotency base).

``Claims`` owns the algorithm over the ``Store`` port's transaction; a family of claims
(layer claims, tool receipts, send receipts, delivery counters) only chooses its status
words and its lifetime. A claim is a document:

* absent, released or ``failed``      -> ``claim`` ACQUIRES it ``in_progress`` with a lease;
* ``in_progress``, lease expired      -> taken over (``attempts`` + 1; the worker died);
* ``in_progress``, lease still held   -> BUSY ("try later": another delivery works on it);
* completed                           -> COMPLETED, with the stored ``result``.

A zero lease is never held: every claimant takes over and counts an attempt (the send
receipt, whose channel dedupes by idempotency key, and the dead-letter counter). The
holder may ``renew`` its lease (a heartbeat) and ``complete`` or ``release`` the claim.

Effects in the store itself use ``run_once``: the effect and its completed record commit
in one transaction, so a redelivery finds the record and never repeats the effect.
Every record carries ``ttl_field`` (``expires_at``) for the store's TTL policy.

>>> from datetime import UTC, datetime, timedelta
>>> from shared_lib.adapters.memory_store import MemoryStore
>>> claims, now = Claims(MemoryStore(), ttl=timedelta(days=1)), datetime(2026, 1, 1, tzinfo=UTC)
>>> first = claims.claim("orgs/a/idempotency/t1", now=now, lease=timedelta(seconds=30))
>>> first.state, claims.claim("orgs/a/idempotency/t1", now=now, lease=timedelta(seconds=30)).state
(<ClaimState.ACQUIRED: 'acquired'>, <ClaimState.BUSY: 'busy'>)
>>> claims.complete("orgs/a/idempotency/t1", now=now, result={"outcome": "ok"})
>>> claims.claim("orgs/a/idempotency/t1", now=now, lease=timedelta(seconds=30)).result
{'outcome': 'ok'}
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from shared_lib import collections
from shared_lib.ports import Doc, Store, Transaction

CLAIM_TTL = timedelta(days=3)
# Reserved fields of a claim record; a family's own ``fields`` must not use them.
_RESERVED = frozenset({"status", "attempts", "lease_until", "holder", "result"})


class ClaimState(Enum):
    ACQUIRED = "acquired"
    COMPLETED = "completed"
    BUSY = "busy"


@dataclass(frozen=True)
class Claim:
    """What ``Claims.claim`` found: the state, the record, and the token that proves holding."""

    state: ClaimState
    record: Doc
    took_over: bool = False  # ACQUIRED from an earlier attempt (its lease expired, or it failed)
    holder: str = ""

    @property
    def result(self) -> dict[str, Any]:
        return dict(self.record.get("result") or {})

    @property
    def attempts(self) -> int:
        return int(self.record.get("attempts", 0))


@dataclass(frozen=True)
class Claims:
    """One family of claims in ``store``: its status words and how long records live."""

    store: Store
    ttl: timedelta
    in_progress: str = "in_progress"
    completed: str = "completed"
    failed: str = "failed"
    ttl_field: str = "expires_at"

    def claim(self, path: str, *, now: datetime, lease: timedelta, fields: Doc | None = None) -> Claim:
        """Take the claim at ``path`` unless it is completed or its lease is held."""
        extra = self._fields(fields)

        def _txn(txn: Transaction) -> Claim:
            doc = txn.get(path)
            if doc is not None:
                if doc.get("status") == self.completed:
                    return Claim(ClaimState.COMPLETED, doc)
                if self._held(doc, now):
                    return Claim(ClaimState.BUSY, doc)
            holder = uuid.uuid4().hex
            record = {
                **(doc or {}),
                **extra,
                "status": self.in_progress,
                "attempts": int((doc or {}).get("attempts", 0)) + 1,
                "holder": holder,
                self.ttl_field: now + self.ttl,
            }
            record.pop("lease_until", None)
            if lease > timedelta(0):
                record["lease_until"] = now + lease
            # ``set`` after the read: the transaction, not ``create``, settles a race (on
            # Firestore the loser is aborted and retried, then sees the winner's record).
            txn.set(path, record)
            return Claim(ClaimState.ACQUIRED, record, took_over=doc is not None, holder=holder)

        return self.store.run_transaction(_txn)

    def renew(self, path: str, *, now: datetime, lease: timedelta, holder: str) -> bool:
        """Extend the lease to ``now + lease``; ``False`` (nothing written) unless ``holder`` holds it."""

        def _txn(txn: Transaction) -> bool:
            doc = txn.get(path)
            if doc is None or doc.get("status") != self.in_progress or doc.get("holder") != holder:
                return False
            txn.set(path, {**doc, "lease_until": now + lease})
            return True

        return self.store.run_transaction(_txn)

    def complete(
        self, path: str, *, now: datetime, result: dict[str, Any] | None = None, fields: Doc | None = None
    ) -> None:
        """Record the claim completed (replacing the in-progress record) with its ``result``."""
        self.store.set(path, self._completed(now, result, fields))

    def release(self, path: str, *, holder: str | None = None) -> None:
        """Give the claim up so the next claimant starts at once (only ``holder``'s, when given)."""
        if holder is None:
            self.store.delete(path)
            return

        def _txn(txn: Transaction) -> None:
            doc = txn.get(path)
            if doc is not None and doc.get("holder") == holder and doc.get("status") == self.in_progress:
                txn.delete(path)

        self.store.run_transaction(_txn)

    def fail(self, path: str, *, error: str) -> None:
        """Mark an unfinished claim failed, keeping its attempts; a completed one stays completed."""

        def _txn(txn: Transaction) -> None:
            doc = txn.get(path)
            if doc is not None and doc.get("status") != self.completed:  # a late success wins
                txn.set(path, {**doc, "status": self.failed, "error": error})

        self.store.run_transaction(_txn)

    def run_once(
        self,
        path: str,
        effect: Callable[[Transaction], dict[str, Any]],
        *,
        now: datetime,
        fields: Doc | None = None,
    ) -> tuple[dict[str, Any], bool]:
        """``(result, replayed)``: ``effect(txn)`` and its completed record commit together.

        A record found completed replays its result without running ``effect``. A record
        without a status was written by such a transaction (older releases wrote none), so
        it counts as completed too.
        """

        def _txn(txn: Transaction) -> tuple[dict[str, Any], bool]:
            stored = txn.get(path)
            if stored is not None and stored.get("status", self.completed) == self.completed:
                return dict(stored.get("result") or {}), True
            result = effect(txn)
            record = self._completed(now, result, fields)
            if stored is None:
                txn.create(path, record)
            else:
                txn.set(path, record)
            return result, False

        return self.store.run_transaction(_txn)

    # -- records --------------------------------------------------------------------------
    def _held(self, doc: Doc, now: datetime) -> bool:
        lease_until = doc.get("lease_until")
        return (
            doc.get("status") == self.in_progress and isinstance(lease_until, datetime) and lease_until > now
        )

    def _fields(self, fields: Doc | None) -> Doc:
        clash = _RESERVED.intersection(fields or {}) | ({self.ttl_field} & set(fields or {}))
        if clash:
            raise ValueError(f"claim fields {sorted(clash)} are reserved")
        return dict(fields or {})

    def _completed(self, now: datetime, result: dict[str, Any] | None, fields: Doc | None) -> Doc:
        return {
            **self._fields(fields),
            "status": self.completed,
            **({"result": result} if result is not None else {}),
            self.ttl_field: now + self.ttl,
        }


# -- the layer runner's claims: one per (turn, layer, step) ------------------------------------


def claim_path(org_id: str, turn_id: str, layer: str, step: int, *, shadow: bool = False) -> str:
    suffix = "-shadow" if shadow else ""
    return collections.path("idempotency", org=org_id, id=f"{turn_id}-{layer}-{step}{suffix}")


def layer_claims(store: Store) -> Claims:
    return Claims(store, ttl=CLAIM_TTL)


def acquire(store: Store, path: str, *, now: datetime, lease: timedelta) -> ClaimState:
    return layer_claims(store).claim(path, now=now, lease=lease).state


def complete(store: Store, path: str, *, now: datetime, summary: dict[str, Any] | None = None) -> None:
    layer_claims(store).complete(path, now=now, result=summary or None, fields={"completed_at": now})


def release(store: Store, path: str) -> None:
    """Give the claim up after a failure so the redelivery can work at once."""
    layer_claims(store).release(path)
