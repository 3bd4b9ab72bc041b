"""Reading a whole collection (or collection group) a page at a time, with a cursor to resume.

The store port has no ``start_after``: a page is a query ordered by one field, from the last
value the previous page ended on (``>=``), the documents already read at that value skipped.
Ties are kept apart by the document's key (its ``org_id`` and id: a collection group's ids are
only unique within their organisation), so no document is read twice or missed however many
share a value; a page whose every row was a tie already read is read again, larger.

A document without the ordering field is never returned by Firestore's ordered query: order by a
field every document of the collection has (``created_at``, a deadline the query filters on).

>>> cursor = Cursor.start()
>>> cursor.done
False
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from shared_lib.ports import Doc, Op, Store

Row = tuple[str, Doc]


def row_key(doc_id: str, doc: Doc) -> str:
    """What tells two rows of a collection group apart: the organisation and the id."""
    return f"{doc.get('org_id') or ''}/{doc_id}"


@dataclass
class Cursor:
    """Where a scan stands: the value of the ordering field the last page ended on, the rows
    read at exactly that value, and whether the whole collection has been read."""

    value: Any = None
    seen: list[str] = field(default_factory=list)
    started: bool = False
    done: bool = False

    @classmethod
    def start(cls) -> Cursor:
        return cls()

    def as_doc(self) -> Doc:
        return {"value": self.value, "seen": list(self.seen), "started": self.started, "done": self.done}

    @classmethod
    def from_doc(cls, doc: Doc | None) -> Cursor:
        if not doc:
            return cls()
        return cls(
            value=doc.get("value"),
            seen=[str(s) for s in doc.get("seen") or []],
            started=bool(doc.get("started")),
            done=bool(doc.get("done")),
        )


def page(
    store: Store,
    collection: str,
    *,
    order_by: str,
    size: int,
    cursor: Cursor,
    where: Sequence[tuple[str, Op, Any]] = (),
    group: bool = False,
) -> tuple[list[Row], Cursor]:
    """The next page of at most ``size`` rows after ``cursor``, and the cursor after it."""
    if cursor.done:
        return [], cursor
    skip = set(cursor.seen)
    limit = size + len(skip)
    while True:
        filters = list(where)
        if cursor.started:
            filters.append((order_by, ">=", cursor.value))
        rows = store.query(collection, where=filters, order_by=order_by, limit=limit, group=group)
        fresh = [(i, d) for i, d in rows if not (cursor.started and row_key(i, d) in skip)][:size]
        exhausted = len(rows) < limit
        if fresh or exhausted:
            break
        limit *= 2  # every row was a tie read before: read past them
    if not fresh:
        return [], Cursor(cursor.value, list(cursor.seen), cursor.started, done=True)
    last = fresh[-1][1].get(order_by)
    same = [row_key(i, d) for i, d in fresh if d.get(order_by) == last]
    seen = [*cursor.seen, *same] if cursor.started and last == cursor.value else same
    more = not exhausted or len(fresh) < len([r for r in rows if row_key(*r) not in skip])
    return fresh, Cursor(last, seen, started=True, done=not more)


def scan(
    store: Store,
    collection: str,
    *,
    order_by: str,
    size: int,
    where: Sequence[tuple[str, Op, Any]] = (),
    group: bool = False,
    max_pages: int | None = None,
) -> Iterator[Row]:
    """Every row, a page of ``size`` at a time (at most ``max_pages`` pages when given)."""
    cursor, pages = Cursor.start(), 0
    while not cursor.done and (max_pages is None or pages < max_pages):
        rows, cursor = page(
            store, collection, order_by=order_by, size=size, cursor=cursor, where=where, group=group
        )
        pages += 1
        yield from rows
