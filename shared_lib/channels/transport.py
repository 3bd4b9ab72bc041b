"""The request/retry machinery the reply clients share (``ReplyClient``).

Every request is a POST of ready-made bytes. ``ReplyClient.post`` retries it with
tenacity (``max_attempts``, default 3) when the failure is retryable:

* 429 and 5xx — after ``Retry-After`` when the answer has one (a wait longer than
  ``max_retry_after`` gives up at once: a reply that late is worse than an error),
  else exponential backoff with "equal jitter";
* connection errors, where nothing was sent;
* read timeouts and dropped connections only for requests the provider deduplicates
  (``idempotent=True``), since the first request may have been delivered;
* whatever a provider ``check`` marks retryable (Slack's ``{"ok": false, "error": "ratelimited"}``).

Errors::

    SendFailure   one request failed for good (code, status); clients turn it into
                  ``SendResult(ok=False, error=code)`` — nothing is raised to the caller

The sleep and the clock are injectable, so tests never wait.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from email.utils import parsedate_to_datetime
from types import MappingProxyType
from typing import Any

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from shared_lib.channels.secrets import ChannelSecrets
from shared_lib.errors import CharterError
from shared_lib.ids import utc_now
from shared_lib.ports import SendResult

DEFAULT_TEXT_LIMITS: Mapping[str, int] = MappingProxyType(
    {"chatwork": 4000, "line": 5000, "slack": 3000, "http": 8000}
)


@dataclass(frozen=True)
class ClientSettings:
    """Timeouts, retry policy and text limits shared by the reply clients."""

    connect_timeout: float = 3.0
    read_timeout: float = 10.0
    max_attempts: int = 3
    backoff_initial: float = 0.5
    backoff_max: float = 8.0
    max_retry_after: float = 30.0
    text_limits: Mapping[str, int] = field(default_factory=lambda: DEFAULT_TEXT_LIMITS)
    line_messages_per_call: int = 5

    def timeout(self) -> httpx.Timeout:
        return httpx.Timeout(self.read_timeout, connect=self.connect_timeout)


class SendFailure(CharterError):
    """One failed request; ``retryable`` decides whether tenacity tries again."""

    def __init__(
        self,
        code: str,
        status: int | None = None,
        *,
        retryable: bool = False,
        retry_after: float | None = None,
        detail: str = "",
    ) -> None:
        super().__init__(code)
        self.code, self.status, self.retryable = code, status, retryable
        self.retry_after, self.detail = retry_after, detail


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.replace(".", "", 1).isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, (when - (now or utc_now())).total_seconds()) if when.tzinfo else None


def response_json(response: httpx.Response) -> dict[str, Any]:
    """The JSON object of a response, or ``{}`` when it has none."""
    try:
        data = response.json()
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


class ReplyClient:
    """Base of the reply clients: owns the HTTP client, settings, retry policy and sleep."""

    name: str = ""

    def __init__(
        self,
        secrets: ChannelSecrets,
        *,
        client: httpx.Client | None = None,
        settings: ClientSettings | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self._secrets = secrets
        self._settings = settings or ClientSettings()
        self._client = client or httpx.Client(timeout=self._settings.timeout())
        self._owns_client = client is None
        self._sleep = sleep
        self._clock = clock

    @property
    def limit(self) -> int:
        return self._settings.text_limits[self.name]

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    def _wait(self, state: RetryCallState) -> float:
        failure = state.outcome.exception() if state.outcome else None
        if isinstance(failure, SendFailure) and failure.retry_after is not None:
            return failure.retry_after
        ceiling = min(
            self._settings.backoff_max, self._settings.backoff_initial * 2 ** (state.attempt_number - 1)
        )
        return float(ceiling / 2 + random.uniform(0, ceiling / 2))  # "equal jitter" backoff

    def post(
        self,
        url: str,
        content: bytes,
        headers: dict[str, str],
        *,
        idempotent: bool = False,
        accept: frozenset[int] = frozenset(),
        check: Callable[[httpx.Response], None] | None = None,
        extensions: dict[str, Any] | None = None,
    ) -> httpx.Response:
        """POST with the retry policy; raises ``SendFailure`` when it gives up. ``extensions``
        go to httpx (``sni_hostname``: TLS to a pinned address still verifies the name)."""
        retrying = Retrying(
            stop=stop_after_attempt(self._settings.max_attempts),
            wait=self._wait,
            retry=retry_if_exception(lambda e: isinstance(e, SendFailure) and e.retryable),
            sleep=self._sleep,
            reraise=True,
        )
        return retrying(self._attempt, url, content, headers, idempotent, accept, check, extensions or {})

    def _attempt(
        self,
        url: str,
        content: bytes,
        headers: dict[str, str],
        idempotent: bool,
        accept: frozenset[int],
        check: Callable[[httpx.Response], None] | None,
        extensions: dict[str, Any],
    ) -> httpx.Response:
        try:
            response = self._client.post(
                url, content=content, headers=headers, timeout=self._settings.timeout(), extensions=extensions
            )
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            raise SendFailure("connection_error", retryable=True) from exc  # nothing was sent
        except httpx.TransportError as exc:
            raise SendFailure("transport_error", retryable=idempotent, detail=type(exc).__name__) from exc
        status = response.status_code
        if status in accept:
            return response
        if status == 429 or status >= 500:
            wait = parse_retry_after(response.headers.get("retry-after"), self._clock())
            code = "rate_limited" if status == 429 else "server_error"
            too_long = wait is not None and wait > self._settings.max_retry_after
            raise SendFailure(code, status, retryable=not too_long, retry_after=wait)
        if status >= 400:
            raise SendFailure(f"http_{status}", status, detail=response.text[:500])
        if check is not None:
            check(response)
        return response

    def _failed(self, failure: SendFailure, delivered: int) -> SendResult:
        return SendResult(ok=False, status=failure.status, error=failure.code, parts=delivered)

    def _not_ready(self, code: str) -> SendResult:
        return SendResult(ok=False, error=code, parts=0)
