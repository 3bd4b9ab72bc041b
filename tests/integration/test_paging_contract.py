"""Reading a collection group a page at a time (``state.paging``) holds on every Store adapter,
Firestore's emulator included: a range on the ordering field beside the query's own filters, an
equality filter with another ordering field, timestamps that tie (read back from Firestore as its
own datetime type), ids reused across organisations; every document once, in order."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from shared_lib.ports import Store
from shared_lib.state import paging

T0 = datetime(2026, 11, 25, 1, 0, tzinfo=UTC)


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Store:
    from shared_lib.adapters.sqlite_store import SQLiteStore

    return SQLiteStore(tmp_path / "charter.db")


@pytest.fixture(params=["memory", "firestore", "sqlite"])
def store(request: pytest.FixtureRequest) -> Store:
    return request.getfixturevalue(f"{request.param}_store")


def test_waiting_jobs_of_every_organisation_are_paged_once_each(store: Store) -> None:
    # GIVEN eleven waiting jobs of three organisations (ids reused), four sharing a deadline,
    # and two already past theirs; a unique collection name keeps runs on one emulator apart
    coll = f"paging_jobs_{uuid.uuid4().hex[:6]}"
    for n in range(13):
        org = ("acme", "beta-kogyo", "kansai-shoji")[n % 3]
        decide_by = T0 + timedelta(minutes=10 if n < 4 else n)
        if n >= 11:
            decide_by = T0 - timedelta(minutes=n)
        store.set(f"orgs/{org}/{coll}/J-{n // 3}", {"org_id": org, "decide_by": decide_by, "n": n})
    # WHEN read three a page, only those that can still be answered
    rows = list(
        paging.scan(store, coll, where=[("decide_by", ">", T0)], order_by="decide_by", size=3, group=True)
    )
    # THEN each of the eleven comes once, by deadline
    assert sorted(d["n"] for _, d in rows) == list(range(11))
    assert [d["decide_by"] for _, d in rows] == sorted(d["decide_by"] for _, d in rows)


def test_active_goals_are_paged_by_creation_once_each(store: Store) -> None:
    coll = f"paging_goals_{uuid.uuid4().hex[:6]}"
    for n in range(7):
        org = ("acme", "beta-kogyo")[n % 2]
        status = "done" if n == 6 else "active"
        store.set(f"orgs/{org}/{coll}/G{n}", {"org_id": org, "status": status, "created_at": T0, "n": n})
    cursor, seen = paging.Cursor.start(), []
    while not cursor.done:
        rows, cursor = paging.page(
            store,
            coll,
            where=[("status", "==", "active")],
            order_by="created_at",
            size=2,
            cursor=cursor,
            group=True,
        )
        seen += [d["n"] for _, d in rows]
        cursor = paging.Cursor.from_doc(cursor.as_doc())  # kept between ticks as a document
    assert sorted(seen) == list(range(6))
