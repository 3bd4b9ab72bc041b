"""Writes that ride on a claimed stage's completion: its LLM call log entries.

A claimed stage completes its claim with one plain write once it has published (the common
case, ``Claims.complete``). The call log's entries of the stage's model calls were one more
``set`` each, in the stage's time; written with the completion they cost nothing more: one
batch (``set_many``, one commit) carries the completion and the entries, or the completion's
transaction does when it checks the holder.

What changes, and why it is kept: an entry is written when the stage completes rather than
when its call answers. A stage that raises (a failed call, a send that failed) writes its
entries with the claim's release, so an error's evidence stays. A worker killed mid-stage
loses the entries of its unfinished attempt, as it loses that attempt's usage on the envelope
(``turn.usage``, summed by ``charter cost``): the entries and the turn's total agree on the
attempt that completed. A call answered after its stage is over (a source's thread that
outlived the stage's wait), or past ``MAX_CARRIED``, writes at once; a completion whose carried
writes fail is written again without them (``LayerRunner``: the log never fails a stage).

>>> from shared_lib.adapters.memory_store import MemoryStore
>>> store = MemoryStore()
>>> with carrying() as carried:
...     write(store, "orgs/a/llm_calls/c1", {"model": "m"})
>>> store.get("orgs/a/llm_calls/c1") is None, carried.take()
(True, [('orgs/a/llm_calls/c1', {'model': 'm'}, False)])
>>> write(store, "orgs/a/llm_calls/c2", {"model": "m"}); store.get("orgs/a/llm_calls/c2")
{'model': 'm'}
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from shared_lib.observability.logs import log_event
from shared_lib.ports import Doc, Store

Write = tuple[str, Doc, bool]
# Writes carried at most: a call log entry is at most 1 MiB (``telemetry.llm_calls.MAX_TEXT``
# keeps it so), a Firestore commit at most 10 MiB; a stage that calls more writes the rest at once
MAX_CARRIED = 8


class Carried:
    """The writes a stage carries to its completion; once taken, later ones write at once."""

    def __init__(self) -> None:
        self._writes: list[Write] = []
        self._lock = threading.Lock()  # the context's sources call the model on their own threads
        self._taken = False

    def add(self, write: Write) -> bool:
        """Carry ``write``; ``False`` when the writes were taken already (write it now)."""
        with self._lock:
            if self._taken or len(self._writes) >= MAX_CARRIED:
                return False
            self._writes.append(write)
            return True

    def take(self) -> list[Write]:
        """The carried writes, in order; from now on nothing more is carried."""
        with self._lock:
            self._taken = True
            writes, self._writes = self._writes, []
            return writes


_carried: contextvars.ContextVar[Carried | None] = contextvars.ContextVar("riders", default=None)


@contextmanager
def carrying() -> Iterator[Carried]:
    """Carry the block's rider writes (and its threads', which copy the context)."""
    carried = Carried()
    token = _carried.set(carried)
    try:
        yield carried
    finally:
        _carried.reset(token)


def write(store: Store, path: str, doc: Doc, *, merge: bool = False) -> None:
    """``store.set``, or carried to the stage's completion when a claimed stage runs."""
    carried = _carried.get()
    if carried is None or not carried.add((path, doc, merge)):
        store.set(path, doc, merge=merge)


def flush(store: Store, carried: Carried) -> None:
    """Write what ``carried`` holds now, in one batch (a stage that failed: its evidence); a
    failure is logged, never raised (the log is evidence, not a gate)."""
    if writes := carried.take():
        try:
            store.set_many(writes)
        except Exception as exc:
            log_event(
                "llm_call_log_failed", layer="llm", severity="ERROR", error=f"{type(exc).__name__}: {exc}"
            )
