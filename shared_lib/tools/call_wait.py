"""How long a tool call in a transaction waits, and for what: its handler, or the store.

A transactional call (``ToolExecutor``: the handler's writes and the receipt commit together)
spends its time in two places. The **handler** is the tool's work: its tool's
``timeout_seconds`` bounds it, and a handler past it is the tool timing out. The **store** has
the call before and after the handler: the receipt's read, the commit, the transaction's
retries. A process killed inside such a transaction leaves the receipt locked until the store
expires the transaction (a minute on Firestore and its emulator), so the call that the
redelivery makes again waits for that lock: a wait, not the tool being slow. It is waited for
while the turn's processing budget lasts (``callctx.remaining``; at least the tool's timeout),
then ``LayerRetry``: the step is delivered again and the receipt decides. Reporting it as the
tool timing out would answer the turn without its effect.

>>> clock = HandlerClock()
>>> run_on_store(lambda: clock.run(lambda: "done"), clock, timeout=1.0, patience=1.0, on_abandon=lambda: None)
'done'
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout
from typing import TypeVar

from shared_lib.errors import CharterError, LayerRetry
from shared_lib.turn.callctx import remaining

T = TypeVar("T")

# How often a waiting call looks whether its handler has started or ended.
POLL_SECONDS = 0.05


class HandlerTimeout(CharterError):
    """The handler ran past its tool's timeout (the executor reports ``tool_timeout``)."""


class HandlerClock:
    """When the handler of a call started (``None`` while it is not running: the store has it)."""

    def __init__(self) -> None:
        self.since: float | None = None

    def run(self, fn: Callable[[], T]) -> T:
        self.since = time.monotonic()
        try:
            return fn()
        finally:
            self.since = None


def store_patience(timeout: float) -> float:
    """How long a call may wait for the store: what is left of the turn's budget, at least the
    tool's ``timeout`` (outside a turn's budget: the tool's timeout)."""
    left = remaining()
    return timeout if left is None else max(timeout, left)


def run_on_store(
    fn: Callable[[], T],
    handler: HandlerClock,
    *,
    timeout: float,
    patience: float,
    on_abandon: Callable[[], None],
) -> T:
    """``fn()`` (a transaction around a handler that runs under ``handler``) on a worker thread.

    ``HandlerTimeout`` once the handler has run ``timeout`` seconds; ``LayerRetry`` once ``patience``
    seconds (at least ``timeout``) have passed while the handler was not running. Either way
    ``on_abandon`` is called first, so the transaction left behind commits nothing it has not
    already sent."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tool")
    future = pool.submit(contextvars.copy_context().run, fn)  # the turn's call context goes along
    pool.shutdown(wait=False)
    patience = max(patience, timeout)
    give_up = time.monotonic() + patience
    while True:
        since, now = handler.since, time.monotonic()
        left = since + timeout - now if since is not None else give_up - now
        if left <= 0:
            on_abandon()
            if since is not None:
                raise HandlerTimeout(f"no answer within {timeout}s")
            raise LayerRetry(f"the store held the call for {patience:.0f}s")
        try:
            return future.result(timeout=min(left, POLL_SECONDS))
        except FuturesTimeout:
            continue
