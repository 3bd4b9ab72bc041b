"""Intake: the admin's Pause holds new turns instead of serving them; Resume answers them in order.

The one document ``config/intake`` says what the ingress does with an accepted message:

===========  ========================================================================
``running``  publish it (the document absent reads so: nothing was ever paused)
``paused``   hold it: the webhook is acknowledged (200) and the turn is stored, sealed,
             as ``held_turns/{seq}``, numbered by the document's counter in the same
             transaction, so the held turns have one order across every instance
``draining`` Resume was pressed: the held turns are published in their order; a message
             that arrives meanwhile is still held behind them, so nothing overtakes an
             older turn of its conversation
===========  ========================================================================

``release`` publishes each held turn (its budget admitted anew: the pause is the operator's,
not the turn's backlog), then deletes it and counts it off in one transaction; the last one
out turns the document ``running`` in that same transaction, where a new ``hold`` would have
counted itself in, so no turn is left behind. A crash between the publish and the delete
leaves the turn held and the next release publishes it again: the layers' claims on the turn
id make that second message a redelivery, answered once. Release runs when Resume is pressed
(again, if an earlier run died) and on each scheduler heartbeat while the document says
``draining``.

The ingress reads the document at most once per ``ttl`` (the flags cache's lifetime,
``CHARTER_FLAGS_TTL``) while it says ``running``, and on every accepted message while it says
anything else: a Pause holds every message from at most one flags lifetime after it was pressed,
in every instance (as a flags change takes effect), and a running ingress pays no read per
message. Once paused, every message reads it again, so Resume's ``draining`` is seen at once and
nothing overtakes a held turn. Held envelopes carry what the person wrote; they are sealed with
their organisation's vault key when the runtime has one, and live until released.

>>> from datetime import UTC, datetime
>>> from shared_lib.adapters.memory_store import MemoryStore
>>> store, now = MemoryStore(), datetime(2026, 11, 25, 9, 0, tzinfo=UTC)
>>> holding(store), pause(store, author="u-kazu", reason="drill", now=now), holding(store)
(False, True, True)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from cryptography.fernet import MultiFernet

from shared_lib.observability.logs import log_event
from shared_lib.ports import Bus, Store, Transaction
from shared_lib.privacy.org_vault import OrgVault
from shared_lib.turn.envelope import Turn

INTAKE_DOC = "config/intake"
HELD_COLLECTION = "held_turns"
State = Literal["running", "paused", "draining"]
# A release publishes at most this many per read; it reads again until none is left.
BATCH = 50


@dataclass(frozen=True)
class Released:
    """What one ``release`` did: turns published, and the state it left."""

    published: int
    state: State


def state_of(doc: dict[str, Any] | None) -> State:
    raw = (doc or {}).get("state")
    return raw if raw in ("paused", "draining") else "running"


def read(store: Store) -> dict[str, Any]:
    """The intake document as the dashboard shows it (``state``, ``held``, who and why)."""
    doc = store.get(INTAKE_DOC) or {}
    return {**doc, "state": state_of(doc), "held": int(doc.get("held", 0))}


def holding(store: Store) -> bool:
    """Whether the ingress holds a message now (one read, uncached)."""
    return state_of(store.get(INTAKE_DOC)) != "running"


class IntakeGate:
    """The ingress's view of ``config/intake`` (``Runtime.intake``): a ``running`` read is trusted
    for ``ttl`` seconds (the flags cache's lifetime), any other state is read again on every
    message. ``monotonic`` is the clock of that lifetime (the hops bench gives a virtual one)."""

    def __init__(self, ttl: float = 0.0, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.ttl, self.monotonic = ttl, monotonic
        self._running_seen: float | None = None

    def holding(self, store: Store) -> bool:
        seen = self._running_seen
        if self.ttl > 0 and seen is not None and self.monotonic() - seen < self.ttl:
            return False
        held = holding(store)
        self._running_seen = None if held else self.monotonic()
        return held


def pause(store: Store, *, author: str, reason: str, now: datetime) -> bool:
    """Hold every new turn from now on; ``False`` when intake was already paused."""

    def txn(t: Transaction) -> bool:
        doc = t.get(INTAKE_DOC) or {}
        if state_of(doc) == "paused":
            return False
        t.set(
            INTAKE_DOC,
            {
                **doc,
                "state": "paused",
                "held": int(doc.get("held", 0)),
                "paused_by": author,
                "pause_reason": reason,
                "paused_at": now,
            },
        )
        return True

    return bool(store.run_transaction(txn))


def resume(store: Store, *, author: str, reason: str, now: datetime) -> bool:
    """Let the held turns go (``release`` publishes them); ``False`` when nothing was paused."""

    def txn(t: Transaction) -> bool:
        doc = t.get(INTAKE_DOC)
        if state_of(doc) != "paused" or doc is None:
            return False
        held = int(doc.get("held", 0))
        t.set(
            INTAKE_DOC,
            {
                **doc,
                "state": "draining" if held else "running",
                "resumed_by": author,
                "resume_reason": reason,
                "resumed_at": now,
            },
        )
        return True

    return bool(store.run_transaction(txn))


def hold(store: Store, turn: Turn, *, vault: MultiFernet | None, now: datetime) -> int | None:
    """Store ``turn`` behind the held ones; its number, or ``None`` when intake runs (publish it)."""
    body = turn.model_dump_json().encode()
    sealed = vault is not None
    stored = vault.encrypt(body).decode() if vault is not None else body.decode()

    def txn(t: Transaction) -> int | None:
        doc = t.get(INTAKE_DOC)
        if state_of(doc) == "running" or doc is None:
            return None
        seq = int(doc.get("seq", 0)) + 1
        t.set(INTAKE_DOC, {**doc, "seq": seq, "held": int(doc.get("held", 0)) + 1})
        t.create(
            held_path(seq),
            {
                "seq": seq,
                "turn_id": turn.turn_id,
                "org_id": turn.org_id,
                "user_id": turn.user_id,
                "ordering_key": turn.conversation_key,
                "sealed": sealed,
                "body": stored,
                "held_at": now,
            },
        )
        return seq

    seq = store.run_transaction(txn)
    if seq is not None:
        log_event("turn_held", turn=turn, layer="ingress", seq=seq)
    return seq


def held_path(seq: int) -> str:
    return f"{HELD_COLLECTION}/{seq:012d}"


Publish = Callable[[Turn], None]


def release(store: Store, publish: Publish, *, vault: OrgVault | None, now: datetime) -> Released:
    """Publish every held turn in its order (``publish`` sends one turn to ``turns.received``);
    a sealed one is opened with its organisation's cipher of ``vault``."""
    published = 0
    while state_of(doc := store.get(INTAKE_DOC)) == "draining":
        fence = int((doc or {}).get("seq", 0))  # the last number a hold gave before this read
        rows = store.query(HELD_COLLECTION, order_by="seq", limit=BATCH)
        if not rows:
            _finish_if_no_new_hold(store, fence)
            continue
        for doc_id, row in rows:
            turn = _open(row, vault)
            # the pause was the operator's: the turn's budget starts now, with what it was given
            turn.budget = turn.budget.model_copy(
                update={"admitted_at": now, "last_done_at": now, "spent_ms": 0.0, "queued_ms": 0.0}
            )
            publish(turn)
            if _count_off(store, f"{HELD_COLLECTION}/{doc_id}"):
                published += 1
                log_event("turn_released", turn=turn, layer="admin", seq=row.get("seq"))
    return Released(published, state_of(store.get(INTAKE_DOC)))


def _open(row: dict[str, Any], vault: OrgVault | None) -> Turn:
    body = str(row["body"])
    if row.get("sealed"):
        if vault is None:
            raise RuntimeError("a held turn is sealed and this process has no vault key")
        body = vault.for_org(str(row.get("org_id") or "")).decrypt(body.encode()).decode()
    return Turn.model_validate_json(body)


def _count_off(store: Store, path: str) -> bool:
    """Delete one released turn and count it off; the last one out sets intake running."""

    def txn(t: Transaction) -> bool:
        doc = t.get(INTAKE_DOC) or {}
        if t.get(path) is None:
            return False  # another release counted it off
        held = max(0, int(doc.get("held", 0)) - 1)
        update: dict[str, Any] = {**doc, "held": held}
        if held == 0 and state_of(doc) == "draining":
            update["state"] = "running"
        t.set(INTAKE_DOC, update)
        t.delete(path)
        return True

    return bool(store.run_transaction(txn))


def _finish_if_no_new_hold(store: Store, fence: int) -> None:
    """No held turn was left to read: intake runs again, unless a hold numbered one after
    ``fence`` meanwhile (the loop reads again). The rows are the truth, not the count: a held
    turn deleted by other means (a person's data purge) never leaves intake draining."""

    def txn(t: Transaction) -> None:
        doc = t.get(INTAKE_DOC) or {}
        if state_of(doc) == "draining" and int(doc.get("seq", 0)) == fence:
            t.set(INTAKE_DOC, {**doc, "state": "running", "held": 0})

    store.run_transaction(txn)


def bus_publisher(bus: Bus, topic: str, store: Store, *, blob_ttl_days: int) -> Publish:
    """Publish a released turn as the ingress would have: its conversation as the ordering key."""

    def publish(turn: Turn) -> None:
        data, attrs = turn.to_message("ingress", store, blob_ttl_days=blob_ttl_days)
        bus.publish(topic, data, attrs, ordering_key=turn.conversation_key)

    return publish
