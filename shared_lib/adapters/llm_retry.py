"""The one retry policy of every LLM peer adapter (seed 000 §6.7), whatever its SDK.

An adapter gives :func:`call_with_retries` one attempt (a function of the attempt's deadline)
and its SDK's :class:`Failures` (which errors are retried, the ``retry-after`` the server asked
for, a content-free description, the catalogue ``LLMError`` when the policy gives up). This
module owns the rest: attempts, backoff with jitter, ``retry-after`` honoured exactly unless it
asks for longer than ``max_retry_after`` (then it gives up at once), the turn's budget
(``callctx.remaining``: a call with its retries never runs past ``min(max_elapsed, what is left
of the turn)``; each attempt is told its deadline), the ``llm_retry`` log line, and the
answer's ``attempts`` / ``interruptions`` / ``duration_ms`` / usage of discarded attempts.

:func:`probe` is the peers' health check around one cheap call: no retries, never raises.

>>> policy = RetryPolicy(max_retries=2, initial_delay=1.0, max_delay=4.0)
>>> 0.5 <= policy.backoff(1) <= 1.0 and 1.0 <= policy.backoff(2) <= 2.0
True
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Protocol

import tenacity
from pydantic import BaseModel, ConfigDict, Field
from tenacity.stop import stop_base

from shared_lib.errors import CharterError, LLMError
from shared_lib.observability.logs import log_event
from shared_lib.ports import LLMRequest, LLMResponse, LLMUsage, PeerHealth
from shared_lib.settings import Settings
from shared_lib.turn.callctx import remaining

RETRYABLE_STATUS = frozenset({408, 409, 429})  # and every 5xx (529 included)


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


class StreamInterrupted(CharterError):
    """An answer that cannot be used as it is: a stream ended before its end, or a tool call
    whose arguments are not a JSON object.

    Never leaves the adapter: retried, then turned into ``LLMError("llm_unavailable")``.
    """


class Failures(Protocol):
    """What one SDK's errors mean to the policy (an adapter's module implements it)."""

    def is_retryable(self, exc: BaseException) -> bool: ...

    def retry_after(self, exc: BaseException | None) -> float | None: ...

    def describe(self, exc: BaseException | None) -> str: ...

    def to_llm_error(self, exc: BaseException) -> LLMError | None:
        """The catalogue error for a failure the policy gave up on; ``None`` for a bug (re-raise)."""
        ...


class Tally:
    """What the attempts of one call add up to."""

    def __init__(self) -> None:
        self.attempts = 0
        self.interruptions = 0
        self.spent = LLMUsage()  # tokens of interrupted attempts that were not used


Attempt = Callable[[Tally, float], LLMResponse]  # (tally, monotonic deadline) -> answer


def header_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds a response asks us to wait (``retry-after-ms`` or ``retry-after``), if any."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            value = float(headers.get(name, "")) * scale
        except ValueError:
            continue
        if value >= 0:
            return value
    return None


def seconds_left(end: float) -> float:
    """What is left before ``end`` (monotonic); ``api_timeout`` when nothing is."""
    left = end - time.monotonic()
    if left <= 0:
        raise LLMError("api_timeout", "turn budget spent between attempts")
    return left


def plus(a: LLMUsage, b: LLMUsage) -> LLMUsage:
    return LLMUsage(**{k: getattr(a, k) + getattr(b, k) for k in LLMUsage.model_fields})


def call_with_retries(
    request: LLMRequest,
    attempt: Attempt,
    *,
    policy: RetryPolicy,
    failures: Failures,
    sleep: Callable[[float], None],
) -> LLMResponse:
    """Run ``attempt`` under the policy and the turn's budget; ``LLMError`` when it gives up."""
    t0 = time.perf_counter()
    tally = Tally()
    left = remaining()
    if left is not None and left <= 0:
        raise LLMError("api_timeout", "turn budget spent before the call")
    limit = policy.max_elapsed if left is None else min(policy.max_elapsed, left)
    end = time.monotonic() + limit
    try:
        for state in _retrying(request, limit, policy, failures, sleep):
            with state:
                tally.attempts += 1
                response = attempt(tally, end)
    except Exception as exc:
        error = failures.to_llm_error(exc)
        if error is None:
            raise
        raise error from exc
    return response.model_copy(
        update={
            "attempts": tally.attempts,
            "interruptions": tally.interruptions,
            "duration_ms": (time.perf_counter() - t0) * 1000,
            "usage": plus(response.usage, tally.spent),
        }
    )


class Describes(Protocol):
    """What a probe needs of a peer's failures: their content-free description."""

    def describe(self, exc: BaseException | None) -> str: ...


def probe(call: Callable[[], object], failures: Describes) -> PeerHealth:
    """One health probe: ``call`` once; healthy when it returns. Never raises."""
    checked_at = datetime.now(UTC)
    t0 = time.perf_counter()
    try:
        call()
    except Exception as exc:  # any failure is an unhealthy peer, never the caller's problem
        reason = failures.describe(exc)
        healthy = False
    else:
        reason, healthy = "", True
    latency = round((time.perf_counter() - t0) * 1000, 3)
    return PeerHealth(healthy=healthy, checked_at=checked_at, latency_ms=latency, reason=reason)


class _RetryAfterTooLong(stop_base):
    """Stop at once when the server asks for a longer wait than we may spend."""

    def __init__(self, limit: float, failures: Failures) -> None:
        self.limit = limit
        self.failures = failures

    def __call__(self, retry_state: tenacity.RetryCallState) -> bool:
        wait = self.failures.retry_after(_exception(retry_state))
        return wait is not None and wait > self.limit


def _retrying(
    request: LLMRequest,
    limit: float,
    policy: RetryPolicy,
    failures: Failures,
    sleep: Callable[[float], None],
) -> tenacity.Retrying:
    def wait(state: tenacity.RetryCallState) -> float:
        asked = failures.retry_after(_exception(state))
        return asked if asked is not None else policy.backoff(state.attempt_number)

    def before_sleep(state: tenacity.RetryCallState) -> None:
        log_event(
            "llm_retry",
            layer="llm",
            severity="WARNING",
            call_type=request.call_type,
            model=request.model,
            attempt=state.attempt_number,
            reason=failures.describe(_exception(state)),
            wait_seconds=round(state.upcoming_sleep, 3),
        )

    return tenacity.Retrying(
        stop=tenacity.stop_any(
            tenacity.stop_after_attempt(policy.max_retries + 1),
            tenacity.stop_after_delay(limit),
            tenacity.stop_before_delay(limit),  # no backoff that would end past the limit
            _RetryAfterTooLong(policy.max_retry_after, failures),
        ),
        wait=wait,
        retry=tenacity.retry_if_exception(failures.is_retryable),
        sleep=sleep,
        before_sleep=before_sleep,
        reraise=True,
    )


def _exception(state: tenacity.RetryCallState) -> BaseException | None:
    return state.outcome.exception() if state.outcome is not None else None
