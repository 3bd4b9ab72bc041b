"""A stage's known documents read in one round trip (``adapters.prefetched``), counted."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from infra.bench.hops import CountingStore
from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.adapters.prefetched import PrefetchedStore
from shared_lib.errors import StoreUnavailable

ORG = "orgs/acme"
KNOWN = [
    f"{ORG}/sessions/c-0f3a",
    f"{ORG}/users/u-yamada",
    f"{ORG}/conversations/c-0f3a",
    f"{ORG}/settings/company",
]


def seeded() -> CountingStore:
    inner = MemoryStore()
    inner.set(f"{ORG}/users/u-yamada", {"name": "山田　太郎", "level": 4, "department_id": "d-kaihatsu"})
    inner.set(f"{ORG}/conversations/c-0f3a", {"summary": "見積りの件で相談中😅", "cursor": 12})
    inner.set(f"{ORG}/settings/company", {"values": "お客様第一。"})
    inner.set(f"{ORG}/goals/g1", {"title": "Q4の売上目標"})
    return CountingStore(inner)


def ops(store: CountingStore) -> dict[str, int]:
    return dict(store.ops["ingress"])  # no delivery target set: the default bucket


def test_the_first_read_of_a_known_document_fetches_them_all_in_one_call():
    # GIVEN a view over the stage's known documents, one of them absent
    store = seeded()
    view = PrefetchedStore(store, KNOWN)  # type: ignore[arg-type]
    # WHEN every one is read, some twice, from parallel readers
    with ThreadPoolExecutor(max_workers=4) as pool:
        got = list(pool.map(view.get, KNOWN + KNOWN))
    # THEN one get_many answered them all, each as a plain get would
    assert ops(store) == {"get_many": 1}
    assert got[:4] == [None, *(store.inner.get(p) for p in KNOWN[1:])]
    assert got[4:] == got[:4]


def test_a_document_it_was_not_told_of_is_read_from_the_store():
    store = seeded()
    view = PrefetchedStore(store, KNOWN)  # type: ignore[arg-type]
    assert view.get(f"{ORG}/goals/g1") == {"title": "Q4の売上目標"}
    assert ops(store) == {"get": 1}


def test_a_write_through_the_view_drops_that_document_from_the_batch():
    # GIVEN the batch read
    store = seeded()
    view = PrefetchedStore(store, KNOWN)  # type: ignore[arg-type]
    assert view.get(f"{ORG}/conversations/c-0f3a")["cursor"] == 12  # type: ignore[index]
    # WHEN the stage writes the conversation
    view.set(f"{ORG}/conversations/c-0f3a", {"cursor": 13}, merge=True)
    # THEN its next read goes to the store and sees the write; the others still come from the batch
    assert view.get(f"{ORG}/conversations/c-0f3a")["cursor"] == 13  # type: ignore[index]
    assert view.get(f"{ORG}/users/u-yamada")["level"] == 4  # type: ignore[index]
    assert ops(store) == {"get_many": 1, "set": 1, "get": 1}


def test_a_copy_is_served_so_a_reader_cannot_change_what_the_next_reads():
    view = PrefetchedStore(seeded(), KNOWN)  # type: ignore[arg-type]
    view.get(f"{ORG}/users/u-yamada")["level"] = 6  # type: ignore[index]
    assert view.get(f"{ORG}/users/u-yamada")["level"] == 4  # type: ignore[index]


def test_a_batch_that_fails_falls_back_to_reading_each_document_on_its_own():
    # GIVEN a store whose batch read fails (one document of it is unreadable)
    class NoBatch(MemoryStore):
        def get_many(self, paths):  # type: ignore[no-untyped-def]
            raise StoreUnavailable("firestore: deadline exceeded")

        def get(self, path):  # type: ignore[no-untyped-def]
            if "/sessions/" in path:
                raise StoreUnavailable("firestore: deadline exceeded")
            return super().get(path)

    inner = NoBatch()
    inner.set(f"{ORG}/users/u-yamada", {"level": 4})
    view = PrefetchedStore(inner, KNOWN)
    # WHEN the known documents are read
    # THEN only the unreadable one fails; the others are read one by one
    assert view.get(f"{ORG}/users/u-yamada") == {"level": 4}
    with pytest.raises(StoreUnavailable):
        view.get(f"{ORG}/sessions/c-0f3a")
