"""A small client for ChatWork's task REST API (v2), with timeouts and retries.

| call | request |
|---|---|
| list   | ``GET {base}/rooms/{room_id}/tasks`` (``account_id``, ``status``); 204 means none |
| create | ``POST {base}/rooms/{room_id}/tasks`` form ``body``, ``to_ids``, ``limit`` (unix), ``limit_type`` |
| done   | ``PUT {base}/rooms/{room_id}/tasks/{task_id}/status`` form ``body=done`` |

Every call sends ``X-ChatWorkToken``. 429 and 5xx answers and transport errors are
retried (tenacity, exponential backoff with jitter, ``x-ratelimit-reset`` or
``Retry-After`` honoured up to ``max_wait``); ``sleep`` is injectable so tests never
wait. A POST is not idempotent: after an *ambiguous* failure (5xx, read timeout) the
caller's ``recheck`` looks for the task before the POST is tried again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_random_exponential

from shared_lib.tools.task_backend import TaskBackendError

T = TypeVar("T")
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


class ChatWorkAPIError(TaskBackendError):
    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        ambiguous: bool = False,
    ) -> None:
        super().__init__(message, status=status)
        self.retry_after = retry_after
        self.ambiguous = ambiguous  # the request may have taken effect

    @property
    def retryable(self) -> bool:
        return self.status is None or self.status in RETRY_STATUSES


def _retry_after(resp: httpx.Response, now: float) -> float | None:
    if value := resp.headers.get("retry-after"):
        try:
            return max(float(value), 0.0)
        except ValueError:
            return None
    if value := resp.headers.get("x-ratelimit-reset"):
        try:
            return max(float(value) - now, 0.0)
        except ValueError:
            return None
    return None


class ChatWorkClient:
    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 10.0,
        max_attempts: int = 4,
        max_wait: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        transport: httpx.BaseTransport | None = None,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._http = httpx.Client(
            base_url=base_url.rstrip("/") + "/",
            transport=transport,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)),
            headers={"X-ChatWorkToken": token, "Accept": "application/json"},
        )
        self._max_attempts = max_attempts
        self._max_wait = max_wait
        self._sleep = sleep
        self._wall_clock = wall_clock
        self._backoff = wait_random_exponential(multiplier=0.5, max=8)

    def close(self) -> None:
        self._http.close()

    # -- the three calls -----------------------------------------------------------------
    def list_tasks(
        self, room_id: str, *, account_id: str | None = None, status: str | None = None
    ) -> list[dict[str, Any]]:
        params = {k: v for k, v in (("account_id", account_id), ("status", status)) if v}
        data = self._call("GET", f"rooms/{room_id}/tasks", params=params)
        return list(data) if isinstance(data, list) else []

    def create_task(
        self,
        room_id: str,
        *,
        body: str,
        to_ids: list[str],
        limit: int | None = None,
        limit_type: str = "none",
        recheck: Callable[[], list[str] | None] | None = None,
    ) -> list[str]:
        form = {"body": body, "to_ids": ",".join(to_ids), "limit_type": limit_type}
        if limit is not None:
            form["limit"] = str(limit)
        data = self._call("POST", f"rooms/{room_id}/tasks", data=form, recheck=recheck)
        if isinstance(data, list):  # a recheck found the task an earlier attempt created
            return [str(x) for x in data]
        ids = data.get("task_ids") if isinstance(data, dict) else None
        if not ids:
            raise ChatWorkAPIError("create answered without task_ids")
        return [str(x) for x in ids]

    def complete_task(self, room_id: str, task_id: str) -> None:
        self._call("PUT", f"rooms/{room_id}/tasks/{task_id}/status", data={"body": "done"})

    # -- transport and retries -----------------------------------------------------------
    def _call(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        data: dict[str, str] | None = None,
        recheck: Callable[[], Any] | None = None,
    ) -> Any:
        last: dict[str, ChatWorkAPIError | None] = {"error": None}
        retrying = Retrying(
            stop=stop_after_attempt(self._max_attempts),
            wait=self._wait,
            sleep=self._sleep,
            retry=retry_if_exception(lambda e: isinstance(e, ChatWorkAPIError) and e.retryable),
            reraise=True,
        )
        for attempt in retrying:
            with attempt:
                previous = last["error"]
                if recheck is not None and previous is not None and previous.ambiguous:
                    found = recheck()
                    if found:
                        return found
                try:
                    return self._send(method, path, params, data)
                except ChatWorkAPIError as exc:
                    last["error"] = exc
                    raise
        raise ChatWorkAPIError("retries exhausted")  # unreachable: reraise=True

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, ChatWorkAPIError) and exc.retry_after is not None:
            return min(exc.retry_after, self._max_wait)
        return float(self._backoff(state))

    def _send(
        self, method: str, path: str, params: dict[str, str] | None, data: dict[str, str] | None
    ) -> Any:
        try:
            resp = self._http.request(method, path, params=params, data=data)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:  # never reached ChatWork
            raise ChatWorkAPIError(f"{method} {path}: {type(exc).__name__}") from exc
        except httpx.TransportError as exc:  # may have reached ChatWork
            raise ChatWorkAPIError(f"{method} {path}: {type(exc).__name__}", ambiguous=True) from exc
        if resp.status_code == 204:
            return None
        if resp.status_code >= 400:
            raise ChatWorkAPIError(
                f"{method} {path}: HTTP {resp.status_code} {resp.text[:200]}",
                status=resp.status_code,
                retry_after=_retry_after(resp, self._wall_clock()),
                ambiguous=resp.status_code >= 500,
            )
        try:
            return resp.json()
        except ValueError as exc:
            raise ChatWorkAPIError(f"{method} {path}: answer is not JSON", status=resp.status_code) from exc
