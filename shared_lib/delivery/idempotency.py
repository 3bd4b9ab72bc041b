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
True
>>> claims.claim("orgs/a/idempotency/t1", now=now, lease=timedelta(seconds=30)).result
{'outcome': 'ok'}

**Layer claims and crashes** (the numbers: ``topology.json`` ``retry``, Terraform's push
timeout, ``Settings``). Pub/Sub counts every push that is not answered 2xx in time as a
delivery attempt (5 of them, backoff 1-60 s, then the dead-letter topic); a killed worker
costs one. What must not cost more is the redelivery that finds the dead worker's claim
still held: with a 60 s lease every redelivery within the minute found it BUSY, answered
5xx and spent another attempt, so one crash dead-lettered the turn. Hence:

* a **short lease renewed by a heartbeat** (``Heartbeat``: every ``lease / 3``, 10 s by
  default): a live worker keeps its claim however long it works, a dead one's claim lapses
  within ``lease`` of its last beat;
* a held claim is **waited for, not refused** (``await_claim``): the redelivery keeps its
  push open, polling, until the holder completes (answered 2xx, a duplicate), the lease
  lapses (taken over, the step runs again: a crash costs exactly the killed attempt) or
  ``claim_wait(lease)`` = ``lease`` + 2 s has passed (then ``LayerRetry``: a live holder is
  still working, and that holder acknowledges the message itself);
* only the **holder** renews, releases or completes: a worker whose claim was taken over
  cannot delete or overwrite the new holder's claim. It may still publish its result; the
  next layer's claim absorbs the duplicate, and effects sit behind their own receipts.

The budgets nest: heartbeat (lease / 3) < lease (10 s) < claim wait (12 s) < the turn's
budget (``CHARTER_TURN_BUDGET_SECONDS``, 45 s from ingress, which bounds every LLM call and
its retries) < the push timeout (50 s) < the ack deadline (60 s). Waiting spends the same
budget, so a delivery takes at most max(claim wait, budget) plus its non-LLM work: it answers
before its ack deadline, and Pub/Sub does not deliver it again while it still works
(``tests/static/test_crash_budgets.py`` holds the numbers to this).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from shared_lib import collections
from shared_lib.ports import Doc, Store, Transaction

CLAIM_TTL = timedelta(days=3)
# How much longer than a lease a redelivery waits for a held claim: a poll and clock skew.
CLAIM_WAIT_SLACK = timedelta(seconds=2)
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
        # The common case is a first delivery: one ``create`` (a write that fails if the
        # document exists) acquires it in one round trip. Only a record already there (a
        # redelivery, a crash, a race lost) needs the transaction's read-then-write.
        fresh = self._acquired(None, extra, now, lease, uuid.uuid4().hex)
        if self.store.create(path, fresh):
            return Claim(ClaimState.ACQUIRED, fresh, holder=str(fresh["holder"]))

        def _txn(txn: Transaction) -> Claim:
            doc = txn.get(path)
            if doc is not None:
                if doc.get("status") == self.completed:
                    return Claim(ClaimState.COMPLETED, doc)
                if self._held(doc, now):
                    return Claim(ClaimState.BUSY, doc)
            record = self._acquired(doc, extra, now, lease, uuid.uuid4().hex)
            # ``set`` after the read: the transaction settles a race (on Firestore the loser
            # is aborted and retried, then sees the winner's record).
            txn.set(path, record)
            return Claim(ClaimState.ACQUIRED, record, took_over=doc is not None, holder=str(record["holder"]))

        return self.store.run_transaction(_txn)

    def _acquired(self, doc: Doc | None, extra: Doc, now: datetime, lease: timedelta, holder: str) -> Doc:
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
        return record

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
        self,
        path: str,
        *,
        now: datetime,
        result: dict[str, Any] | None = None,
        fields: Doc | None = None,
        holder: str | None = None,
        held_until: datetime | None = None,
        also: Sequence[tuple[str, Doc, bool]] = (),
    ) -> bool:
        """Record the claim completed (replacing the in-progress record) with its ``result``;
        ``also``: plain writes in the same commit, whatever it answers (``delivery.riders``).

        With ``holder``, only while that holder's claim is the record: ``False`` (nothing
        written) when another delivery took it over or it is completed already. That check
        is a transaction, unless ``held_until`` (the lease the holder last wrote) still runs
        beyond ``now`` by ``CLAIM_WAIT_SLACK``: then no claimant can have taken it over
        (taking over needs the lease lapsed on the claimant's clock, skew within the slack)
        and one plain write completes it.
        """
        record = self._completed(now, result, fields)
        if holder is None or (held_until is not None and held_until - CLAIM_WAIT_SLACK > now):
            if also:
                self.store.set_many([(path, record, False), *also])
            else:
                self.store.set(path, record)
            return True

        def _txn(txn: Transaction) -> bool:
            doc = txn.get(path)
            for other, data, merge in also:
                txn.set(other, data, merge=merge)
            if doc is not None and (doc.get("status") == self.completed or doc.get("holder") != holder):
                return False
            txn.set(path, record)
            return True

        return self.store.run_transaction(_txn)

    def await_claim(
        self,
        path: str,
        *,
        clock: Callable[[], datetime],
        lease: timedelta,
        wait: timedelta,
        fields: Doc | None = None,
        poll: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> Claim:
        """``claim``, but a claim another delivery holds is polled for up to ``wait``.

        Returns as soon as the claim is ACQUIRED (free, or its lease lapsed: the holder died)
        or COMPLETED; BUSY only when ``wait`` is spent, or at once when the held lease runs
        beyond it (no renewing holder leaves it that long: a record of an older release).
        """
        patience = wait.total_seconds()
        give_up = monotonic() + patience
        while True:
            now = clock()
            claim = self.claim(path, now=now, lease=lease, fields=fields)
            if claim.state is not ClaimState.BUSY:
                return claim
            left = give_up - monotonic()
            lease_until = claim.record.get("lease_until")
            lapses_in = (lease_until - now).total_seconds() if isinstance(lease_until, datetime) else 0.0
            if left <= 0 or lapses_in > patience:
                return claim
            sleep(max(0.01, min(poll, left)))

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


def claim_wait(lease: timedelta) -> timedelta:
    """How long a redelivery waits for a held layer claim: long enough for a dead holder's lease."""
    return lease + CLAIM_WAIT_SLACK
