"""A process killed inside a tool's transaction, on the Firestore emulator.

The executor's worker dies after its transaction read the call's receipt and before it
committed (the crash e2e kills workers mid-step). The emulator keeps that dead transaction's
lock on the receipt until it expires the transaction (about a minute), so the redelivered call
waits on the receipt. That wait is the store's, not the tool's: within the turn's budget it ends
with the task created once, never with ``tool_timeout`` and an answer without the task.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from shared_lib.tools.execution import receipt_path
from shared_lib.turn.callctx import turn_budget
from tests.unit.tools.tool_fakes import NOW, ORG, SENDER, call, make_executor, seed

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
CALL = "01KILLEDMIDTXNAAAAAAAAAAAA-0-0"
TASK = {"body": "展示会のブース設営の見積もりをまとめる", "assignee_name": "田中太郎", "limit_date": "明日"}
# The executor's transaction, held open until the process is killed (as a SIGKILLed worker leaves it).
HOLD = """
import sys, threading
from shared_lib.adapters.firestore_store import FirestoreStore

def hold(txn):
    txn.get(sys.argv[2])
    print("holding", flush=True)
    threading.Event().wait()

FirestoreStore(project=sys.argv[1]).run_transaction(hold)
"""


def kill_inside_a_transaction_on(project: str, path: str) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD, project, path],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "holding"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)


def test_given_a_worker_killed_inside_the_tools_transaction_then_the_redelivered_call_creates_the_task_once(
    firestore_store, firestore_project
):
    # GIVEN a directory, and a worker killed while its transaction held the call's receipt
    seed(firestore_store)
    kill_inside_a_transaction_on(firestore_project, receipt_path(ORG, CALL))
    executor = make_executor(firestore_store)
    # WHEN the redelivered call runs with a turn's budget longer than the emulator keeps the lock
    with turn_budget(NOW + timedelta(seconds=150), NOW):
        out = call(executor, "chatwork_task_create", TASK, call_id=CALL, user=SENDER)
    # THEN it waited for the store and created the task, once
    assert out.ok and out.error_code is None, out
    created = [d for _, d in firestore_store.query(f"orgs/{ORG}/tasks") if "ブース設営" in str(d.get("body"))]
    assert len(created) == 1
    assert firestore_store.get(receipt_path(ORG, CALL))["status"] == "done"
