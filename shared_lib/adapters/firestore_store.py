"""Firestore ``Store`` (the cloud and the emulator: honours ``FIRESTORE_EMULATOR_HOST``).

A ``ports.Vector`` is written as Firestore's vector value and read back as a ``ports.Vector``
(in a document at any depth, through plain calls, queries and transactions), so
``find_nearest`` (``VectorSearch``) searches it on the vector index: ``where`` equality
filters first, then the nearest by cosine distance (the composite index of
``terraform/modules/firestore`` covers ``model`` + ``embedding`` of ``memory_chunks``).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from google.api_core import exceptions as gexc
from google.cloud import firestore
from google.cloud.firestore_v1.base_query import FieldFilter
from google.cloud.firestore_v1.base_vector_query import DistanceMeasure
from google.cloud.firestore_v1.vector import Vector as FirestoreVector

from shared_lib import tracing
from shared_lib.errors import StoreUnavailable
from shared_lib.ports import AlreadyExistsError, Doc, Op, Vector

T = TypeVar("T")
_UNAVAILABLE = (gexc.ServiceUnavailable, gexc.DeadlineExceeded, gexc.InternalServerError)
# where find_nearest asks Firestore to put each result's distance (removed from the document)
_DISTANCE_FIELD = "charter_vector_distance"


def _walk(value: Any, convert: Callable[[Any], Any]) -> Any:
    """``value`` with ``convert`` applied to every leaf (inside maps and arrays)."""
    if isinstance(value, dict):
        return {key: _walk(item, convert) for key, item in value.items()}
    if isinstance(value, list):
        return [_walk(item, convert) for item in value]
    return convert(value)


def _to_firestore(data: Doc) -> Doc:
    """``data`` with every ``ports.Vector`` as Firestore's vector value."""
    out: Doc = _walk(data, lambda v: FirestoreVector(v) if isinstance(v, Vector) else v)
    return out


def _doc(snap: Any) -> Doc | None:
    if not snap.exists:
        return None
    # every Firestore vector value back as a ``ports.Vector``
    doc: Doc = _walk(snap.to_dict() or {}, lambda v: Vector(v) if isinstance(v, FirestoreVector) else v)
    return doc


class _FirestoreTransaction:
    def __init__(self, client: firestore.Client, txn: firestore.Transaction) -> None:
        self._client = client
        self._txn = txn

    def get(self, path: str) -> Doc | None:
        return _doc(self._client.document(path).get(transaction=self._txn))

    def get_many(self, paths: Sequence[str]) -> dict[str, Doc | None]:
        """The documents in one ``BatchGetDocuments`` within the transaction (its reads, first)."""
        unique = list(dict.fromkeys(paths))
        snaps = self._client.get_all([self._client.document(p) for p in unique], transaction=self._txn)
        found = {snap.reference.path: _doc(snap) for snap in snaps}
        return {p: found.get(p) for p in paths}

    def set(self, path: str, data: Doc, *, merge: bool = False) -> None:
        self._txn.set(self._client.document(path), _to_firestore(data), merge=merge)

    def create(self, path: str, data: Doc) -> None:
        self._txn.create(self._client.document(path), _to_firestore(data))

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
        return _doc(snap)

    def set_many(self, writes: Sequence[tuple[str, Doc, bool]]) -> None:
        """One ``Commit`` call (a ``WriteBatch``) for every write."""
        batch = self.client.batch()
        for path, data, merge in writes:
            batch.set(self.client.document(path), _to_firestore(data), merge=merge)
        try:
            batch.commit()
        except _UNAVAILABLE as exc:
            raise StoreUnavailable(str(exc)) from exc

    def get_many(self, paths: Sequence[str]) -> dict[str, Doc | None]:
        """One ``BatchGetDocuments`` call (``get_all``) for every path; the answers come in any order."""
        unique = list(dict.fromkeys(paths))
        if not unique:
            return {}
        try:
            snaps = self.client.get_all([self.client.document(p) for p in unique])
            found = {snap.reference.path: _doc(snap) for snap in snaps}
        except _UNAVAILABLE as exc:
            raise StoreUnavailable(str(exc)) from exc
        return {p: found.get(p) for p in paths}

    def set(self, path: str, data: Doc, *, merge: bool = False) -> None:
        try:
            self.client.document(path).set(_to_firestore(data), merge=merge)
        except _UNAVAILABLE as exc:
            raise StoreUnavailable(str(exc)) from exc

    def create(self, path: str, data: Doc) -> bool:
        try:
            self.client.document(path).create(_to_firestore(data))
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
            return [(snap.id, _doc(snap) or {}) for snap in q.stream()]
        except _UNAVAILABLE as exc:
            raise StoreUnavailable(str(exc)) from exc

    def find_nearest(
        self,
        collection: str,
        *,
        field: str,
        vector: Vector,
        limit: int,
        where: Sequence[tuple[str, Op, Any]] = (),
    ) -> list[tuple[str, Doc, float]]:
        """``VectorSearch`` on Firestore's vector index: the equality filters, then the
        ``limit`` nearest by cosine distance, with that distance."""
        if limit <= 0:
            return []
        q: Any = self.client.collection(collection.strip("/"))
        for name, op, value in where:
            q = q.where(filter=FieldFilter(name, op, value))
        nearest = q.find_nearest(
            vector_field=field,
            query_vector=FirestoreVector(vector),
            distance_measure=DistanceMeasure.COSINE,
            limit=limit,
            distance_result_field=_DISTANCE_FIELD,
        )
        try:
            snaps = list(nearest.stream())
        except _UNAVAILABLE as exc:
            raise StoreUnavailable(str(exc)) from exc
        out = []
        for snap in snaps:
            doc = _doc(snap) or {}
            distance = float(doc.pop(_DISTANCE_FIELD))
            out.append((snap.id, doc, distance))
        return out

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
