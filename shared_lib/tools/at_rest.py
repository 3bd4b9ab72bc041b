"""What a handler writes, as the store keeps it: masked and sealed, and expiring where it is
personal data.

Handlers write only through the transaction the executor gives them, so this one wrapper is
where the sanitiser's rules meet every tool effect in the store (memories, store tasks,
goals, announcements, ...): each document is masked before it is written, with the values it
masked sealed in the same document under the vault's key (``shared_lib.privacy.sealing``: what a
person gave to keep is never thrown away; only a reader the handler allows opens it), and a
document of a collection with ``retention: "org"`` gets ``expires_at`` = now + the
organisation's retention. The handler itself keeps the real values (restored from the
vault by the executor) for what leaves the store: a task sent to ChatWork carries them.

>>> from datetime import UTC, datetime, timedelta
>>> from shared_lib.adapters.memory_store import MemoryStore
>>> store, now = MemoryStore(), datetime(2026, 1, 1, tzinfo=UTC)
>>> store.run_transaction(lambda txn: AtRestTransaction(txn, now=now, retention=timedelta(days=30)).set(
...     "orgs/o/memories/m1", {"content": "電話は 090-1234-5678", "user_id": "u1"}))
>>> doc = store.get("orgs/o/memories/m1")
>>> doc["content"], doc["expires_at"] - now, "sealed" in doc
('電話は [PHONE]', datetime.timedelta(days=30), False)
"""

from __future__ import annotations

from datetime import datetime, timedelta

from cryptography.fernet import MultiFernet

from shared_lib import collections
from shared_lib.ports import Doc, Transaction
from shared_lib.privacy.sealing import KEPT_COLLECTIONS, seal


def at_rest(
    path: str, data: Doc, *, now: datetime, retention: timedelta | None, cipher: MultiFernet | None = None
) -> Doc:
    """``data`` masked (its values sealed with ``cipher``; without one, masked only), with the
    retention's ``expires_at`` when ``path`` is personal data."""
    entry = collections.of_path(path)
    kept = entry is not None and entry.name in KEPT_COLLECTIONS  # an announcement is the org's record
    stored: Doc = seal(data, cipher if kept else None)
    if retention is not None and entry is not None and entry.retention == "org" and entry.ttl_field:
        stored[entry.ttl_field] = now + retention
    return stored


class AtRestTransaction:
    """A ``Transaction`` whose writes are stored ``at_rest``; reads and deletes pass through."""

    def __init__(
        self,
        txn: Transaction,
        *,
        now: datetime,
        retention: timedelta | None,
        cipher: MultiFernet | None = None,
    ) -> None:
        self._txn, self._now, self._retention, self._cipher = txn, now, retention, cipher

    def get(self, path: str) -> Doc | None:
        return self._txn.get(path)

    def set(self, path: str, data: Doc, *, merge: bool = False) -> None:
        self._txn.set(
            path,
            at_rest(path, data, now=self._now, retention=self._retention, cipher=self._cipher),
            merge=merge,
        )

    def create(self, path: str, data: Doc) -> None:
        self._txn.create(
            path, at_rest(path, data, now=self._now, retention=self._retention, cipher=self._cipher)
        )

    def delete(self, path: str) -> None:
        self._txn.delete(path)
