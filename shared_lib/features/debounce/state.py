"""Debounce (seed 001 §7.3): a burst of messages from one person in one room becomes one turn.

The ingress writes every message of a debounced channel into the buffer of its (organisation,
channel, room, sender) as a document of its own, ``orgs/{org}/debounce_buffers/{id}/debounce_entries/
{entry}`` (one write, keyed by the webhook event: a burst of concurrent webhooks never contends
on one document, so the ingress stays fast), then publishes the message's turn as always: it
waits for nothing. The context layer, the first consumer, settles each turn against the
buffer's entries (``settle``; plain reads, a transaction only to claim):

* its message is already in another turn's batch, or a later unclaimed message of the same
  buffer exists: the turn is **absorbed** (it ends without a reply, recorded as merged into
  that later turn, which takes its text);
* else it waits until its own message is ``window`` seconds old, reads again and, still the
  last, **leads**: in one transaction it claims every unclaimed message up to its own (the
  entries are marked with its turn id), and goes on as one turn with all their texts in order.
  A redelivered leader, or one that crashed after its claim, finds its batch by its turn id.

Nothing is lost: an absorbed message is either in a batch already or older than an unclaimed
message whose turn will claim it (or be absorbed in turn, by a later unclaimed one, until the
last claims them all); a message arriving after a batch was claimed starts a new batch. A lone
message waits at most the window. Under ordered delivery a waiting leader holds its
conversation's next message back for at most the window, well inside the claim's lease (renewed
while the layer runs) and the push's acknowledgement deadline; the window is capped at
``MAX_WINDOW_SECONDS`` (the seed's ``debounce_max_ms``).

The texts are personal data: the buffer keeps them encrypted with the vault's key (Fernet, the
runtime's ``vault``) and the document lives ``KEEP`` past its last message (its TTL). Without a
key nothing is buffered: every message is its own turn. A buffer holds at most ``MAX_ENTRIES``
unclaimed messages and no more text than one turn may carry (``MAX_TEXT_CHARS``): a message
over either is not buffered and is answered alone, after the batch before it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from cryptography.fernet import MultiFernet

from shared_lib import collections
from shared_lib.ports import Store, Transaction
from shared_lib.turn.inbound import MAX_TEXT_CHARS

MAX_WINDOW_SECONDS = 5.0  # seed 001 §7.3: debounce_max_ms = 5000
MAX_ENTRIES = 20
SEPARATOR = "\n"  # the batch's texts, in order, one per line, as the turn's text
# How long a claimed entry stays (a leader redelivered after a crash finds its batch) and the
# buffer's TTL past its last message.
KEEP = timedelta(hours=1)
# An unclaimed entry this much older than its window has no turn coming (its publish failed
# and the ingress died before taking it back): it absorbs nothing.
STALE_AFTER = timedelta(minutes=5)
# At most this many waits: a clock that lags the ingress's could otherwise keep a turn waiting.
MAX_WAITS = 3

Role = Literal["alone", "absorbed", "leader"]


def window(seconds: Mapping[str, float], channel: str) -> float:
    """The channel's debounce window (``settings.debounce_seconds``), capped; 0: not debounced."""
    return max(0.0, min(float(seconds.get(channel, 0.0)), MAX_WINDOW_SECONDS))


def buffer_path(org_id: str, channel: str, room_id: str, user_id: str) -> str:
    key = hashlib.sha256(f"{channel}\x00{room_id}\x00{user_id}".encode()).hexdigest()[:40]
    return collections.collection_path("debounce_entries", org=org_id, buffer=key)


def _entry_path(path: str, entry_id: str) -> str:
    return f"{path}/{entry_id}"


SCAN = 100  # at most this many entries a read returns (unclaimed ones are minutes old at most)


def entries(store: Store, path: str) -> list[dict[str, Any]]:
    """The buffer's latest entries (each with its ``id``), newest first."""
    docs = store.query(path, order_by="at", descending=True, limit=SCAN)
    return [{**d, "id": str(d.get("id") or doc_id)} for doc_id, d in docs]


def _where(store: Store, path: str, field: str, value: Any, limit: int = SCAN) -> list[dict[str, Any]]:
    docs = store.query(path, where=[(field, "==", value)], limit=limit)
    return [{**d, "id": str(d.get("id") or doc_id)} for doc_id, d in docs]


def _relevant(store: Store, path: str, turn_id: str) -> list[dict[str, Any]]:
    """What a turn's look needs, by equality reads only (no claimed history): the unclaimed
    entries, the turn's own, and its batch when it claimed one already."""
    found = {e["id"]: e for e in _where(store, path, "batch", None)}
    for own in _where(store, path, "turn_id", turn_id, limit=1):
        found[own["id"]] = own
        if own.get("batch") == turn_id:
            found.update({e["id"]: e for e in _where(store, path, "batch", turn_id)})
    return list(found.values())


def append(
    store: Store,
    path: str,
    *,
    entry_id: str,
    turn_id: str,
    message_id: str,
    text: str,
    now: datetime,
    cipher: MultiFernet,
) -> bool:
    """Add a message to its buffer (a redelivery of the same event replaces its unclaimed
    entry); ``False`` when the buffer is full and the message goes alone."""
    entry = {
        "id": entry_id,
        "turn_id": turn_id,
        "message_id": message_id,
        "at": now,
        "chars": len(text),
        "text": cipher.encrypt(text.encode()).decode(),
        "batch": None,
        "expires_at": now + KEEP,
    }
    existing = store.get(_entry_path(path, entry_id))
    if existing is not None and existing.get("batch"):
        return False  # already in a batch: the turn that claimed it answers it
    open_ = [e for e in _where(store, path, "batch", None, MAX_ENTRIES + 1) if e["id"] != entry_id]
    chars = sum(int(e.get("chars", 0)) + len(SEPARATOR) for e in open_) + len(text)
    if len(open_) >= MAX_ENTRIES or chars > MAX_TEXT_CHARS:
        return False
    store.set(_entry_path(path, entry_id), entry)
    return True


