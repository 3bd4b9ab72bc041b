"""Anthropic ``LLM`` adapter: the real ``anthropic`` SDK (``base_url`` configurable, so the
same client talks to Claude, a gateway, or the local fake server).

**One retry policy** (seed 000 §6.7): the SDK's own retries are switched off
(``max_retries=0``) and this adapter retries with ``tenacity``, because a stream that is
cut after the response headers arrived is outside the SDK's retry loop, and one policy
must cover both. Retried: 408/409/429/5xx/529, timeouts, connection errors and
interrupted streams, with exponential backoff and jitter; a ``retry-after``
(``retry-after-ms``) header is honoured exactly, unless it asks for longer than
``max_retry_after`` (then the adapter gives up at once and reports it). When the policy
gives up, an ``LLMError`` with a catalogue code is raised: ``rate_limit``,
``api_timeout`` or ``llm_unavailable``.

**Bounded by the turn's budget** (``callctx.remaining``, set by the layer runner): a call
with its retries never runs past ``min(max_elapsed, what is left of the turn)``. Each
attempt's HTTP timeout is cut to what is left (a stalled attempt used to run the whole
``CHARTER_LLM_TIMEOUT`` however late it was), no backoff sleeps past it, and a call made
with nothing left fails at once with ``api_timeout``.

**Streaming** (seed 000 §6.7.6): with ``LLMRequest.stream`` the answer is read as SSE.
A stream cut before ``message_stop`` is *salvaged* when it carries no tool call and at
least one text block arrived complete (the complete blocks are the answer, the cut one
is dropped); otherwise it is retried: a ``tool_use`` block cut in the middle is never used. ``max_tokens`` continuation is the brain's job
(``shared_lib.brain.continuation``), not the transport's.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import anthropic
import httpx2
import tenacity
from pydantic import BaseModel, ConfigDict, Field
from tenacity.stop import stop_base

from shared_lib import tracing
from shared_lib.callctx import remaining
from shared_lib.errors import CharterError, LLMError
from shared_lib.logs import log_event
from shared_lib.ports import LLMRequest, LLMResponse, LLMUsage
from shared_lib.settings import Settings

RETRYABLE_STATUS = frozenset({408, 409, 429})
RETRYABLE_STREAM_ERRORS = frozenset({"overloaded_error", "api_error", "rate_limit_error", "timeout_error"})


class RetryPolicy(BaseModel):
    """Attempts, backoff and the ``retry-after`` ceiling of the one retry policy."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    max_retries: int = Field(default=3, ge=0, le=10)
    initial_delay: float = Field(default=0.5, ge=0)
    max_delay: float = Field(default=8.0, ge=0)
    max_retry_after: float = Field(default=60.0, ge=0)
    max_elapsed: float = Field(default=120.0, gt=0)

    @classmethod
    def from_settings(cls, settings: Settings) -> RetryPolicy:
        return cls(
            max_retries=settings.llm_max_retries,
            initial_delay=settings.llm_backoff_initial,
            max_delay=settings.llm_backoff_max,
            max_retry_after=settings.llm_retry_after_max,
            max_elapsed=settings.llm_retry_budget,
        )

    def backoff(self, retry_number: int) -> float:
        """Exponential backoff with "equal jitter": half fixed, half random (retry 1-based)."""
        ceiling = min(self.max_delay, self.initial_delay * 2.0 ** max(retry_number - 1, 0))
        return ceiling / 2 + random.uniform(0, ceiling / 2)


class _RetryAfterTooLong(stop_base):
    """Stop at once when the server asks for a longer wait than we may spend."""

    def __init__(self, limit: float) -> None:
        self.limit = limit

    def __call__(self, retry_state: tenacity.RetryCallState) -> bool:
        wait = retry_after(_exception(retry_state))
        return wait is not None and wait > self.limit


class StreamInterrupted(CharterError):
    """A stream ended before ``message_stop`` with content that cannot be used as it is.

    Never leaves the adapter: retried, then turned into ``LLMError("llm_unavailable")``.
    """


