"""One contract, every Store adapter: the in-memory store and Firestore on the emulator."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from shared_lib import idempotency
from shared_lib.ports import AlreadyExistsError, Store


@pytest.fixture(params=["memory", "firestore"])
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
    assert idempotency.acquire(store, path, now=now, lease=lease) is idempotency.ClaimState.ACQUIRED
    assert idempotency.acquire(store, path, now=now, lease=lease) is idempotency.ClaimState.BUSY
    assert (
        idempotency.acquire(store, path, now=now + timedelta(minutes=1), lease=lease)
        is idempotency.ClaimState.ACQUIRED
    )
    idempotency.complete(store, path, now=now)
    assert idempotency.acquire(store, path, now=now, lease=lease) is idempotency.ClaimState.COMPLETED
