"""Anthropic ``LLMPeer`` adapter: the real ``anthropic`` SDK (``base_url`` configurable, so the
same client talks to Claude, a gateway, or the local fake server; ``vertex_llm`` passes the
SDK's Vertex client in). ``health()`` is one minimal messages call, never raising.

**One retry policy** (seed 000 §6.7, ``llm_retry``, shared with the other peers): the SDK's
own retries are switched off (``max_retries=0``) and the adapter retries with ``tenacity``, because a stream that is
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

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

import anthropic
import httpx2

from shared_lib.adapters.llm_retry import (
    RETRYABLE_STATUS,
    RetryPolicy,
    StreamInterrupted,
    Tally,
    header_retry_after,
    plus,
    seconds_left,
)
from shared_lib.adapters.peer_base import PeerAdapter
from shared_lib.errors import LLMError
from shared_lib.observability.logs import log_event
from shared_lib.ports import LLMRequest, LLMResponse, LLMUsage, PeerKind

__all__ = ["FAILURES", "AnthropicLLM", "RetryPolicy", "StreamInterrupted"]

RETRYABLE_STREAM_ERRORS = frozenset({"overloaded_error", "api_error", "rate_limit_error", "timeout_error"})


class AnthropicLLM(PeerAdapter):
    """The Anthropic API as an ``LLMPeer`` (``shared_lib.ports``). Keyword-only arguments:

    * the client: ``api_key``, ``base_url``, ``timeout`` (seconds per attempt), or a ready
      ``client`` (the Vertex peer passes ``anthropic.AnthropicVertex``); ``max_retries`` or a
      whole ``policy``; ``sleep`` (tests record the waits instead of sleeping);
    * the peer: ``name`` (``"anthropic"``), ``local`` (``False``), ``max_context_tokens``
      (200 000), ``supports_parallel`` (``True``), ``models`` (the product's model name → the
      name this peer serves; a name not in the map passes through);
    * the probe: ``health_model`` (the product's name, mapped too) and ``health_timeout`` (5 s).
    """

    kind: PeerKind = "anthropic"
    provider = "anthropic"  # the span's gen_ai.provider.name

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        client: anthropic.Anthropic | anthropic.AnthropicVertex | None = None,
        policy: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        name: str = "anthropic",
        local: bool = False,
        max_context_tokens: int = 200_000,
        supports_parallel: bool = True,
        models: Mapping[str, str] | None = None,
        health_model: str = "claude-haiku-4-5",
        health_timeout: float = 5.0,
    ) -> None:
        self.client = client or anthropic.Anthropic(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0
        )
        self._peer(
            failures=FAILURES,
            policy=policy,
            max_retries=max_retries,
            timeout=timeout,
            sleep=sleep,
            name=name,
            local=local,
            max_context_tokens=max_context_tokens,
            supports_parallel=supports_parallel,
            models=models,
            health_model=health_model,
            health_timeout=health_timeout,
        )

    def _ping(self, model: str) -> object:
        client = self.client.with_options(max_retries=0, timeout=self.health_timeout)
        return client.messages.create(
            model=model, max_tokens=1, messages=[{"role": "user", "content": "ping"}]
        )

    def _once(self, request: LLMRequest, tally: Tally, end: float) -> LLMResponse:
        kwargs = {**_kwargs(request), "timeout": min(self.timeout, seconds_left(end))}
        if not request.stream:
            return _response(self.client.messages.create(**kwargs))
        # the raw events, gathered here: the SDK's stream helper rebuilds its snapshot and parses the
        # tool input so far at every delta (20 CPU-ms a proposal against 10, measured on the fake API)
        with self.client.messages.create(stream=True, **kwargs) as events:
            seen = _Seen()
            try:
                for event in events:
                    seen.add(event)
            except (httpx2.TransportError, anthropic.APIConnectionError, ValueError) as exc:
                return self._interrupted(seen, tally, exc)
            if not seen.stopped:
                return self._interrupted(seen, tally, None)
            return seen.response()

    def _interrupted(self, seen: _Seen, tally: Tally, cause: Exception | None) -> LLMResponse:
        tally.interruptions += 1
        partial = seen.response() if seen.started else None
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
            tally.spent = plus(tally.spent, partial.usage)
        raise StreamInterrupted(describe(cause) if cause else "stream ended before message_stop") from cause


class _Seen:
    """The stream's events gathered into the message, and which arrived: enough to judge a cut
    stream (seed 000 §6.7.6 Q1-Q3). A block is its start's dump (``model_dump``, as a whole
    message's blocks are) with its deltas applied; a tool's input is parsed once, at its block's
    stop (a block cut before it keeps the input it started with)."""

    def __init__(self) -> None:
        self.started = False
        self.stopped = False
        self.started_blocks = 0
        self.closed: set[int] = set()
        self.model = ""
        self.stop_reason: str | None = None
        self.usage: dict[str, int] = {}
        self.blocks: dict[int, dict[str, Any]] = {}
        self.partial_json: dict[int, list[str]] = {}

    def add(self, event: Any) -> None:
        kind = getattr(event, "type", "")
        if kind == "message_start":
            self.started = True
            self.model = str(event.message.model)
            self._count(event.message.usage)
        elif kind == "content_block_start":
            self.started_blocks += 1
            self.blocks[int(event.index)] = event.content_block.model_dump(mode="json", exclude_none=True)
        elif kind == "content_block_delta":
            self._delta(int(event.index), event.delta)
        elif kind == "content_block_stop":
            index = int(event.index)
            self.closed.add(index)
            parts = self.partial_json.pop(index, None)
            if parts is not None and index in self.blocks:
                raw = "".join(parts)
                self.blocks[index]["input"] = json.loads(raw) if raw.strip() else {}
        elif kind == "message_delta":
            self.stop_reason = event.delta.stop_reason
            self._count(event.usage)
        elif kind == "message_stop":
            self.stopped = True

    def _delta(self, index: int, delta: Any) -> None:
        block = self.blocks.get(index)
        if block is None:
            return
        kind = getattr(delta, "type", "")
        if kind == "text_delta":
            block["text"] = block.get("text", "") + delta.text
        elif kind == "input_json_delta":
            self.partial_json.setdefault(index, []).append(delta.partial_json)
        elif kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta.thinking
        elif kind == "signature_delta":
            block["signature"] = delta.signature
        elif kind == "citations_delta":
            block.setdefault("citations", []).append(
                delta.citation.model_dump(mode="json", exclude_none=True)
            )

    def _count(self, usage: Any) -> None:
        for name in LLMUsage.model_fields:  # the SDK's usage names them the same
            value = getattr(usage, name, None)
            if value is not None:
                self.usage[name] = int(value)

    def response(self) -> LLMResponse:
        """The message gathered so far (the whole one after ``message_stop``)."""
        return LLMResponse(
            content=[self.blocks[i] for i in sorted(self.blocks)],
            stop_reason=self.stop_reason,
            model=self.model,
            usage=LLMUsage(**self.usage),
        )

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
    # No sampling parameters: API version 2026-10-21 (what the SDK 2.x sends) answers 400 to
    # temperature/top_p/top_k and the SDK's create() has no such argument (a TypeError). A
    # request's temperature is for peers that take it (OpenAI-compatible, openai_wire).
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
    return header_retry_after(exc.response.headers) if isinstance(exc, anthropic.APIStatusError) else None


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


class _AnthropicFailures:
    """The anthropic SDK's errors for the one retry policy (``llm_retry.Failures``)."""

    is_retryable = staticmethod(is_retryable)
    retry_after = staticmethod(retry_after)
    describe = staticmethod(describe)
    to_llm_error = staticmethod(to_llm_error)


FAILURES = _AnthropicFailures()