class AnthropicLLM:
    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        client: anthropic.Anthropic | None = None,
        policy: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = client or anthropic.Anthropic(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0
        )
        self.policy = policy or RetryPolicy(max_retries=max_retries)
        self.timeout = timeout
        self._sleep = sleep

    def complete(self, request: LLMRequest) -> LLMResponse:
        """One call with its retries, under one span with the GenAI conventions (``tracing.llm_span``)."""
        with tracing.llm_span(request) as span:
            response = self._complete(request)
            tracing.record_llm_response(span, response)
            return response

    def _complete(self, request: LLMRequest) -> LLMResponse:
        t0 = time.perf_counter()
        tally = _Tally()
        left = remaining()
        if left is not None and left <= 0:
            raise LLMError("api_timeout", "turn budget spent before the call")
        limit = self.policy.max_elapsed if left is None else min(self.policy.max_elapsed, left)
        end = time.monotonic() + limit
        try:
            for attempt in self._retrying(request, limit):
                with attempt:
                    tally.attempts += 1
                    response = self._once(request, tally, end)
        except Exception as exc:
            error = to_llm_error(exc)
            if error is None:
                raise
            raise error from exc
        return response.model_copy(
            update={
                "attempts": tally.attempts,
                "interruptions": tally.interruptions,
                "duration_ms": (time.perf_counter() - t0) * 1000,
                "usage": _plus(response.usage, tally.spent),
            }
        )

    # -- the policy ---------------------------------------------------------------------
    def _retrying(self, request: LLMRequest, limit: float) -> tenacity.Retrying:
        policy = self.policy

        def wait(state: tenacity.RetryCallState) -> float:
            asked = retry_after(_exception(state))
            return asked if asked is not None else policy.backoff(state.attempt_number)

        def before_sleep(state: tenacity.RetryCallState) -> None:
            exc = _exception(state)
            log_event(
                "llm_retry",
                layer="llm",
                severity="WARNING",
                call_type=request.call_type,
                model=request.model,
                attempt=state.attempt_number,
                reason=describe(exc),
                wait_seconds=round(state.upcoming_sleep, 3),
            )

        return tenacity.Retrying(
            stop=tenacity.stop_any(
                tenacity.stop_after_attempt(policy.max_retries + 1),
                tenacity.stop_after_delay(limit),
                tenacity.stop_before_delay(limit),  # no backoff that would end past the limit
                _RetryAfterTooLong(policy.max_retry_after),
            ),
            wait=wait,
            retry=tenacity.retry_if_exception(is_retryable),
            sleep=self._sleep,
            before_sleep=before_sleep,
            reraise=True,
        )

    # -- one attempt --------------------------------------------------------------------
    def _once(self, request: LLMRequest, tally: _Tally, end: float) -> LLMResponse:
        left = end - time.monotonic()
        if left <= 0:
            raise LLMError("api_timeout", "turn budget spent between attempts")
        kwargs = {**_kwargs(request), "timeout": min(self.timeout, left)}
        if not request.stream:
            return _response(self.client.messages.create(**kwargs))
        with self.client.messages.stream(**kwargs) as stream:
            seen = _Seen()
            try:
                for event in stream:
                    seen.add(event)
            except (httpx2.TransportError, anthropic.APIConnectionError, ValueError) as exc:
                return self._interrupted(stream, seen, tally, exc)
            if not seen.stopped:
                return self._interrupted(stream, seen, tally, None)
            return _response(stream.get_final_message())

    def _interrupted(self, stream: Any, seen: _Seen, tally: _Tally, cause: Exception | None) -> LLMResponse:
        tally.interruptions += 1
        snapshot = stream.current_message_snapshot if seen.started else None
        partial = _response(snapshot) if snapshot is not None else None
        log_event(
            "llm_stream_interrupted",
            layer="llm",
            severity="WARNING",
            blocks=seen.started_blocks,
            closed=len(seen.closed),
            cause=describe(cause) if cause else "no message_stop",
        )
        if partial is not None and seen.salvageable(partial):
            texts = [b for i, b in enumerate(partial.content) if i in seen.closed]  # the cut block is dropped
            return partial.model_copy(update={"content": texts, "stop_reason": None, "salvaged": True})
        if partial is not None:
            tally.spent = _plus(tally.spent, partial.usage)
        raise StreamInterrupted(describe(cause) if cause else "stream ended before message_stop") from cause


