"""Which turn the current code is working for, without threading it through every call.

The layer runner wraps each layer in ``call_context(turn)``; anything below it (the LLM
call log, log lines written without a turn) reads ``current()``. A context variable, so
threads and nested contexts (the shadow layer runs candidate layers inside its own run)
each see their own value.

>>> current() is None
True
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shared_lib.envelope import Turn


@dataclass(frozen=True)
class CallContext:
    org_id: str
    turn_id: str
    step: int
    layer: str
    shadow: bool
    conversation_key: str
    traceparent: str


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
    )
    token = _current.set(ctx)
    try:
        yield ctx
    finally:
        _current.reset(token)
