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

**Typing order.** Entries are ordered by the message's own time (``sent``: when the provider
says it was sent, else ``at``: when the ingress got it), then by arrival: a message typed first
but delivered second is still the batch's first line, and "later" (what absorbs) is later in
typing order. The wait is on the ingress's clock: a leader waits until its own message *arrived*
``window`` seconds ago.

**An answer to a pending confirmation** (「はい」「いいえ」 and the policy's other yes/no forms,
``state_answer``) is never gathered: the ingress writes it as a *barrier* entry (``prompt``, its
text not kept), which its own turn settles at once (role ``answer``: no wait, nothing claimed);
it absorbs nothing and is absorbed by nothing, and the entries before it and after it are
separate batches (an earlier entry is not absorbed by a later one across it, a leader claims only
back to it). One exception keeps the promise below: an unclaimed entry before the barrier that
*arrived* before the leader was looked at already (ordered delivery) and can only have been
absorbed, so the leader takes it rather than lose it (a barrier written after that look).

The window itself follows the sender (``state_pace``): ``settle`` takes it as a number or as a
function called once, only when the turn must wait; the batch's leader records the batch's
times in the sender's pace inside its claim's transaction.

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
from shared_lib.features.debounce import state_pace

# re-exported: the ingress's one import of the room stays this module
from shared_lib.features.debounce.state_answer import answers_pending as answers_pending
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

Role = Literal["alone", "absorbed", "leader", "answer"]


def window(seconds: Mapping[str, float], channel: str) -> float:
    """The channel's debounce window (``settings.debounce_seconds``), capped; 0: not debounced."""
    return max(0.0, min(float(seconds.get(channel, 0.0)), MAX_WINDOW_SECONDS))


def buffer_key(channel: str, room_id: str, user_id: str) -> str:
    """The buffer's id (and its pace document's): a hash, no personal id in a path."""
    return hashlib.sha256(f"{channel}\x00{room_id}\x00{user_id}".encode()).hexdigest()[:40]


def buffer_path(org_id: str, channel: str, room_id: str, user_id: str) -> str:
    key = buffer_key(channel, room_id, user_id)
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
    sent: datetime | None = None,
    prompt: bool = False,
) -> bool:
    """Add a message to its buffer (a redelivery of the same event replaces its unclaimed
    entry); ``False`` when the buffer is full and the message goes alone. ``sent`` is the
    message's own time (typing order); ``prompt`` writes an answer to a pending confirmation
    as a barrier, without its text (never gathered, always written)."""
    entry = {
        "id": entry_id,
        "turn_id": turn_id,
        "message_id": message_id,
        "at": now,
        "sent": sent,
        "prompt": prompt,
        "chars": 0 if prompt else len(text),
        "text": None if prompt else cipher.encrypt(text.encode()).decode(),
        "batch": None,
        "expires_at": now + KEEP,
    }
    existing = store.get(_entry_path(path, entry_id))
    if existing is not None and existing.get("batch"):
        return False  # already in a batch: the turn that claimed it answers it
    if not prompt:
        scan = _where(store, path, "batch", None, SCAN)
        open_ = [e for e in scan if e["id"] != entry_id and not e.get("prompt")]
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
    ``texts`` and ``message_ids`` in order, or the ``answer`` to a pending confirmation (at
    once, alone). ``waited`` is the seconds it slept, ``window`` the window it used."""

    role: Role
    merged_into: str | None = None
    turn_ids: tuple[str, ...] = ()
    message_ids: tuple[str, ...] = ()
    texts: tuple[str, ...] = field(default=(), repr=False)
    waited: float = 0.0
    entry_ids: tuple[str, ...] = field(default=(), repr=False)
    times: tuple[datetime, ...] = field(default=(), repr=False)  # the batch's, for the pace
    window: float = 0.0  # the window it was settled with (0: none needed)

    def section(self) -> dict[str, Any]:
        """What the turn's context section and the record keep (no texts)."""
        out: dict[str, Any] = {"role": self.role, "waited_ms": round(self.waited * 1000, 1)}
        if self.window:
            out["window_ms"] = round(self.window * 1000, 1)
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


def _typed(entry: Mapping[str, Any]) -> datetime:
    sent = entry.get("sent")
    return sent if isinstance(sent, datetime) else entry["at"]  # type: ignore[no-any-return]


def _order(entry: Mapping[str, Any]) -> tuple[datetime, datetime, str]:
    """Typing order: the message's own time, then its arrival, then its id."""
    return _typed(entry), entry["at"], str(entry["id"])


