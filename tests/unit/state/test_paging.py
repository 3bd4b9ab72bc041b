"""Reading a collection group a page at a time (``state.paging``): every document once, in order,
however many share the ordering value (more than a page of them too) and whichever organisations
reuse an id; a cursor saved between two pages resumes where it stopped."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.state import paging

T0 = datetime(2026, 11, 25, 1, 0, tzinfo=UTC)


@pytest.fixture
def store() -> MemoryStore:
    # GIVEN goals of three organisations, ids reused across them, five created in the same second
    s = MemoryStore()
    for org in ("acme", "beta", "kansai-shoji"):
        for n in range(4):
            at = T0 if n < 2 else T0 + timedelta(minutes=n)
            s.set(f"orgs/{org}/goals/G{n}", {"org_id": org, "status": "active", "created_at": at})
    s.set("orgs/beta/goals/G9", {"org_id": "beta", "status": "done", "created_at": T0})
    return s


def keys(rows) -> list[str]:
    return [paging.row_key(i, d) for i, d in rows]


@pytest.mark.parametrize("size", [1, 2, 5, 7, 50])
def test_every_document_is_read_once_in_order_whatever_the_page_size(store: MemoryStore, size: int) -> None:
    # WHEN the active goals are read a page of ``size`` at a time
    rows = list(
        paging.scan(
            store, "goals", where=[("status", "==", "active")], order_by="created_at", size=size, group=True
        )
    )
    # THEN each of the twelve comes once, oldest first, the finished one never
    assert len(keys(rows)) == len(set(keys(rows))) == 12
    assert [d["created_at"] for _, d in rows] == sorted(d["created_at"] for _, d in rows)
    assert "beta/G9" not in keys(rows)


def test_a_saved_cursor_resumes_after_the_last_page(store: MemoryStore) -> None:
    # GIVEN two pages of two read, the cursor kept as a document (as a tick keeps it)
    cursor, first = paging.Cursor.start(), []
    for _ in range(2):
        rows, cursor = paging.page(store, "goals", order_by="created_at", size=2, cursor=cursor, group=True)
        first += keys(rows)
    saved = cursor.as_doc()
    # WHEN a later run goes on from the saved cursor
    cursor, rest = paging.Cursor.from_doc(saved), []
    while not cursor.done:
        rows, cursor = paging.page(store, "goals", order_by="created_at", size=2, cursor=cursor, group=True)
        rest += keys(rows)
    # THEN together they read every document once
    assert len(first) == 4 and not set(first) & set(rest) and len(first + rest) == 13


def test_more_ties_than_a_page_are_read_past_without_a_loop() -> None:
    # GIVEN nine tasks due at the very same minute
    s = MemoryStore()
    for n in range(9):
        s.set(f"orgs/o{n % 3}/heartbeat_tasks/hb-{n}", {"org_id": f"o{n % 3}", "next_due_at": T0})
    # WHEN read two at a time THEN all nine come, once each, in five pages
    pages, cursor, seen = 0, paging.Cursor.start(), []
    while not cursor.done:
        rows, cursor = paging.page(
            s, "heartbeat_tasks", order_by="next_due_at", size=2, cursor=cursor, group=True
        )
        pages += 1 if rows else 0
        seen += keys(rows)
    assert len(seen) == len(set(seen)) == 9 and pages == 5
