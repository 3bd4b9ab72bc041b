"""Organisation-scoped views of the store: what handlers and context sources get.

Every path must lie under ``orgs/{org}/``; anything else (another organisation, a global
collection, a collection-group query across organisations) raises ``CrossOrgAccess``
before the store is touched. So an organisation's turn cannot read or write another
organisation's data whatever ids a proposal names. A read-only view (what handlers and
context sources get) refuses every write with ``WriteRefused``.

>>> from shared_lib.adapters.memory_store import MemoryStore
>>> scoped = OrgScopedStore(MemoryStore(), "acme")
>>> scoped.get("orgs/acme/tasks/t1") is None
True
>>> scoped.get("orgs/other/tasks/t1")
Traceback (most recent call last):
...
shared_lib.adapters.scoped.CrossOrgAccess: path 'orgs/other/tasks/t1' is outside organisation 'acme'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from shared_lib.errors import CharterError, ConfigError
from shared_lib.ports import Doc, Op, Store, Transaction, Vector

T = TypeVar("T")


class CrossOrgAccess(CharterError):
    """A handler or source tried to touch data outside its organisation (a bug: alert)."""


class WriteRefused(CharterError):
    """A write through a read-only view: a dry run, or a handler writing outside its transaction."""


def org_prefix(org_id: str) -> str:
    return f"orgs/{org_id}"


class _Scope:
    def __init__(self, org_id: str, read_only: bool) -> None:
        if not org_id or "/" in org_id:
            raise CrossOrgAccess(f"invalid organisation id {org_id!r}")
        self.org_id = org_id
        self.read_only = read_only
        self._prefix = org_prefix(org_id) + "/"

    def check(self, path: str) -> str:
        clean = path.strip("/")
        parts = clean.split("/")
        if not clean.startswith(self._prefix) or any(p in ("", ".", "..") for p in parts):
            raise CrossOrgAccess(f"path {path!r} is outside organisation {self.org_id!r}")
        return clean

    def check_write(self, path: str) -> str:
        if self.read_only:
            raise WriteRefused(f"write to {path!r} through a read-only view")
        return self.check(path)


class OrgScopedTransaction:
    def __init__(self, txn: Transaction, scope: _Scope) -> None:
        self._txn = txn
        self._scope = scope

    def get(self, path: str) -> Doc | None:
        return self._txn.get(self._scope.check(path))

    def get_many(self, paths: Sequence[str]) -> dict[str, Doc | None]:
        checked = [self._scope.check(p) for p in paths]
        get_many = getattr(self._txn, "get_many", None)
        if get_many is None:
            return {p: self._txn.get(p) for p in checked}
        got: dict[str, Doc | None] = get_many(checked)
        return got

    def set(self, path: str, data: Doc, *, merge: bool = False) -> None:
        self._txn.set(self._scope.check_write(path), data, merge=merge)

    def create(self, path: str, data: Doc) -> None:
        self._txn.create(self._scope.check_write(path), data)

    def delete(self, path: str) -> None:
        self._txn.delete(self._scope.check_write(path))


class OrgScopedStore:
    """A ``Store`` that only reaches ``orgs/{org_id}/...`` (and, if ``read_only``, only reads)."""

    def __init__(self, store: Store, org_id: str, *, read_only: bool = False) -> None:
        self._store = store
        self._scope = _Scope(org_id, read_only)

    @property
    def org_id(self) -> str:
        return self._scope.org_id

    @property
    def read_only(self) -> bool:
        return self._scope.read_only

    def get(self, path: str) -> Doc | None:
        return self._store.get(self._scope.check(path))

    def get_many(self, paths: Sequence[str]) -> dict[str, Doc | None]:
        return self._store.get_many([self._scope.check(p) for p in paths])

    def set(self, path: str, data: Doc, *, merge: bool = False) -> None:
        self._store.set(self._scope.check_write(path), data, merge=merge)

    def set_many(self, writes: Sequence[tuple[str, Doc, bool]]) -> None:
        self._store.set_many([(self._scope.check_write(p), d, m) for p, d, m in writes])

    def create(self, path: str, data: Doc) -> bool:
        return self._store.create(self._scope.check_write(path), data)

    def delete(self, path: str) -> None:
        self._store.delete(self._scope.check_write(path))

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
        if group:
            raise CrossOrgAccess("collection-group queries span organisations")
        return self._store.query(
            self._scope.check(collection), where=where, order_by=order_by, descending=descending, limit=limit
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
        """``VectorSearch`` inside the organisation (the store must offer it)."""
        find = getattr(self._store, "find_nearest", None)
        if not callable(find):
            raise ConfigError(f"{type(self._store).__name__} has no vector search")
        found: list[tuple[str, Doc, float]] = find(
            self._scope.check(collection), field=field, vector=vector, limit=limit, where=where
        )
        return found

    def run_transaction(self, fn: Callable[[Transaction], T]) -> T:
        scope = self._scope
        return self._store.run_transaction(lambda txn: fn(OrgScopedTransaction(txn, scope)))


def scoped(store: Store, org_id: str, *, read_only: bool = False) -> OrgScopedStore:
    """The scoped view of ``store`` (re-scoping a scoped store to another org is refused)."""
    if isinstance(store, OrgScopedStore):
        if store.org_id != org_id:
            raise CrossOrgAccess(f"store scoped to {store.org_id!r} asked for {org_id!r}")
        return OrgScopedStore(store._store, org_id, read_only=read_only or store.read_only)
    return OrgScopedStore(store, org_id, read_only=read_only)
