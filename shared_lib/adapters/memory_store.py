"""In-memory ``Store``: the embedded adapter (demo, unit tests, the in-process bench).
Serialisable transactions under one lock; documents are deep-copied in and out so callers
never share state. A collection query reads only that collection's documents (``_children``,
each collection's paths in the order they were first written, as the scan of every document
gave them): a scan grew with everything the store held, so every turn's queries (recent
messages, tasks, goals, memories) got slower with each turn before it. Cost: one dict entry
a document. A collection-group query still scans every document."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from shared_lib import tracing
from shared_lib.adapters.doc_copy import copy_doc
from shared_lib.adapters.vectors import nearest
from shared_lib.ports import AlreadyExistsError, Doc, Op, Vector

T = TypeVar("T")


def _check_path(path: str) -> list[str]:
    parts = path.strip("/").split("/")
    if len(parts) % 2 or any(not p for p in parts):
        raise ValueError(f"not a document path: {path!r}")
    return parts


def _match(doc: Doc, field: str, op: Op, value: Any) -> bool:
    cur: Any = doc
    for part in field.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return False
        cur = cur[part]
    try:
        match op:
            case "==":
                return bool(cur == value)
            case "!=":
                return bool(cur != value)
            case "<":
                return bool(cur < value)
            case "<=":
                return bool(cur <= value)
            case ">":
                return bool(cur > value)
            case ">=":
                return bool(cur >= value)
            case "in":
                return cur in value
            case "array_contains":
                return isinstance(cur, list) and value in cur
            case "array_contains_any":
                return isinstance(cur, list) and any(v in cur for v in value)
    except TypeError:
        return False
    return False


def _sort_key(value: Any) -> tuple[int, Any]:
    return (0, value) if value is not None else (1, 0)


class _MemoryTransaction:
    def __init__(self, store: MemoryStore) -> None:
        self._store = store
        self._writes: list[tuple[str, str, Doc | None, bool]] = []

    def get(self, path: str) -> Doc | None:
        return self._store.get(path)

    def get_many(self, paths: Sequence[str]) -> dict[str, Doc | None]:
        return self._store.get_many(paths)

    def set(self, path: str, data: Doc, *, merge: bool = False) -> None:
        _check_path(path)
        self._writes.append(("set", path, copy_doc(data), merge))

    def create(self, path: str, data: Doc) -> None:
        _check_path(path)
        self._writes.append(("create", path, copy_doc(data), False))

    def delete(self, path: str) -> None:
        self._writes.append(("delete", path, None, False))

    def commit(self) -> None:
        docs = self._store._docs
        for kind, path, _, _ in self._writes:
            if kind == "create" and path in docs:
                raise AlreadyExistsError(path)
        for kind, path, data, merge in self._writes:
            if kind == "delete":
                self._store._pop(path)
            elif merge and path in docs and data is not None:
                docs[path].update(data)
            elif data is not None:
                self._store._put(path, data)


class MemoryStore:
    """Thread-safe dict of documents keyed by path."""

    def __init__(self) -> None:
        self._docs: dict[str, Doc] = {}
        self._children: dict[str, dict[str, None]] = {}  # collection path -> its document paths
        self._lock = threading.RLock()
        self.fail_reads = False  # fault injection for degraded-mode tests

    def _guard(self) -> None:
        if self.fail_reads:
            from shared_lib.errors import StoreUnavailable

            raise StoreUnavailable("memory store: injected failure")

    def _put(self, path: str, doc: Doc) -> None:  # under the lock
        if path not in self._docs:
            self._children.setdefault(path.rpartition("/")[0], {})[path] = None
        self._docs[path] = doc

    def _pop(self, path: str) -> None:  # under the lock
        if self._docs.pop(path, None) is not None:
            parent = path.rpartition("/")[0]
            siblings = self._children[parent]
            del siblings[path]
            if not siblings:
                del self._children[parent]

    def get(self, path: str) -> Doc | None:
        _check_path(path)
        self._guard()
        with self._lock:
            doc = self._docs.get(path)
            return copy_doc(doc) if doc is not None else None

    def get_many(self, paths: Sequence[str]) -> dict[str, Doc | None]:
        for path in paths:
            _check_path(path)
        self._guard()
        with self._lock:  # one consistent read of them all, as Firestore's get_all is
            return {p: copy_doc(self._docs[p]) if p in self._docs else None for p in paths}

    def set(self, path: str, data: Doc, *, merge: bool = False) -> None:
        _check_path(path)
        with self._lock:
            if merge and path in self._docs:
                self._docs[path].update(copy_doc(data))
            else:
                self._put(path, copy_doc(data))

    def set_many(self, writes: Sequence[tuple[str, Doc, bool]]) -> None:
        for path, _, _ in writes:
            _check_path(path)
        with self._lock:  # (re-entrant) all of them before any reader sees one
            for path, data, merge in writes:
                self.set(path, data, merge=merge)

    def create(self, path: str, data: Doc) -> bool:
        _check_path(path)
        with self._lock:
            if path in self._docs:
                return False
            self._put(path, copy_doc(data))
            return True

    def delete(self, path: str) -> None:
        with self._lock:
            self._pop(path)

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
        self._guard()
        coll = collection.strip("/")
        out: list[tuple[str, Doc]] = []
        with self._lock:
            if group:
                candidates: Iterable[str] = (
                    p for p in self._docs if p.rpartition("/")[0].rsplit("/", 1)[-1] == coll
                )
            else:
                candidates = self._children.get(coll, ())
            for path in candidates:
                doc = self._docs[path]
                if all(_match(doc, f, op, v) for f, op, v in where):
                    out.append((path.rpartition("/")[2], copy_doc(doc)))
        if order_by:
            out.sort(key=lambda item: _sort_key(item[1].get(order_by)), reverse=descending)
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
        """``VectorSearch``: exact cosine ranking over the collection's documents."""
        return nearest(self.query(collection, where=where), field, vector, limit)

    def run_transaction(self, fn: Callable[[Any], T]) -> T:
        with tracing.store_span("memory"), self._lock:
            txn = _MemoryTransaction(self)
            result = fn(txn)
            txn.commit()
            return result

    def dump(self) -> dict[str, Doc]:
        """A copy of every document (tests and the demo's summary)."""
        with self._lock:
            return copy_doc(self._docs)
