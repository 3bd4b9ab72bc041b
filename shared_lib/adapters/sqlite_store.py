"""SQLite ``Store``: the embedded adapter that persists (the demo, operator commands).

One table of documents keyed by path, each stored as type-tagged JSON. Filters and
ordering run in Python after decoding, with Firestore's rules (``document_values``);
``order_by`` and an inequality filter leave out documents without the field, an
inequality filter without ``order_by`` orders by its field, ties and unordered results go
by path.

Safe across threads and processes on one file: each thread has its own connection, the
database is in WAL mode (readers never wait for the writer) and every write runs inside
``BEGIN IMMEDIATE`` (one writer at a time, waiting up to ``busy_timeout`` for the lock).
A transaction that still finds the database locked is retried whole with jittered
backoff, then raises ``StoreUnavailable``.

Errors: ``AlreadyExistsError`` (a transaction's ``create``), ``ReadAfterWriteError``
(a transaction read after its first write), ``StoreUnavailable`` (locked for too long),
``TypeError`` (a value JSON cannot hold), ``ValueError`` (not a document path).

>>> import tempfile, pathlib
>>> store = SQLiteStore(pathlib.Path(tempfile.mkdtemp()) / "charter.db")
>>> store.create("orgs/acme/claims/t1", {"status": "done"})
True
>>> store.create("orgs/acme/claims/t1", {"status": "again"})
False
"""

from __future__ import annotations

import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from shared_lib import tracing
from shared_lib.adapters.document_values import (
    INEQUALITIES,
    MISSING,
    dumps,
    field_value,
    loads,
    matches,
    merged,
    sort_key,
)
from shared_lib.adapters.vectors import nearest
from shared_lib.errors import CharterError, StoreUnavailable
from shared_lib.ports import AlreadyExistsError, Doc, Op, Vector

T = TypeVar("T")

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS documents ("
    " path TEXT PRIMARY KEY, parent TEXT NOT NULL, collection_id TEXT NOT NULL, data TEXT NOT NULL"
    ") WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS documents_parent ON documents (parent)",
    "CREATE INDEX IF NOT EXISTS documents_collection_id ON documents (collection_id)",
)


class ReadAfterWriteError(CharterError):
    """A transaction read a document after it had written one (Firestore refuses it too)."""


def _split(path: str) -> tuple[str, str, str]:
    """The canonical path, its parent collection path and that collection's id."""
    parts = path.strip("/").split("/")
    if len(parts) % 2 or any(not p for p in parts):
        raise ValueError(f"not a document path: {path!r}")
    parent = "/".join(parts[:-1])
    return "/".join(parts), parent, parts[-2]


# --- transactions ---------------------------------------------------------------------


_IN_CHUNK = 500


def _read(conn: sqlite3.Connection, path: str) -> Doc | None:
    row = conn.execute("SELECT data FROM documents WHERE path = ?", (path,)).fetchone()
    return loads(row[0]) if row else None


def _write(conn: sqlite3.Connection, path: str, doc: Doc) -> None:
    canonical, parent, collection_id = _split(path)
    conn.execute(
        "INSERT INTO documents (path, parent, collection_id, data) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (path) DO UPDATE SET data = excluded.data",
        (canonical, parent, collection_id, dumps(doc)),
    )


def _create(conn: sqlite3.Connection, path: str, doc: Doc) -> bool:
    canonical, parent, collection_id = _split(path)
    cursor = conn.execute(
        "INSERT INTO documents (path, parent, collection_id, data) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (path) DO NOTHING",
        (canonical, parent, collection_id, dumps(doc)),
    )
    return cursor.rowcount == 1


def _set(conn: sqlite3.Connection, path: str, doc: Doc, merge: bool) -> None:
    base = _read(conn, _split(path)[0]) if merge else None
    _write(conn, path, merged(base, doc) if base is not None else doc)


