"""A stage's end state in one commit: the responder's session, agent state and reply history.

The responder's after steps each wrote on their own: the session (a transaction: begin, read,
commit), the agent state (another) and the reply's history (a batch). Inside ``opened`` they
are gathered instead, and committed together when the stage's steps are done, in one
transaction: begin, the documents read, one commit carrying every write — all or none.

* ``deferring(store)`` is the store an after step writes through: its ``run_transaction`` and
  ``set_many`` join the open gathering (returning ``None``); with none open, they run at once.
* ``run(store, part, then)``: a transaction part whose result the step needs (``then`` gets it
  after the commit).
* The documents the parts say they read (``reads``) are read in one batch (``get_many`` within
  the transaction, where the adapter has it): the session and the agent state, one round trip.
* Each part reads through a buffer: a document written by an earlier part is read back from
  the buffer, every write reaches the real transaction after the last read (Firestore reads
  first, then writes), so parts written for a transaction of their own compose unchanged.
* A failure before the end (a send that raises) commits nothing: the redelivery runs the
  steps again, as it would have run the ones that had committed.

>>> from shared_lib.adapters.memory_store import MemoryStore
>>> store = MemoryStore()
>>> def bump(txn):
...     doc = txn.get("orgs/a/sessions/k") or {"n": 0}
...     txn.set("orgs/a/sessions/k", {"n": doc["n"] + 1})
>>> with opened(store):
...     deferring(store).run_transaction(bump)
...     deferring(store).run_transaction(bump)
>>> store.get("orgs/a/sessions/k")
{'n': 2}
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from shared_lib.adapters.doc_copy import copy_doc
from shared_lib.ports import Doc, Store, Transaction, read_together

T = TypeVar("T")
_MISSING = object()


class _Buffered:
    """A transaction whose writes wait for the end: reads go to the store's transaction (or
    to a document written earlier in it), writes are applied in order by ``flush``."""

    def __init__(self, txn: Transaction, reads: Sequence[str] = ()) -> None:
        self._txn = txn
        self._written: dict[str, Any] = {}  # path -> the document as written (None: deleted)
        self._writes: list[Callable[[Transaction], None]] = []
        self._read: dict[str, Doc | None] = {}
        if len(set(reads)) > 1:  # one declared document is read when a part asks for it
            self._read = read_together(txn, reads)

    def get(self, path: str) -> Doc | None:
        doc = self._written.get(path, _MISSING)
        if doc is _MISSING:
            if path in self._read:
                return copy_doc(self._read[path])
            return self._txn.get(path)
        if doc is ...:  # a merge of unknown base: never guessed
            raise RuntimeError(f"read after a merged write of {path} in one commit")
        return copy_doc(doc)  # type: ignore[no-any-return]

    def set(self, path: str, data: Doc, *, merge: bool = False) -> None:
        self._written[path] = ... if merge else copy_doc(data)
        self._writes.append(lambda txn: txn.set(path, data, merge=merge))

    def create(self, path: str, data: Doc) -> None:
        self._written[path] = copy_doc(data)
        self._writes.append(lambda txn: txn.create(path, data))

    def delete(self, path: str) -> None:
        self._written[path] = None
        self._writes.append(lambda txn: txn.delete(path))

    def flush(self) -> None:
        for write in self._writes:
            write(self._txn)


class Gathered:
    """What the after steps gave the end commit: transaction parts and plain writes, in order."""

    def __init__(self) -> None:
        self.parts: list[tuple[Callable[[Transaction], Any], Callable[[Any], None] | None]] = []
        self.batches: list[list[tuple[str, Doc, bool]]] = []  # the parts that only write, as batches
        self.reads: list[str] = []  # what the parts said they read: one batched read for them all

    def add(
        self,
        part: Callable[[Transaction], Any],
        then: Callable[[Any], None] | None = None,
        reads: Sequence[str] = (),
    ) -> None:
        self.parts.append((part, then))
        self.reads += reads

    def add_batch(self, writes: Sequence[tuple[str, Doc, bool]]) -> None:
        batch = list(writes)

        def _write(txn: Transaction) -> None:
            for path, doc, merge in batch:
                txn.set(path, doc, merge=merge)

        self.parts.append((_write, None))
        self.batches.append(batch)

    def commit(self, store: Store) -> None:
        """Every part in one transaction; plain writes alone in one batch; nothing, no round trip."""
        if not self.parts:
            return
        if len(self.batches) == len(self.parts):  # nothing to read: a batch is one commit, no begin
            store.set_many([w for batch in self.batches for w in batch])
            return

        def _txn(txn: Transaction) -> list[Any]:
            buffered = _Buffered(txn, self.reads)  # a retry starts again from a fresh buffer
            results = [part(buffered) for part, _ in self.parts]
            buffered.flush()
            return results

        results = store.run_transaction(_txn)
        for (_, then), result in zip(self.parts, results, strict=True):
            if then is not None:
                then(result)


_open: contextvars.ContextVar[Gathered | None] = contextvars.ContextVar("turn_end", default=None)


@contextmanager
def opened(store: Store) -> Iterator[Gathered]:
    """Gather the block's deferred writes and commit them at its end (not when it raises)."""
    gathered = Gathered()
    token = _open.set(gathered)
    try:
        yield gathered
    finally:
        _open.reset(token)
    gathered.commit(store)


def run(
    store: Store, part: Callable[[Transaction], T], then: Callable[[T], None], *, reads: Sequence[str] = ()
) -> None:
    """``part`` in the open end commit (``then`` given its result after it), else at once;
    ``reads``: the documents it reads, read with the other parts' in one batch."""
    gathered = _open.get()
    if gathered is None:
        then(store.run_transaction(part))
    else:
        gathered.add(part, then, reads)  # type: ignore[arg-type]


class _Deferring:
    """``store`` whose transactions and batches join the open end commit."""

    def __init__(self, store: Store, reads: Sequence[str]) -> None:
        self._store = store
        self._reads = reads

    def run_transaction(self, fn: Callable[[Transaction], Any]) -> Any:
        gathered = _open.get()
        if gathered is None:
            return self._store.run_transaction(fn)
        gathered.add(fn, reads=self._reads)
        return None

    def set_many(self, writes: Sequence[tuple[str, Doc, bool]]) -> None:
        gathered = _open.get()
        if gathered is None:
            self._store.set_many(writes)
            return
        gathered.add_batch(writes)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def deferring(store: Store, *, reads: Sequence[str] = ()) -> Store:
    """The store an after step writes through so its transaction or batch joins the end commit;
    ``reads``: the documents its transactions read, read with the other parts' in one batch."""
    return _Deferring(store, reads)  # type: ignore[return-value]