def _answer(own: Mapping[str, Any]) -> Settled:
    return Settled("answer", turn_ids=(str(own["turn_id"]),), message_ids=(str(own["message_id"]),))


def _look(entries: list[dict[str, Any]], turn_id: str, now: datetime, window_s: float, force: bool) -> _Look:
    """The pure decision over the buffer's entries; a new leader's claim marks ``entries``."""
    own = next((e for e in entries if e["turn_id"] == turn_id), None)
    if own is None:
        return _Look(Settled("alone"))
    if own.get("prompt"):
        return _Look(_answer(own))
    if own.get("batch") and own["batch"] != turn_id:
        return _Look(Settled("absorbed", merged_into=str(own["batch"])))
    if own.get("batch") == turn_id:  # a redelivery, or a restart after the claim: the same batch
        return _Look(_leader([e for e in entries if e.get("batch") == turn_id]))
    mine = _order(own)
    barriers = sorted(_order(e) for e in entries if e.get("prompt"))
    after = next((b for b in barriers if b > mine), None)
    before = max((b for b in barriers if b < mine), default=None)
    open_ = [e for e in entries if not e.get("batch") and not e.get("prompt")]
    stale = now - timedelta(seconds=window_s) - STALE_AFTER
    later = sorted(
        (e for e in open_ if mine < _order(e) and (after is None or _order(e) < after) and e["at"] >= stale),
        key=_order,
    )
    if later:
        return _Look(Settled("absorbed", merged_into=str(later[0]["turn_id"])))
    due = own["at"] + timedelta(seconds=window_s)
    if now < due and not force:
        return _Look(None, wait=(due - now).total_seconds())
    batch = [
        e
        for e in open_
        if _order(e) <= mine and (before is None or _order(e) > before or e["at"] < own["at"])
    ]
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
        times=tuple(_typed(e) for e in ordered),
    )


def settle(
    store: Store,
    path: str,
    turn_id: str,
    *,
    window_seconds: float | Callable[[], float],
    clock: Callable[[], datetime],
    sleep: Callable[[float], None],
    cipher: MultiFernet,
    pace: str | None = None,
) -> Settled:
    """Settle ``turn_id`` against its buffer: alone, absorbed, the leader of its batch (claimed
    in one transaction, keyed by the turn id, so a redelivery gets the same batch), or an
    answer to a confirmation (at once). ``window_seconds`` may be a function (the sender's
    rhythm, one read), called once and only when the window matters; ``pace``, the sender's
    pace document, gets the batch's times in the claim's transaction."""
    waited, attempt = 0.0, 0
    window = None if callable(window_seconds) else float(window_seconds)
    while True:
        now, force = clock(), attempt >= MAX_WAITS
        found = _relevant(store, path, turn_id)
        if window is None and callable(window_seconds) and _open_own(found, turn_id):
            window = float(window_seconds())  # only a turn that may wait or absorb needs it
        look = _look(found, turn_id, now, window or 0.0, force)
        if (
            look.claimed
            and look.settled is not None
            and not _claim(store, path, turn_id, look.settled, now, pace)
        ):
            continue  # another leader took an entry first: look again
        if (s := look.settled) is not None:
            texts = tuple(cipher.decrypt(t.encode()).decode() for t in s.texts)
            w = (window or 0.0) if s.role == "leader" else 0.0
            return Settled(s.role, s.merged_into, s.turn_ids, s.message_ids, texts, waited, window=w)
        sleep(look.wait)
        waited, attempt = waited + look.wait, attempt + 1


def _open_own(found: list[dict[str, Any]], turn_id: str) -> bool:
    own = next((e for e in found if e["turn_id"] == turn_id), None)
    return own is not None and not own.get("prompt") and not own.get("batch")


def _claim(store: Store, path: str, turn_id: str, batch: Settled, now: datetime, pace: str | None) -> bool:
    """Mark the batch's entries as ``turn_id``'s in one transaction, and fold their times into
    the sender's ``pace``; ``False`` when one of them is gone or another turn's already."""
    ids = list(batch.entry_ids)

    def _mark(txn: Transaction) -> bool:
        found = [(i, txn.get(_entry_path(path, i))) for i in ids]
        if any(doc is None or doc.get("batch") not in (None, turn_id) for _, doc in found):
            return False
        rhythm = txn.get(pace) if pace else None  # every read before the first write
        for i, doc in found:
            txn.set(_entry_path(path, i), {**(doc or {}), "batch": turn_id, "expires_at": now + KEEP})
        if pace:
            txn.set(pace, state_pace.folded(rhythm, batch.times, now))
        return True

    return bool(store.run_transaction(_mark))
