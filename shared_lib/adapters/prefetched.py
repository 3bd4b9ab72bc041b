"""A store view that reads a stage's known documents in one round trip (``Store.get_many``).

A stage that reads several documents whose paths it knows before it starts (the context's
sources: the session, the person, the conversation, the agent state, the organisation's
settings and learned persona, the memory statistics) names them once; the first read of any
of them fetches them all with one ``get_many`` (Firestore's ``get_all``: one RPC instead of
one each), and every later read of one of them is answered from that batch. Sources that run
in parallel wait for the one batch rather than each paying a round trip.

What it is not: a cache. It lives for one stage of one turn. A write through it to one of
the documents drops that document from the batch (the next read goes to the store), and a
transaction always reads the store. A failed batch falls back to reading each document on
its own, so one unreadable document fails only the source that reads it, as before.

>>> from shared_lib.adapters.memory_store import MemoryStore
>>> inner = MemoryStore(); inner.set("orgs/a/users/u1", {"level": 2})
>>> view = PrefetchedStore(inner, ["orgs/a/users/u1", "orgs/a/sessions/c1"])
>>> view.get("orgs/a/users/u1"), view.get("orgs/a/sessions/c1")
({'level': 2}, None)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from shared_lib.adapters.doc_copy import copy_doc
from shared_lib.errors import ConfigError
from shared_lib.ports import Doc, Op, Store, Transaction, Vector

T = TypeVar("T")


class PrefetchedStore:
    def __init__(self, inner: Store, paths: Sequence[str]) -> None:
        self._inner = inner
        self._paths = frozenset(paths)
        self._order = list(dict.fromkeys(paths))
        self._lock = threading.Lock()
        self._batch: dict[str, Doc | None] | None = None
        self._failed = False

    def _fetched(self) -> dict[str, Doc | None] | None:
        with self._lock:  # the first reader fetches; the others wait for its answer
            if self._batch is None and not self._failed:
                try:
                    self._batch = dict(self._inner.get_many(self._order))
                except Exception:  # each document is then read on its own, as without the batch
                    self._failed = True
            return self._batch

    def prefetch(self) -> bool:
        """Read the batch now (or wait for the reader that is): whether it is held."""
        return self._fetched() is not None

    def get(self, path: str) -> Doc | None:
        if path in self._paths:
            batch = self._fetched()
            if batch is not None and path in batch:
                doc = batch[path]
                return copy_doc(doc) if doc is not None else None
        return self._inner.get(path)

    def get_many(self, paths: Sequence[str]) -> dict[str, Doc | None]:
        rest = [p for p in paths if p not in self._paths]
        found = self._inner.get_many(rest) if rest else {}
        return {p: found[p] if p in found else self.get(p) for p in paths}

    def _forget(self, path: str) -> None:
        with self._lock:
            if self._batch is not None:
                self._batch.pop(path, None)

    def set(self, path: str, data: Doc, *, merge: bool = False) -> None:
        self._forget(path)
        self._inner.set(path, data, merge=merge)

    def set_many(self, writes: Sequence[tuple[str, Doc, bool]]) -> None:
        for path, _, _ in writes:
            self._forget(path)
        self._inner.set_many(writes)

    def create(self, path: str, data: Doc) -> bool:
        self._forget(path)
        return self._inner.create(path, data)

    def delete(self, path: str) -> None:
        self._forget(path)
        self._inner.delete(path)

    def query(
        self,
        collection: str,
        *,
        where: Sequence[tuple[str, Op, Any]] = (),
        order_by: str | None = None,
        descending: bool = False,
        limit: int | None = None,
        group: bool = False,
    ) -> list[tuple[str, Doc]]:
        return self._inner.query(
            collection, where=where, order_by=order_by, descending=descending, limit=limit, group=group
        )

    def find_nearest(
        self,
        collection: str,
        *,
        field: str,
        vector: Vector,
        limit: int,
        where: Sequence[tuple[str, Op, Any]] = (),
    ) -> list[tuple[str, Doc, float]]:
        find = getattr(self._inner, "find_nearest", None)
        if not callable(find):
            raise ConfigError(f"{type(self._inner).__name__} has no vector search")
        found: list[tuple[str, Doc, float]] = find(
            collection, field=field, vector=vector, limit=limit, where=where
        )
        return found

    def run_transaction(self, fn: Callable[[Transaction], T]) -> T:
        with self._lock:  # what the transaction writes is not in the batch any more
            self._batch, self._failed = None, True
        return self._inner.run_transaction(fn)
