"""Which turn the current code is working for, without threading it through every call.

The layer runner wraps each layer in ``call_context(turn)``; anything below it (the LLM
call log, the local-only guard of the LLM port, log lines written without a turn) reads
``current()``. A context variable, so
threads and nested contexts (the shadow layer runs candidate layers inside its own run)
each see their own value.

The runner also binds the turn's budget (``turn_budget``): ``remaining()`` is what is left
of it in seconds, on the monotonic clock of this process (the absolute deadline is read
against the runtime's clock once, when the layer starts), or ``None`` outside a budget.

>>> current() is None, remaining() is None
(True, True)
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shared_lib.turn.envelope import Turn


@dataclass(frozen=True)
class CallContext:
    org_id: str
    turn_id: str
    step: int
    layer: str
    shadow: bool
    conversation_key: str
    traceparent: str
    local_only: bool = False  # the turn is local-only (/local): no cloud LLM may be called


_current: ContextVar[CallContext | None] = ContextVar("charter_call_context", default=None)


def current() -> CallContext | None:
    return _current.get()


@contextmanager
def call_context(turn: Turn, layer: str = "") -> Iterator[CallContext]:
    """Bind ``turn`` (and the layer running it) for the duration of the block."""
    ctx = CallContext(
        org_id=turn.org_id,
        turn_id=turn.turn_id,
        step=turn.step,
        layer=layer,
        shadow=turn.shadow,
        conversation_key=turn.conversation_key,
        traceparent=turn.traceparent,
        local_only=turn.route.local_only,
    )
    token = _current.set(ctx)
    try:
        yield ctx
    finally:
        _current.reset(token)


@contextmanager
def job_context(
    org_id: str, layer: str, *, conversation_key: str = "", local_only: bool = False
) -> Iterator[CallContext]:
    """Bind a background job's work on one organisation (no turn): the LLM call log files its
    calls under ``org_id``, and a local-only conversation stays off the cloud peers."""
    ctx = CallContext(
        org_id=org_id,
        turn_id="",
        step=0,
        layer=layer,
        shadow=False,
        conversation_key=conversation_key,
        traceparent="",
        local_only=local_only,
    )
    token = _current.set(ctx)
    try:
        yield ctx
    finally:
        _current.reset(token)


# The monotonic instant the current turn's budget runs out (``None``: no budget bound).
_budget_until: ContextVar[float | None] = ContextVar("charter_turn_budget", default=None)


@contextmanager
def turn_budget(deadline: datetime | None, now: datetime) -> Iterator[None]:
    """Bind the turn's absolute ``deadline`` (``now`` is the runtime's clock) for the block."""
    until = None if deadline is None else time.monotonic() + (deadline - now).total_seconds()
    token = _budget_until.set(until)
    try:
        yield
    finally:
        _budget_until.reset(token)


def remaining() -> float | None:
    """Seconds left of the current turn's budget (zero or less: spent); ``None`` without one."""
    until = _budget_until.get()
    return None if until is None else until - time.monotonic()
