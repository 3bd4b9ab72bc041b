"""A receipt a killed process left locked: the executor waits for the store, it does not time out.

A worker SIGKILLed inside a tool's transaction (the receipt read, the task not yet committed)
leaves that transaction open; the store keeps the receipt locked until it expires the
transaction (a minute on Firestore and its emulator). The redelivered call reads the same
receipt and waits for that lock. Before, that wait counted against the tool's own timeout: the
call failed ``tool_timeout``, the turn answered 「時間がかかりすぎた」 and no task was ever
created (the crash e2e's flake). The lock is the store's time, waited for within the turn's
budget; past the budget the step is delivered again, and the receipt keeps it exactly once.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from tool_fakes import NOW, ORG, SENDER, call, docs, make_executor, seed

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.errors import LayerRetry
from shared_lib.tools.builtin import builtin_registry
from shared_lib.tools.execution import receipt_path
from shared_lib.tools.registry import ToolRegistry
from shared_lib.turn.callctx import turn_budget

TOOL_SECONDS = 0.05  # the tool's own timeout, cut short so the test runs fast
LOCK_SECONDS = 0.5  # how long the store keeps a dead transaction's lock: ten times the tool's timeout
CALL = "01KILLEDTURNAAAAAAAAAAAAAA-0-0"
TASK = {"body": "来週の定例の見積書を作成", "assignee_name": "田中太郎", "limit_date": "明日"}


class _WaitingTransaction:
    def __init__(self, txn: Any, store: DeadTransactionStore) -> None:
        self._txn, self._store = txn, store

    def get(self, path: str) -> Any:
        if path == self._store.locked_path:
            self._store.waited.set()
            self._store.expired.wait(timeout=30)  # the store answers once the dead lock expired
        return self._txn.get(path)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._txn, name)


class DeadTransactionStore(MemoryStore):
    """The store right after a process died inside a transaction that read ``locked_path``:
    a transaction reading it waits until the store expires the dead one (``lock_seconds`` after
    the death, as Firestore does after a transaction's idle time)."""

    def __init__(self, locked_path: str, lock_seconds: float) -> None:
        super().__init__()
        self.locked_path = locked_path
        self.waited = threading.Event()
        self.expired = threading.Event()
        self._expiry = threading.Timer(lock_seconds, self.expired.set)
        self._expiry.daemon = True

    def process_died(self) -> None:
        self._expiry.start()

    def run_transaction(self, fn: Any) -> Any:
        return super().run_transaction(lambda txn: fn(_WaitingTransaction(txn, self)))


def quick_registry() -> ToolRegistry:
    """The built-in tools, the task creation's timeout cut to ``TOOL_SECONDS``."""
    return ToolRegistry(
        [
            replace(s, timeout_seconds=TOOL_SECONDS) if s.name == "chatwork_task_create" else s
            for s in builtin_registry().enabled()
        ]
    )


@pytest.fixture
def store():
    locked = DeadTransactionStore(receipt_path(ORG, CALL), LOCK_SECONDS)
    seed(locked)
    locked.process_died()
    yield locked
    locked.expired.set()  # never leave a transaction of the test waiting


def tasks(store: MemoryStore) -> list[dict[str, Any]]:
    return [d for d in docs(store, "tasks").values() if "見積書" in str(d.get("body"))]


def test_given_a_receipt_locked_by_a_killed_transaction_when_the_turn_has_budget_then_the_task_is_created_once(
    store,
):
    # GIVEN the receipt of the call locked by a transaction whose process was killed
    executor = make_executor(store, registry=quick_registry())
    # WHEN the redelivered call runs within a turn's budget longer than the lock
    with turn_budget(NOW + timedelta(seconds=45), NOW):
        out = call(executor, "chatwork_task_create", TASK, call_id=CALL, user=SENDER)
    # THEN it waited for the store instead of timing out, and created the task once
    assert store.waited.is_set()
    assert out.ok and out.error_code is None and not out.replayed, out
    assert len(tasks(store)) == 1
    assert store.get(receipt_path(ORG, CALL))["status"] == "done"
    # AND a later redelivery replays the receipt, no second task
    again = call(executor, "chatwork_task_create", TASK, call_id=CALL, user=SENDER)
    assert again.ok and again.replayed and len(tasks(store)) == 1


def test_given_a_receipt_locked_past_the_turns_budget_then_the_step_is_delivered_again_and_creates_one_task(
    store,
):
    # GIVEN the receipt locked by a killed transaction, and less of the turn's budget left than the lock
    executor = make_executor(store, registry=quick_registry())
    # WHEN the call runs out of budget while the store still holds the receipt
    with turn_budget(NOW + timedelta(seconds=LOCK_SECONDS / 5), NOW), pytest.raises(LayerRetry):
        call(executor, "chatwork_task_create", TASK, call_id=CALL, user=SENDER)
    # THEN nothing was created yet: the step asks to be delivered again (not a tool_timeout)
    assert tasks(store) == []
    # WHEN it is delivered again once the store expired the dead transaction
    assert store.expired.wait(timeout=30)
    with turn_budget(NOW + timedelta(seconds=45), NOW):
        out = call(executor, "chatwork_task_create", TASK, call_id=CALL, user=SENDER)
    # THEN the task exists once (the abandoned attempt committed nothing of its own)
    assert out.ok and out.error_code is None, out
    assert len(tasks(store)) == 1


def test_given_a_handler_slower_than_its_timeout_inside_the_budget_then_it_is_still_a_tool_timeout():
    # GIVEN a free receipt and a turn with plenty of budget
    free = MemoryStore()
    seed(free)
    release = threading.Event()
    registry = quick_registry()
    spec = registry.get("chatwork_task_create")
    assert spec is not None
    slow = replace(spec, handler=lambda p, ctx, txn: release.wait(30) and spec.handler(p, ctx, txn))
    executor = make_executor(free, registry=ToolRegistry([slow]))
    # WHEN the handler itself outruns its tool's timeout
    try:
        with turn_budget(NOW + timedelta(seconds=45), NOW):
            out = call(executor, "chatwork_task_create", TASK, call_id=CALL, user=SENDER)
    finally:
        release.set()
    # THEN the budget does not stretch the tool's own timeout
    assert out.error_code == "tool_timeout"
    assert tasks(free) == [] and free.get(receipt_path(ORG, CALL)) is None
