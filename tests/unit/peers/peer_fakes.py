"""In-memory peers for the router and health board tests: scripted answers, failures, holds."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

from shared_lib.errors import LLMError
from shared_lib.ports import LLMRequest, LLMResponse, PeerHealth, PeerKind
from shared_lib.turn import callctx

T0 = datetime(2026, 11, 24, 10, 0, tzinfo=UTC)


class Clock:
    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


class FakePeer:
    """An ``LLMPeer``: answers ``text`` unless ``failure`` (an ``LLMError`` code) is set."""

    kind: PeerKind = "anthropic"

    def __init__(self, name: str, *, local: bool = False, text: str | None = None) -> None:
        self.name = name
        self.local = local
        self.max_context_tokens = 200_000
        self.supports_parallel = True
        self.text = text or f"from {name}"
        self.failure: str | None = None
        self.healthy = True
        self.calls = 0
        self.probes = 0
        self.hold: threading.Event | None = None  # a call waits for it (concurrency tests)
        self.entered = threading.Event()

    def complete(self, request: LLMRequest) -> LLMResponse:
        self.calls += 1
        self.entered.set()
        if self.hold is not None:
            self.hold.wait(5)
        if self.failure:
            raise LLMError(self.failure, "APIStatusError status=529 overloaded_error")
        return LLMResponse(
            content=[{"type": "text", "text": self.text}], stop_reason="end_turn", model=request.model
        )

    def health(self) -> PeerHealth:
        self.probes += 1
        reason = "" if self.healthy else "APIStatusError status=529"
        return PeerHealth(healthy=self.healthy, checked_at=T0, latency_ms=12.0, reason=reason)


def request(call_type: str = "proposal") -> LLMRequest:
    return LLMRequest(
        call_type=call_type, model="claude-sonnet-4-6", messages=[{"role": "user", "content": "hi"}]
    )  # type: ignore[arg-type]


@contextmanager
def local_only_turn() -> Iterator[None]:
    """The call context of a local-only turn (what the layer runner binds)."""
    ctx = callctx.CallContext(
        org_id="acme",
        turn_id="T1",
        step=0,
        layer="brain",
        shadow=False,
        conversation_key="c",
        traceparent="",
        local_only=True,
    )
    token = callctx._current.set(ctx)
    try:
        yield
    finally:
        callctx._current.reset(token)