class _SQLiteTransaction:
    """Reads go to the database inside the open transaction; writes wait for ``commit``."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._writes: list[tuple[str, str, Doc, bool]] = []

    def get(self, path: str) -> Doc | None:
        if self._writes:
            raise ReadAfterWriteError(f"read of {path!r} after a write in the same transaction")
        return _read(self._conn, _split(path)[0])

    def get_many(self, paths: Sequence[str]) -> dict[str, Doc | None]:
        return {p: self.get(p) for p in paths}  # one file, no round trip to save

    def set(self, path: str, data: Doc, *, merge: bool = False) -> None:
        self._buffer("set", path, data, merge)

    def create(self, path: str, data: Doc) -> None:
        self._buffer("create", path, data, False)

    def delete(self, path: str) -> None:
        self._buffer("delete", path, {}, False)

    def _buffer(self, kind: str, path: str, data: Doc, merge: bool) -> None:
        _split(path)
        # a round trip through the codec copies the data and rejects bad values now
        self._writes.append((kind, path, loads(dumps(data)), merge))

    def commit(self) -> None:
        for kind, path, data, merge in self._writes:
            if kind == "delete":
                self._conn.execute("DELETE FROM documents WHERE path = ?", (_split(path)[0],))
            elif kind == "create":
                if not _create(self._conn, path, data):
                    raise AlreadyExistsError(path)
            else:
                _set(self._conn, path, data, merge)


def _busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class SQLiteStore:
    """A ``Store`` in one SQLite file, shareable by threads and processes."""

    def __init__(self, path: str | Path, *, busy_timeout: float = 5.0, attempts: int = 5) -> None:
        if str(path) in ("", ":memory:") or str(path).startswith("file::memory:"):
            raise ValueError("SQLiteStore needs a file (each connection would get its own memory db)")
        self.path = Path(path)
        self._busy_timeout = busy_timeout
        self._attempts = attempts
        self._local = threading.local()
        self._retrying(self._init_schema)

    @staticmethod
    def _init_schema(conn: sqlite3.Connection) -> None:
        for statement in _SCHEMA:
            conn.execute(statement)

    def _connect(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            return conn
        # a connection inherited through fork() belongs to the parent: open our own
        conn = sqlite3.connect(self.path, timeout=self._busy_timeout, isolation_level=None)
        for _ in range(self._attempts):
            try:
                conn.execute("PRAGMA journal_mode = WAL")
                break
            except sqlite3.OperationalError as exc:  # another process is switching it right now
                if not _busy(exc):
                    raise
                time.sleep(0.05 * (0.5 + random.random()))
        # NORMAL is durable across crashes of the process in WAL mode; only a power loss can
        # lose the last commits, which the demo and operator commands can afford
        conn.execute("PRAGMA synchronous = NORMAL")
        self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def close(self) -> None:
        """Close the calling thread's connection (other threads' close when those threads end)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def _retrying(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` in a write transaction, retried whole while the database is locked."""
        conn = self._connect()
        if conn.in_transaction:
            # called from inside ``run_transaction`` on this thread: part of that transaction
            conn.execute("SAVEPOINT nested")
            try:
                result = work(conn)
            except BaseException:
                conn.execute("ROLLBACK TO nested")
                conn.execute("RELEASE nested")
                raise
            conn.execute("RELEASE nested")
            return result
        for attempt in range(1, self._attempts + 1):
            try:
                conn.execute("BEGIN IMMEDIATE")
                result = work(conn)
                conn.execute("COMMIT")
                return result
            except sqlite3.OperationalError as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if not _busy(exc):
                    raise
                if attempt == self._attempts:
                    raise StoreUnavailable(f"sqlite store {self.path}: {exc}") from exc
                time.sleep(min(1.0, 0.05 * 2**attempt) * (0.5 + random.random()))
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        raise AssertionError("unreachable: the last attempt returns or raises")

    def get(self, path: str) -> Doc | None:
        return _read(self._connect(), _split(path)[0])

    def set_many(self, writes: Sequence[tuple[str, Doc, bool]]) -> None:
        def _all(conn: sqlite3.Connection) -> None:
            for path, data, merge in writes:
                _set(conn, path, data, merge)

        self._retrying(_all)

    def get_many(self, paths: Sequence[str]) -> dict[str, Doc | None]:
        canonical = {p: _split(p)[0] for p in paths}
        wanted = sorted(set(canonical.values()))
        found: dict[str, Doc] = {}
        conn = self._connect()
        for i in range(0, len(wanted), _IN_CHUNK):  # SQLite bounds a statement's parameters
            chunk = wanted[i : i + _IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = conn.execute(f"SELECT path, data FROM documents WHERE path IN ({marks})", chunk)
            found.update((row[0], loads(row[1])) for row in rows)
        return {p: found.get(c) for p, c in canonical.items()}

    def set(self, path: str, data: Doc, *, merge: bool = False) -> None:
        self._retrying(lambda conn: _set(conn, path, data, merge))

    def create(self, path: str, data: Doc) -> bool:
        return self._retrying(lambda conn: _create(conn, path, data))

    def delete(self, path: str) -> None:
        canonical = _split(path)[0]
        self._retrying(lambda conn: conn.execute("DELETE FROM documents WHERE path = ?", (canonical,)))

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
        coll = collection.strip("/")
        column = "collection_id" if group else "parent"
        rows: Iterable[tuple[str, str]] = self._connect().execute(
            f"SELECT path, data FROM documents WHERE {column} = ? ORDER BY path", (coll,)
        )
        docs = [(path, loads(data)) for path, data in rows]
        docs = [(p, d) for p, d in docs if all(matches(d, f, op, v) for f, op, v in where)]
        # like Firestore: an inequality filter without an order orders by its field
        sort_field = order_by or next((f for f, op, _ in where if op in INEQUALITIES), None)
        if sort_field:
            docs = [(p, d) for p, d in docs if field_value(d, sort_field) is not MISSING]
            # like the Firestore adapter, ``descending`` only applies to an ``order_by``
            reverse = descending and order_by is not None
            docs.sort(key=lambda item: (sort_key(field_value(item[1], sort_field)), item[0]), reverse=reverse)
        out = [(path.rsplit("/", 1)[-1], doc) for path, doc in docs]
        return out[:limit] if limit is not None else out

    def find_nearest(
        self,
        collection: str,
        *,
        field: str,
        vector: Vector,
        limit: int,
        where: Sequence[tuple[str, Op, Any]] = (),
    ) -> list[tuple[str, Doc, float]]:
        """``VectorSearch``: exact cosine ranking over the documents ``where`` selects (the
        embedded stores hold few enough for a scan; Firestore uses its vector index)."""
        return nearest(self.query(collection, where=where), field, vector, limit)

    def run_transaction(self, fn: Callable[[Any], T]) -> T:
        """Run ``fn`` with a transaction holding the write lock; its writes apply at the end,
        all or none. The lock is taken before ``fn`` runs, so contention makes it wait (then
        retry), not run twice; the port still allows a rerun, so ``fn`` should have no side
        effects outside the transaction."""

        def work(conn: sqlite3.Connection) -> T:
            txn = _SQLiteTransaction(conn)
            result = fn(txn)
            txn.commit()
            return result

        with tracing.store_span("sqlite"):
            return self._retrying(work)

    def dump(self) -> dict[str, Doc]:
        """Every document by path (tests and the demo's summary)."""
        rows = self._connect().execute("SELECT path, data FROM documents ORDER BY path")
        return {path: loads(data) for path, data in rows}