def remove(store: Store, path: str, entry_id: str) -> None:
    """Take back an unclaimed entry whose turn was not published."""
    doc = store.get(_entry_path(path, entry_id))
    if doc is not None and not doc.get("batch"):
        store.delete(_entry_path(path, entry_id))


@dataclass(frozen=True)
class Settled:
    """How a turn came out of the debounce: ``alone`` (its message was not buffered),
    ``absorbed`` into ``merged_into``, or ``leader`` of ``turn_ids`` (its own last) with their
    ``texts`` and ``message_ids`` in order. ``waited`` is the seconds it slept."""

    role: Role
    merged_into: str | None = None
    turn_ids: tuple[str, ...] = ()
    message_ids: tuple[str, ...] = ()
    texts: tuple[str, ...] = field(default=(), repr=False)
    waited: float = 0.0
    entry_ids: tuple[str, ...] = field(default=(), repr=False)

    def section(self) -> dict[str, Any]:
        """What the turn's context section and the record keep (no texts)."""
        out: dict[str, Any] = {"role": self.role, "waited_ms": round(self.waited * 1000, 1)}
        if self.merged_into:
            out["merged_into"] = self.merged_into
        if self.turn_ids:
            out["turn_ids"] = list(self.turn_ids)
            out["message_ids"] = list(self.message_ids)
        return out


@dataclass(frozen=True)
class _Look:
    settled: Settled | None  # decided; else wait ``wait`` seconds and look again
    wait: float = 0.0
    claimed: bool = False  # a new leader marked the entries: write them back


def _order(entry: Mapping[str, Any]) -> tuple[datetime, str]:
    return entry["at"], str(entry["id"])


def _look(entries: list[dict[str, Any]], turn_id: str, now: datetime, window_s: float, force: bool) -> _Look:
    """The pure decision over the buffer's entries; a new leader's claim marks ``entries``."""
    own = next((e for e in entries if e["turn_id"] == turn_id), None)
    if own is None:
        return _Look(Settled("alone"))
    if own.get("batch") and own["batch"] != turn_id:
        return _Look(Settled("absorbed", merged_into=str(own["batch"])))
    if own.get("batch") == turn_id:  # a redelivery, or a restart after the claim: the same batch
        return _Look(_leader([e for e in entries if e.get("batch") == turn_id]))
    stale = now - timedelta(seconds=window_s) - STALE_AFTER
    later = sorted(
        (e for e in entries if not e.get("batch") and _order(e) > _order(own) and e["at"] >= stale),
        key=_order,
    )
    if later:
        return _Look(Settled("absorbed", merged_into=str(later[0]["turn_id"])))
    due = own["at"] + timedelta(seconds=window_s)
    if now < due and not force:
        return _Look(None, wait=(due - now).total_seconds())
    batch = [e for e in entries if not e.get("batch") and _order(e) <= _order(own)]
    for e in batch:
        e["batch"] = turn_id
    return _Look(_leader(batch), claimed=True)


def _leader(batch: list[dict[str, Any]]) -> Settled:
    ordered = sorted(batch, key=_order)
    return Settled(
        "leader",
        turn_ids=tuple(str(e["turn_id"]) for e in ordered),
        message_ids=tuple(str(e["message_id"]) for e in ordered),
        texts=tuple(str(e["text"]) for e in ordered),  # still encrypted: ``settle`` decrypts
        entry_ids=tuple(str(e["id"]) for e in ordered),
    )


def settle(
    store: Store,
    path: str,
    turn_id: str,
    *,
    window_seconds: float,
    clock: Callable[[], datetime],
    sleep: Callable[[float], None],
    cipher: MultiFernet,
) -> Settled:
    """Settle ``turn_id`` against its buffer: alone, absorbed, or the leader of its batch
    (claimed in one transaction, keyed by the turn id, so a redelivery gets the same batch)."""
    waited, attempt = 0.0, 0
    while True:
        now, force = clock(), attempt >= MAX_WAITS
        look = _look(_relevant(store, path, turn_id), turn_id, now, window_seconds, force)
        if look.claimed and look.settled is not None and not _claim(store, path, turn_id, look.settled, now):
            continue  # another leader took an entry first: look again
        if (s := look.settled) is not None:
            texts = tuple(cipher.decrypt(t.encode()).decode() for t in s.texts)
            return Settled(s.role, s.merged_into, s.turn_ids, s.message_ids, texts, waited)
        sleep(look.wait)
        waited, attempt = waited + look.wait, attempt + 1


def _claim(store: Store, path: str, turn_id: str, batch: Settled, now: datetime) -> bool:
    """Mark the batch's entries as ``turn_id``'s in one transaction; ``False`` when one of them
    is gone or another turn's already."""
    ids = list(batch.entry_ids)

    def _mark(txn: Transaction) -> bool:
        found = [(i, txn.get(_entry_path(path, i))) for i in ids]
        if any(doc is None or doc.get("batch") not in (None, turn_id) for _, doc in found):
            return False
        for i, doc in found:
            txn.set(_entry_path(path, i), {**(doc or {}), "batch": turn_id, "expires_at": now + KEEP})
        return True

    return bool(store.run_transaction(_mark))
