"""SQLite store beyond the shared contract (tests/integration/test_store_contract.py): one
file shared by several stores (as by several processes), threads racing on it, the
Firestore value rules it copies, and what its transactions refuse."""

from __future__ import annotations

import sqlite3
import threading
import time
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from shared_lib.adapters.sqlite_store import ReadAfterWriteError, SQLiteStore
from shared_lib.errors import StoreUnavailable
from shared_lib.ports import AlreadyExistsError

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "charter.db"


def _race(workers: int, fn) -> list[object]:  # type: ignore[no-untyped-def]
    """Run ``fn`` on ``workers`` threads released at once; their results (or exceptions)."""
    barrier = threading.Barrier(workers)
    results: list[object] = []
    lock = threading.Lock()

    def run() -> None:
        barrier.wait()
        try:
            out: object = fn()
        except BaseException as exc:  # collected: a thread's failure must fail the test
            out = exc
        with lock:
            results.append(out)

    threads = [threading.Thread(target=run) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_two_stores_on_one_file_see_each_others_writes(db: Path):
    # GIVEN two stores on one file, as two processes would open it
    first, second = SQLiteStore(db), SQLiteStore(db)
    # WHEN each writes
    first.set("orgs/a/users/u1", {"name": "田中", "at": datetime(2028, 2, 29, tzinfo=UTC)})
    assert second.create("orgs/a/users/u2", {"name": "鈴木"}) is True
    second.set("orgs/a/users/u1", {"level": 3}, merge=True)
    # THEN each reads the other's, and a create the other did is refused
    assert first.get("orgs/a/users/u1") == {
        "name": "田中",
        "at": datetime(2028, 2, 29, tzinfo=UTC),
        "level": 3,
    }
    assert first.create("orgs/a/users/u2", {"name": "other"}) is False
    assert [i for i, _ in first.query("orgs/a/users")] == ["u1", "u2"]
    first.delete("orgs/a/users/u2")
    assert second.get("orgs/a/users/u2") is None


def test_concurrent_create_of_one_path_from_threads_and_stores_yields_one_true(db: Path):
    # GIVEN three stores on one file, shared by eight threads
    stores = [SQLiteStore(db) for _ in range(3)]
    counter = iter(range(8))
    counter_lock = threading.Lock()

    def create() -> bool:
        with counter_lock:
            n = next(counter)
        return stores[n % 3].create("orgs/a/claims/turn-1", {"by": n})

    # WHEN they all create the same document at once
    results = _race(8, create)
    # THEN exactly one wins and the document is the winner's
    assert sorted(results, key=str) == [False] * 7 + [True]
    doc = stores[0].get("orgs/a/claims/turn-1")
    assert doc is not None and doc["by"] in range(8)


def test_transactions_from_two_stores_serialise(db: Path):
    first, second = SQLiteStore(db), SQLiteStore(db)
    first.set("orgs/a/counters/c", {"v": 0})

    def bump(txn):  # type: ignore[no-untyped-def]
        v = txn.get("orgs/a/counters/c")["v"]
        txn.set("orgs/a/counters/c", {"v": v + 1})

    stores = iter([first, second] * 5)
    pick = threading.Lock()

    def run() -> None:
        with pick:
            store = next(stores)
        store.run_transaction(bump)

    assert _race(10, run) == [None] * 10
    assert second.get("orgs/a/counters/c") == {"v": 10}


def test_a_store_opened_later_finds_the_documents_on_disk(db: Path):
    SQLiteStore(db).set("orgs/a/teachings/t", {"active": True, "blob": b"\x00\xff"})
    assert SQLiteStore(db).get("orgs/a/teachings/t") == {"active": True, "blob": b"\x00\xff"}


def test_the_database_is_in_wal_mode(db: Path):
    SQLiteStore(db).set("orgs/a/x/1", {})
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_values_round_trip_with_their_types(db: Path):
    store = SQLiteStore(db)
    tokyo = timezone(timedelta(hours=9))
    doc = {
        "at": datetime(2028, 2, 29, 23, 59, 59, 123456, tzinfo=tokyo),
        "raw": b"\x00bytes",
        "nested": {"list": [1, 2.5, None, True, {"deep": ["x"]}], "$t": "a user key that looks like a tag"},
        "text": "ユニコード",
    }
    store.set("orgs/a/docs/d", doc)
    got = store.get("orgs/a/docs/d")
    assert got == doc
    assert got is not None and got["at"].utcoffset() == timedelta(hours=9)


def test_naive_datetimes_are_taken_as_utc_like_firestore(db: Path):
    store = SQLiteStore(db)
    store.set("orgs/a/docs/d", {"at": datetime(2028, 2, 29, 12, 0)})
    assert store.get("orgs/a/docs/d") == {"at": datetime(2028, 2, 29, 12, 0, tzinfo=UTC)}


def test_a_value_json_cannot_hold_is_refused_and_nothing_is_written(db: Path):
    store = SQLiteStore(db)
    with pytest.raises(TypeError):
        store.set("orgs/a/docs/d", {"bad": {1, 2}})
    with pytest.raises(TypeError):
        store.set("orgs/a/docs/d", {"bad": {1: "int key"}})
    assert store.get("orgs/a/docs/d") is None


def test_query_orders_types_like_firestore_and_leaves_out_missing_fields(db: Path):
    # the order the Firestore emulator answers for the same documents
    store = SQLiteStore(db)
    values = {
        "1": None,
        "2": 5,
        "4": "s",
        "5": True,
        "6": 1.5,
        "7": datetime(2024, 1, 1, tzinfo=UTC),
        "8": b"x",
        "9": [1],
        "10": {"a": 1},
        "11": 1,
    }
    for doc_id, value in values.items():
        store.set(f"q/{doc_id}", {"v": value})
    store.set("q/3", {"w": 1})
    assert [i for i, _ in store.query("q", order_by="v")] == [
        "1",
        "5",
        "11",
        "6",
        "2",
        "7",
        "4",
        "8",
        "9",
        "10",
    ]
    assert [i for i, _ in store.query("q")] == ["1", "10", "11", "2", "3", "4", "5", "6", "7", "8", "9"]
    assert [i for i, _ in store.query("q", where=[("v", ">=", 1)])] == ["11", "6", "2"]
    assert [i for i, _ in store.query("q", where=[("v", "==", 1)])] == ["11"]
    assert [i for i, _ in store.query("q", where=[("v", "==", True)])] == ["5"]
    assert [i for i, _ in store.query("q", where=[("v", "!=", 5)])] == [
        "5",
        "11",
        "6",
        "7",
        "4",
        "8",
        "9",
        "10",
    ]
    assert [i for i, _ in store.query("q", where=[("v", "in", [5, "s", None])])] == ["2", "4"]


def test_ties_go_by_path_in_the_direction_of_the_order(db: Path):
    store = SQLiteStore(db)
    store.set("t/a", {"n": 1})
    store.set("t/b", {"n": 1})
    store.set("t/c", {"n": 0})
    assert [i for i, _ in store.query("t", order_by="n", descending=True)] == ["b", "a", "c"]
    assert [i for i, _ in store.query("t", order_by="n")] == ["c", "a", "b"]


def test_merge_is_deep_for_nested_maps_like_firestore(db: Path):
    store = SQLiteStore(db)
    store.set("c/d", {"m": {"a": 1, "b": {"x": 1}}, "k": 1})
    store.set("c/d", {"m": {"b": {"y": 2}}}, merge=True)
    assert store.get("c/d") == {"k": 1, "m": {"a": 1, "b": {"x": 1, "y": 2}}}
    store.set("c/d", {"m": {}}, merge=True)
    assert store.get("c/d") == {"k": 1, "m": {}}


def test_a_transaction_read_after_a_write_is_refused_and_writes_nothing(db: Path):
    store = SQLiteStore(db)

    def misordered(txn):  # type: ignore[no-untyped-def]
        txn.set("orgs/a/tasks/t", {"n": 1})
        txn.get("orgs/a/tasks/t")

    with pytest.raises(ReadAfterWriteError):
        store.run_transaction(misordered)
    assert store.get("orgs/a/tasks/t") is None


def test_a_failing_transaction_leaves_no_partial_writes(db: Path):
    store = SQLiteStore(db)
    store.set("orgs/a/receipts/r", {"done": True})

    def effect(txn):  # type: ignore[no-untyped-def]
        txn.set("orgs/a/tasks/t1", {"n": 1})
        txn.create("orgs/a/receipts/r", {"done": True})
        txn.set("orgs/a/tasks/t2", {"n": 2})

    with pytest.raises(AlreadyExistsError):
        store.run_transaction(effect)
    assert store.query("orgs/a/tasks") == []


def test_a_write_from_inside_a_transaction_is_part_of_it(db: Path):
    # GIVEN code that calls the store itself from inside a transaction (as layers may)
    store = SQLiteStore(db)

    def effect(txn):  # type: ignore[no-untyped-def]
        store.set("orgs/a/log/1", {"seen": True})
        raise RuntimeError("the transaction fails after that write")

    # WHEN the transaction fails THEN that write is rolled back with it
    with pytest.raises(RuntimeError):
        store.run_transaction(effect)
    assert store.get("orgs/a/log/1") is None


def test_a_database_locked_for_too_long_raises_store_unavailable(db: Path):
    # GIVEN another connection holding the write lock
    store = SQLiteStore(db, busy_timeout=0.05, attempts=2)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        # WHEN a write cannot get the lock THEN the store reports itself unavailable
        with pytest.raises(StoreUnavailable):
            store.set("orgs/a/x/1", {"n": 1})
        # and a reader is not blocked (WAL)
        assert store.get("orgs/a/x/1") is None
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    store.set("orgs/a/x/1", {"n": 1})
    assert store.get("orgs/a/x/1") == {"n": 1}


def test_a_transaction_blocked_by_a_briefly_held_lock_still_commits(db: Path):
    # GIVEN another connection holding the write lock, with a write of its own
    store = SQLiteStore(db)
    holder = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("""INSERT INTO documents VALUES ('c/d', 'c', 'c', '{"v":1}')""")

    def release_soon() -> None:
        time.sleep(0.2)  # not a timing assertion: the transaction below must wait or retry
        holder.execute("COMMIT")

    t = threading.Thread(target=release_soon)
    t.start()

    def bump(txn):  # type: ignore[no-untyped-def]
        txn.set("c/d", {"v": txn.get("c/d")["v"] + 1})

    # WHEN a transaction starts while the lock is held THEN it sees the holder's commit
    store.run_transaction(bump)
    t.join()
    holder.close()
    assert store.get("c/d") == {"v": 2}


@pytest.mark.parametrize("path", ["orgs", "orgs//users/u", "", "orgs/a/users"])
def test_a_path_that_is_not_a_document_is_refused(db: Path, path: str):
    with pytest.raises(ValueError):
        SQLiteStore(db).set(path, {})


def test_an_in_memory_database_is_refused_because_threads_would_not_share_it():
    with pytest.raises(ValueError):
        SQLiteStore(":memory:")
