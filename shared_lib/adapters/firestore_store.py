"""Firestore ``Store`` (the cloud and the emulator: honours ``FIRESTORE_EMULATOR_HOST``)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from google.api_core import exceptions as gexc
from google.cloud import firestore
from google.cloud.firestore_v1.base_query import FieldFilter

from shared_lib import tracing
from shared_lib.errors import StoreUnavailable
from shared_lib.ports import AlreadyExistsError, Doc, Op

T = TypeVar("T")
_UNAVAILABLE = (gexc.ServiceUnavailable, gexc.DeadlineExceeded, gexc.InternalServerError)


class _FirestoreTransaction:
    def __init__(self, client: firestore.Client, txn: firestore.Transaction) -> None:
        self._client = client
        self._txn = txn

    def get(self, path: str) -> Doc | None:
        snap = self._client.document(path).get(transaction=self._txn)
        return snap.to_dict() if snap.exists else None

    def set(self, path: str, data: Doc, *, merge: bool = False) -> None:
        self._txn.set(self._client.document(path), data, merge=merge)

    def create(self, path: str, data: Doc) -> None:
        self._txn.create(self._client.document(path), data)

    def delete(self, path: str) -> None:
        self._txn.delete(self._client.document(path))


class FirestoreStore:
    def __init__(
        self,
        client: firestore.Client | None = None,
        *,
        project: str | None = None,
        database: str | None = None,
    ) -> None:
        self.client = client or firestore.Client(project=project, database=database or "(default)")

    def get(self, path: str) -> Doc | None:
        try:
            snap = self.client.document(path).get()
        except _UNAVAILABLE as exc:
            raise StoreUnavailable(str(exc)) from exc
        return snap.to_dict() if snap.exists else None

    def set(self, path: str, data: Doc, *, merge: bool = False) -> None:
        try:
            self.client.document(path).set(data, merge=merge)
        except _UNAVAILABLE as exc:
            raise StoreUnavailable(str(exc)) from exc

    def create(self, path: str, data: Doc) -> bool:
        try:
            self.client.document(path).create(data)
            return True
        except gexc.AlreadyExists:
            return False
        except _UNAVAILABLE as exc:
            raise StoreUnavailable(str(exc)) from exc

    def delete(self, path: str) -> None:
        self.client.document(path).delete()

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
        q: Any = self.client.collection_group(coll) if group else self.client.collection(coll)
        for field, op, value in where:
            q = q.where(filter=FieldFilter(field, op, value))
        if order_by:
            q = q.order_by(
                order_by, direction=firestore.Query.DESCENDING if descending else firestore.Query.ASCENDING
            )
        if limit is not None:
            q = q.limit(limit)
        try:
            return [(snap.id, snap.to_dict() or {}) for snap in q.stream()]
        except _UNAVAILABLE as exc:
            raise StoreUnavailable(str(exc)) from exc

    def run_transaction(self, fn: Callable[[Any], T], *, attempts: int = 8) -> T:
        """Run ``fn`` in a transaction; contention (``Aborted``, e.g. the emulator's "Transaction
        lock timeout") is retried with jittered exponential backoff, then raised."""

        @firestore.transactional
        def _run(txn: firestore.Transaction) -> T:
            return fn(_FirestoreTransaction(self.client, txn))

        with tracing.store_span("firestore"):
            result: T = self._attempts(_run, attempts)
            return result

    def _attempts(self, run: Callable[[Any], T], attempts: int) -> T:
        for attempt in range(1, attempts + 1):
            try:
                result: T = run(self.client.transaction())
                return result
            except (gexc.Aborted, ValueError) as exc:
                # the client gives up on contention with ``Aborted`` or, after its own quick
                # retries, ``ValueError("Failed to commit transaction in N attempts.")``
                if isinstance(exc, ValueError) and "Failed to commit transaction" not in str(exc):
                    raise
                if attempt == attempts:
                    raise
                time.sleep(min(1.0, 0.05 * 2**attempt) * (0.5 + random.random()))
            except (gexc.AlreadyExists, gexc.Conflict) as exc:
                if isinstance(exc, gexc.AlreadyExists) or "exists" in str(exc).lower():
                    raise AlreadyExistsError(str(exc)) from exc
                raise
            except _UNAVAILABLE as exc:
                raise StoreUnavailable(str(exc)) from exc
        raise AssertionError("unreachable")
