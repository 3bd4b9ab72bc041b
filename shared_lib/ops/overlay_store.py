"""A ``Store`` that reads through to another and keeps every write to itself.

Replay runs today's layers against the real store's data (users, directory, policy)
without changing it: writes land in the overlay and are visible to later reads of the
same replay, then vanish with it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from shared_lib.ports import AlreadyExistsError, Doc, Op, Store

T = TypeVar("T")
_DELETED = object()


class OverlayStore:
    def __init__(self, base: Store) -> None:
        self.base = base
        self.writes: dict[str, Any] = {}  # path -> doc, or _DELETED

    def get(self, path: str) -> Doc | None:
        if path in self.writes:
            doc = self.writes[path]
            return None if doc is _DELETED else copy.deepcopy(doc)
        return self.base.get(path)

    def get_many(self, paths: Sequence[str]) -> dict[str, Doc | None]:
        base = self.base.get_many([p for p in paths if p not in self.writes])
        return {p: self.get(p) if p in self.writes else base.get(p) for p in paths}

    def set(self, path: str, data: Doc, *, merge: bool = False) -> None:
        current = self.get(path) if merge else None
        self.writes[path] = {**(current or {}), **copy.deepcopy(data)}

    def set_many(self, writes: Sequence[tuple[str, Doc, bool]]) -> None:
        for path, data, merge in writes:
            self.set(path, data, merge=merge)

    def create(self, path: str, data: Doc) -> bool:
        if self.get(path) is not None:
            return False
        self.writes[path] = copy.deepcopy(data)
        return True

    def delete(self, path: str) -> None:
        self.writes[path] = _DELETED

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
        """The base's answer with overlaid documents of that collection replaced or removed."""
        rows = self.base.query(
            collection, where=where, order_by=order_by, descending=descending, limit=limit, group=group
        )
        prefix = collection.strip("/") + "/"
        out = []
        for doc_id, doc in rows:
            path = prefix + doc_id
            if not group and path in self.writes:
                if self.writes[path] is _DELETED:
                    continue
                doc = copy.deepcopy(self.writes[path])
            out.append((doc_id, doc))
        return out

    def run_transaction(self, fn: Callable[[Any], T]) -> T:
        txn = _OverlayTransaction(self)
        result = fn(txn)
        txn.commit()
        return result


class _OverlayTransaction:
    def __init__(self, store: OverlayStore) -> None:
        self._store = store
        self._ops: list[tuple[str, str, Doc | None, bool]] = []

    def get(self, path: str) -> Doc | None:
        return self._store.get(path)

    def set(self, path: str, data: Doc, *, merge: bool = False) -> None:
        self._ops.append(("set", path, data, merge))

    def create(self, path: str, data: Doc) -> None:
        self._ops.append(("create", path, data, False))

    def delete(self, path: str) -> None:
        self._ops.append(("delete", path, None, False))

    def commit(self) -> None:
        for kind, path, _, _ in self._ops:
            if kind == "create" and self._store.get(path) is not None:
                raise AlreadyExistsError(path)
        for kind, path, data, merge in self._ops:
            if kind == "delete":
                self._store.delete(path)
            elif data is not None:
                self._store.set(path, data, merge=merge)