class _Tally:
    def __init__(self) -> None:
        self.attempts = 0
        self.interruptions = 0
        self.spent = LLMUsage()  # tokens of interrupted attempts that were not used


class _Seen:
    """Which stream events arrived: enough to judge a cut stream (seed 000 §6.7.6 Q1-Q3)."""

    def __init__(self) -> None:
        self.started = False
        self.stopped = False
        self.started_blocks = 0
        self.closed: set[int] = set()

    def add(self, event: Any) -> None:
        kind = getattr(event, "type", "")
        if kind == "message_start":
            self.started = True
        elif kind == "content_block_start":
            self.started_blocks += 1
        elif kind == "content_block_stop":
            self.closed.add(int(event.index))
        elif kind == "message_stop":
            self.stopped = True

    def salvageable(self, partial: LLMResponse) -> bool:
        """No tool call was started, and at least one text block arrived complete."""
        if any(b.get("type") != "text" for b in partial.content):
            return False
        return any(
            str(partial.content[i].get("text", "")).strip() for i in self.closed if i < len(partial.content)
        )


def _kwargs(req: LLMRequest) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"model": req.model, "max_tokens": req.max_tokens, "messages": req.messages}
    if req.system:
        kwargs["system"] = req.system
    if req.tools:
        kwargs["tools"] = req.tools
    if req.tool_choice:
        kwargs["tool_choice"] = req.tool_choice
    if req.temperature is not None:
        kwargs["temperature"] = req.temperature
    return kwargs


def _response(message: Any) -> LLMResponse:
    usage = message.usage
    return LLMResponse(
        content=[block.model_dump(mode="json", exclude_none=True) for block in message.content],
        stop_reason=message.stop_reason,
        model=message.model,
        usage=LLMUsage(
            input_tokens=usage.input_tokens or 0,
            output_tokens=usage.output_tokens or 0,
            cache_creation_input_tokens=usage.cache_creation_input_tokens or 0,
            cache_read_input_tokens=usage.cache_read_input_tokens or 0,
        ),
    )


def _plus(a: LLMUsage, b: LLMUsage) -> LLMUsage:
    return LLMUsage(**{k: getattr(a, k) + getattr(b, k) for k in LLMUsage.model_fields})


def _exception(state: tenacity.RetryCallState) -> BaseException | None:
    return state.outcome.exception() if state.outcome is not None else None


def _stream_error_type(exc: anthropic.APIStatusError) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error") if isinstance(body.get("error"), dict) else {}
    return str(error.get("type", "")) if isinstance(error, dict) else ""


def is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, anthropic.APIStatusError):
        if exc.status_code < 400:  # an SSE ``error`` event inside a 200 stream
            return _stream_error_type(exc) in RETRYABLE_STREAM_ERRORS
        return exc.status_code in RETRYABLE_STATUS or exc.status_code >= 500
    return isinstance(exc, anthropic.APIConnectionError | httpx2.TransportError | StreamInterrupted)


def retry_after(exc: BaseException | None) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms`` or ``retry-after``), if any."""
    if not isinstance(exc, anthropic.APIStatusError):
        return None
    headers = exc.response.headers
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            value = float(headers.get(name, "")) * scale
        except ValueError:
            continue
        if value >= 0:
            return value
    return None


def describe(exc: BaseException | None) -> str:
    """A short, content-free description (never a response body: it may echo the prompt)."""
    if isinstance(exc, anthropic.APIStatusError):
        return f"{type(exc).__name__} status={exc.status_code} {_stream_error_type(exc)}".strip()
    return type(exc).__name__ if exc is not None else "none"


def to_llm_error(exc: BaseException) -> LLMError | None:
    """The catalogue error for a failure the policy gave up on; ``None`` for a bug (re-raise)."""
    if isinstance(exc, anthropic.APIStatusError) and (
        exc.status_code == 429 or _stream_error_type(exc) == "rate_limit_error"
    ):
        return LLMError("rate_limit", describe(exc), retry_after=retry_after(exc))
    if isinstance(exc, anthropic.APITimeoutError | httpx2.TimeoutException):
        return LLMError("api_timeout", describe(exc))
    if isinstance(exc, anthropic.APIError | httpx2.TransportError | StreamInterrupted):
        return LLMError("llm_unavailable", describe(exc))
    return None
