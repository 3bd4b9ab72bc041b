"""One contract, every Store adapter: the in-memory store, Firestore on the emulator and the
SQLite file store."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from shared_lib.delivery import idempotency
from shared_lib.ports import AlreadyExistsError, Store, Vector


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Store:
    from shared_lib.adapters.sqlite_store import SQLiteStore

    return SQLiteStore(tmp_path / "charter.db")


@pytest.fixture(params=["memory", "firestore", "sqlite"])
def store(request: pytest.FixtureRequest) -> Store:
    return request.getfixturevalue(f"{request.param}_store")


def test_create_is_atomic_and_reports_existing(store: Store):
    assert store.create("orgs/a/claims/1", {"n": 1}) is True
    assert store.create("orgs/a/claims/1", {"n": 2}) is False
    assert store.get("orgs/a/claims/1") == {"n": 1}


def test_set_get_merge_delete(store: Store):
    store.set("orgs/a/users/u", {"name": "田中", "level": 2})
    store.set("orgs/a/users/u", {"level": 3}, merge=True)
    assert store.get("orgs/a/users/u") == {"name": "田中", "level": 3}
    store.set("orgs/a/users/u", {"level": 4})
    assert store.get("orgs/a/users/u") == {"level": 4}
    store.delete("orgs/a/users/u")
    assert store.get("orgs/a/users/u") is None


def test_get_many_reads_known_documents_in_one_call_with_none_for_the_missing(store: Store):
    # GIVEN a person, their department and a settings document; one path that does not exist
    store.set("orgs/a/users/u-tanaka", {"name": "田中　花子", "level": 3, "department_id": "d-eigyo"})
    store.set("orgs/a/departments/d-eigyo", {"name": "営業部", "parent_id": None})
    store.set("orgs/a/settings/company", {"ft_staging": True, "retention_days": 90})
    paths = [
        "orgs/a/settings/company",
        "orgs/a/users/u-tanaka",
        "orgs/a/users/u-nobody",
        "orgs/a/departments/d-eigyo",
        "orgs/a/users/u-tanaka",  # asked twice: answered once per path
    ]
    # WHEN they are read together
    got = store.get_many(paths)
    # THEN every path is answered, the missing one with None, each as a single get reads it
    assert set(got) == set(paths)
    assert got["orgs/a/users/u-nobody"] is None
    for path in paths:
        assert got[path] == store.get(path), path
    assert store.get_many([]) == {}


def test_set_many_writes_every_document_in_one_call_merging_where_asked(store: Store):
    # GIVEN a conversation document that exists, with a field the batch does not name
    store.set("orgs/a/conversations/c1", {"summary": "見積の話", "at": 1})
    # WHEN its new message and its time are written as one batch (the conversation merged)
    store.set_many(
        [
            ("orgs/a/conversations/c1", {"at": 2, "room_id": "r-営業"}, True),
            ("orgs/a/conversations/c1/messages/m1", {"text": "了解です👍", "role": "user"}, False),
        ]
    )
    # THEN both are there, the merged one keeping what it had
    assert store.get("orgs/a/conversations/c1") == {"summary": "見積の話", "at": 2, "room_id": "r-営業"}
    assert store.get("orgs/a/conversations/c1/messages/m1") == {"text": "了解です👍", "role": "user"}


def test_query_filters_orders_limits_and_groups(store: Store):
    for i in range(5):
        store.set(f"orgs/a/tasks/t{i}", {"n": i, "status": "open" if i % 2 else "done"})
    store.set("orgs/b/tasks/x", {"n": 99, "status": "open"})
    got = store.query("orgs/a/tasks", where=[("status", "==", "open")], order_by="n", descending=True)
    assert [d["n"] for _, d in got] == [3, 1]
    assert [i for i, _ in store.query("orgs/a/tasks", order_by="n", limit=2)] == ["t0", "t1"]
    assert len(store.query("tasks", group=True)) == 6
    assert store.query("orgs/a/tasks", where=[("n", ">=", 4)])[0][0] == "t4"


def test_transaction_reads_then_writes_atomically(store: Store):
    store.set("orgs/a/counters/c", {"v": 0})

    def bump(txn):  # type: ignore[no-untyped-def]
        doc = txn.get("orgs/a/counters/c")
        txn.set("orgs/a/counters/c", {"v": doc["v"] + 1})
        return doc["v"] + 1

    errors: list[BaseException] = []

    def worker() -> None:
        try:
            store.run_transaction(bump)
        except BaseException as exc:  # collected: a thread's failure must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert store.get("orgs/a/counters/c") == {"v": 5}


def test_a_transaction_reads_known_documents_in_one_call_before_its_writes(store: Store):
    # GIVEN a conversation's session and its agent state; the reply's end commit reads both
    store.set("orgs/a/sessions/line:r1:u1", {"mode": "error_recovery", "error_count": 1})
    store.set("orgs/a/agent_states/c1", {"phase": "planning", "applied_utterances": ["t-1"]})
    paths = ["orgs/a/sessions/line:r1:u1", "orgs/a/agent_states/c1", "orgs/a/agent_states/c-なし"]

    def end(txn) -> dict[str, object]:
        got = txn.get_many(paths)  # the adapters' transactions all have it (state.turn_end uses it)
        txn.set("orgs/a/sessions/line:r1:u1", {**got[paths[0]], "mode": "normal", "error_count": 0})
        return got

    # WHEN they are read in one call inside the transaction, then written
    got = store.run_transaction(end)
    # THEN each is answered as a single get answers it, the missing one with None
    assert got[paths[1]] == {"phase": "planning", "applied_utterances": ["t-1"]}
    assert got[paths[2]] is None
    assert store.get(paths[0]) == {"mode": "normal", "error_count": 0}


def test_transaction_create_conflict_writes_nothing(store: Store):
    store.set("orgs/a/receipts/r1", {"done": True})

    def effect(txn):  # type: ignore[no-untyped-def]
        txn.set("orgs/a/tasks/new", {"body": "x"})
        txn.create("orgs/a/receipts/r1", {"done": True})

    with pytest.raises(AlreadyExistsError):
        store.run_transaction(effect)
    assert store.get("orgs/a/tasks/new") is None


def test_idempotency_claims_behave_the_same(store: Store):
    now = datetime.now(UTC)
    path = idempotency.claim_path("a", "T1", "brain", 0)
    lease = timedelta(seconds=30)
    claims = idempotency.layer_claims(store)
    assert claims.claim(path, now=now, lease=lease).state is idempotency.ClaimState.ACQUIRED
    assert claims.claim(path, now=now, lease=lease).state is idempotency.ClaimState.BUSY
    later = claims.claim(path, now=now + timedelta(minutes=1), lease=lease)
    assert later.state is idempotency.ClaimState.ACQUIRED and later.took_over and later.attempts == 2
    claims.complete(path, now=now)
    assert claims.claim(path, now=now, lease=lease).state is idempotency.ClaimState.COMPLETED


def test_datetimes_round_trip_aware_and_compare_in_queries(store: Store):
    tokyo = timezone(timedelta(hours=9))
    base = datetime(2028, 2, 29, 9, 0, tzinfo=tokyo)
    for i in range(3):
        store.set(f"orgs/a/events/e{i}", {"at": base + timedelta(hours=i), "i": i})
    got = store.get("orgs/a/events/e1")
    assert got is not None
    assert got["at"] == base + timedelta(hours=1)
    assert got["at"].utcoffset() is not None
    since = datetime(2028, 2, 29, 1, 0, tzinfo=UTC)  # 10:00 in Tokyo
    assert [d["i"] for _, d in store.query("orgs/a/events", where=[("at", ">=", since)])] == [1, 2]
    newest = store.query("orgs/a/events", order_by="at", descending=True, limit=1)
    assert [d["i"] for _, d in newest] == [2]


def test_nested_maps_lists_and_membership_filters(store: Store):
    store.set("orgs/a/goals/g1", {"owner": {"id": "u1", "tags": ["x"]}, "labels": ["red", "blue"], "n": 1})
    store.set("orgs/a/goals/g2", {"owner": {"id": "u2", "tags": []}, "labels": ["green"], "n": 2})
    store.set("orgs/a/goals/g3", {"owner": {"id": "u3", "tags": []}, "labels": [], "n": 3})
    assert store.get("orgs/a/goals/g1") == {
        "owner": {"id": "u1", "tags": ["x"]},
        "labels": ["red", "blue"],
        "n": 1,
    }
    assert [i for i, _ in store.query("orgs/a/goals", where=[("labels", "array_contains", "blue")])] == ["g1"]
    any_of = store.query("orgs/a/goals", where=[("labels", "array_contains_any", ["green", "blue", "紫"])])
    assert sorted(i for i, _ in any_of) == ["g1", "g2"]  # each document once, whichever values it holds
    by_owner = store.query("orgs/a/goals", where=[("owner.id", "in", ["u2", "u3"])], order_by="n")
    assert [i for i, _ in by_owner] == ["g2", "g3"]
    assert [i for i, _ in store.query("orgs/a/goals", where=[("n", "!=", 2)], order_by="n")] == ["g1", "g3"]
    assert [i for i, _ in store.query("orgs/a/goals", where=[("n", "<", 3), ("n", ">", 1)])] == ["g2"]


def test_group_query_spans_orgs_and_subcollections_only_by_collection_id(store: Store):
    store.set("orgs/a/alerts/1", {"org": "a", "sev": "high"})
    store.set("orgs/b/alerts/2", {"org": "b", "sev": "low"})
    store.set("orgs/b/alerts_archive/3", {"org": "b", "sev": "high"})
    store.set("alerts/4", {"org": None, "sev": "high"})
    high = store.query("alerts", where=[("sev", "==", "high")], group=True)
    assert sorted(i for i, _ in high) == ["1", "4"]
    assert [i for i, _ in store.query("alerts")] == ["4"]


def test_transaction_create_of_a_new_document_commits_with_its_other_writes(store: Store):
    def effect(txn):  # type: ignore[no-untyped-def]
        assert txn.get("orgs/a/receipts/r2") is None
        txn.create("orgs/a/receipts/r2", {"done": True})
        txn.set("orgs/a/tasks/t", {"body": "y"})
        return "ok"

    assert store.run_transaction(effect) == "ok"
    assert store.get("orgs/a/receipts/r2") == {"done": True}
    assert store.get("orgs/a/tasks/t") == {"body": "y"}


# --- VectorSearch: find_nearest and the Vector value ---------------------------------------


def _chunk(model: str, *embedding: float) -> dict[str, object]:
    return {"model": model, "embedding": Vector(embedding), "text": f"{model}:{embedding}"}


def test_find_nearest_ranks_by_cosine_distance_nearest_first(store: Store):
    # GIVEN four chunks at known angles from the query (1, 0, 0)
    store.set("orgs/a/memory_chunks/same", _chunk("m", 2.0, 0.0, 0.0))  # 0°: distance 0
    store.set("orgs/a/memory_chunks/near", _chunk("m", 1.0, 1.0, 0.0))  # 45°: 1 - 0.7071
    store.set("orgs/a/memory_chunks/right", _chunk("m", 0.0, 0.0, 3.0))  # 90°: 1
    store.set("orgs/a/memory_chunks/opposite", _chunk("m", -1.0, 0.0, 0.0))  # 180°: 2
    store.set("orgs/b/memory_chunks/other_org", _chunk("m", 1.0, 0.0, 0.0))
    # WHEN the three nearest are asked for
    hits = store.find_nearest(  # type: ignore[attr-defined]
        "orgs/a/memory_chunks", field="embedding", vector=Vector((1.0, 0.0, 0.0)), limit=3
    )
    # THEN nearest first, with the cosine distance, only from that collection
    assert [doc_id for doc_id, _, _ in hits] == ["same", "near", "right"]
    assert [round(distance, 4) for _, _, distance in hits] == [0.0, round(1 - 0.5**0.5, 4), 1.0]
    assert hits[0][1] == _chunk("m", 2.0, 0.0, 0.0)  # the whole document, the distance apart
    assert isinstance(hits[0][1]["embedding"], Vector)


def test_find_nearest_filters_by_equality_before_ranking(store: Store):
    # GIVEN chunks of two models, the nearest one of the other model
    store.set("orgs/a/memory_chunks/other", _chunk("old-model", 1.0, 0.0))
    store.set("orgs/a/memory_chunks/far", _chunk("new-model", 0.0, 1.0))
    store.set("orgs/a/memory_chunks/mid", _chunk("new-model", 1.0, 1.0))
    # WHEN searched for the new model's vectors only
    hits = store.find_nearest(  # type: ignore[attr-defined]
        "orgs/a/memory_chunks",
        field="embedding",
        vector=Vector((1.0, 0.0)),
        limit=5,
        where=[("model", "==", "new-model")],
    )
    # THEN the other model's chunk is not among them, however near
    assert [doc_id for doc_id, _, _ in hits] == ["mid", "far"]


def test_find_nearest_skips_documents_without_the_field(store: Store):
    store.set("orgs/a/memory_chunks/vector", _chunk("m", 0.0, 1.0))
    store.set("orgs/a/memory_chunks/pending", {"model": "m", "text": "not embedded yet"})
    hits = store.find_nearest(  # type: ignore[attr-defined]
        "orgs/a/memory_chunks",
        field="embedding",
        vector=Vector((0.0, 1.0)),
        limit=5,
        where=[("model", "==", "m")],
    )
    assert [doc_id for doc_id, _, _ in hits] == ["vector"]
    assert (
        store.find_nearest(  # type: ignore[attr-defined]
            "orgs/a/nothing_here", field="embedding", vector=Vector((0.0, 1.0)), limit=5
        )
        == []
    )


def test_a_vector_reads_back_as_a_vector_everywhere(store: Store):
    # GIVEN a document holding a vector at the top and inside a map
    doc = {
        "embedding": Vector((0.25, -0.5, 1.0)),
        "meta": {"centroid": Vector((1.0, 2.0))},
        "tags": [0.5, 1.0],
    }
    store.set("orgs/a/memory_chunks/c1", doc)

    def vectors(d: dict) -> tuple[object, object, object]:  # type: ignore[type-arg]
        return type(d["embedding"]), type(d["meta"]["centroid"]), type(d["tags"])

    # WHEN it is read by get, by a query and inside a transaction, THEN the vectors are Vectors
    # (a list stays a list) with the same floats
    got = store.get("orgs/a/memory_chunks/c1")
    assert got == doc and vectors(got) == (Vector, Vector, list)
    ((_, queried),) = store.query("orgs/a/memory_chunks")
    assert vectors(queried) == (Vector, Vector, list)

    def copy_in_txn(txn):  # type: ignore[no-untyped-def]
        read = txn.get("orgs/a/memory_chunks/c1")
        txn.set("orgs/a/memory_chunks/c2", {"embedding": read["embedding"], "meta": read["meta"], "tags": []})
        return read

    read = store.run_transaction(copy_in_txn)
    assert vectors(read) == (Vector, Vector, list)
    copied = store.get("orgs/a/memory_chunks/c2")
    assert copied is not None and copied["embedding"] == Vector((0.25, -0.5, 1.0))
    assert isinstance(copied["embedding"], Vector) and isinstance(copied["meta"]["centroid"], Vector)
