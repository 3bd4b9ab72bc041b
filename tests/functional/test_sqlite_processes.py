"""The SQLite store shared by real processes (as the demo's and the CLI's are): creates and
transactions serialise across them. One process's cases are ``tests/unit/adapters/test_sqlite_store.py``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from shared_lib.adapters.sqlite_store import SQLiteStore

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "charter.db"


_WORKER = """
import sys
from shared_lib.adapters.sqlite_store import SQLiteStore

store = SQLiteStore(sys.argv[1])
won = store.create("orgs/a/claims/turn-1", {"by": sys.argv[2]})


def bump(txn):
    txn.set("orgs/a/counters/c", {"v": (txn.get("orgs/a/counters/c") or {"v": 0})["v"] + 1})


for _ in range(20):
    store.run_transaction(bump)
print(won)
"""


def test_two_processes_on_one_file_serialise_transactions_and_creates(db: Path):
    # GIVEN two real processes on one file
    SQLiteStore(db)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(db), name], stdout=subprocess.PIPE, text=True, cwd=ROOT
        )
        for name in ("p1", "p2")
    ]
    # WHEN both create one claim and bump one counter 20 times each
    outputs = [p.communicate(timeout=120)[0].strip() for p in procs]
    # THEN one create won, and no bump was lost
    assert [p.returncode for p in procs] == [0, 0]
    assert sorted(outputs) == ["False", "True"]
    assert SQLiteStore(db).get("orgs/a/counters/c") == {"v": 40}
