"""An OpenAI-compatible server (vLLM, Ollama, LM Studio) as an ``LLMPeer``: the ``openai`` SDK's
chat completions at a ``base_url``, mapped to the product's Anthropic-shaped contract
(``openai_wire``: the proposal stays a ``submit_proposal`` ``tool_use`` block).

Keyword-only arguments:

* the client: ``base_url`` (e.g. ``http://127.0.0.1:11434/v1``), ``api_key`` (``"local"``
  when the server needs none), ``timeout`` (seconds per attempt), or a ready ``client``;
  ``max_retries`` or a whole ``policy``; ``sleep`` (tests record the waits);
* the peer: ``local`` (required: whether the server runs on the company's own machines; it
  is never assumed), ``name`` (``"openai_compatible"``), ``max_context_tokens`` (32 768),
  ``supports_parallel`` (``True``), ``models`` (the product's model name → the name this
  server serves, e.g. ``claude-sonnet-4-6`` → ``qwen2.5:32b``; a name not in the map passes
  through), ``stream_usage`` (send ``stream_options.include_usage``; off for a server that
  rejects it);
* the probe: ``health_model`` (the product's name, mapped too) and ``health_timeout`` (5 s).

**Retries** are the one policy of every peer (``llm_retry``): 408/409/429/5xx, timeouts,
connection errors and cut streams, ``retry-after`` honoured, the turn's budget respected.
When it gives up: ``openai.RateLimitError`` (429) → ``LLMError("rate_limit")``, timeouts →
``api_timeout``, anything else → ``llm_unavailable``.

**Streaming**: with ``LLMRequest.stream`` the answer is read as SSE chunks. A stream that ends
before a ``finish_reason`` is retried, never salvaged: chat completion chunks have no block
boundaries, so no text is known to be complete before the end (unlike the Anthropic stream).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

import httpx2
import openai

from shared_lib.adapters import openai_wire
from shared_lib.adapters.llm_retry import (
    RETRYABLE_STATUS,
    RetryPolicy,
    StreamInterrupted,
    Tally,
    header_retry_after,
    seconds_left,
)
from shared_lib.adapters.peer_base import PeerAdapter
from shared_lib.errors import LLMError
from shared_lib.observability.logs import log_event
from shared_lib.ports import LLMRequest, LLMResponse, PeerKind

__all__ = ["FAILURES", "OpenAICompatibleLLM"]


class OpenAICompatibleLLM(PeerAdapter):
    kind: PeerKind = "openai_compatible"
    provider = "openai"  # the span's gen_ai.provider.name (the wire's, whoever serves it)

    def __init__(
        self,
        *,
        local: bool,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        client: openai.OpenAI | None = None,
        policy: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        name: str = "openai_compatible",
        max_context_tokens: int = 32_768,
        supports_parallel: bool = True,
        models: Mapping[str, str] | None = None,
        stream_usage: bool = True,
        health_model: str = "claude-haiku-4-5",
        health_timeout: float = 5.0,
    ) -> None:
        self.client = client or openai.OpenAI(
            base_url=base_url, api_key=api_key or "local", max_retries=0, timeout=timeout
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
        self.stream_usage = stream_usage

    def _ping(self, model: str) -> object:
        client = self.client.with_options(max_retries=0, timeout=self.health_timeout)
        return client.chat.completions.create(
            model=model, max_tokens=1, messages=[{"role": "user", "content": "ping"}]
        )

    def _once(self, request: LLMRequest, tally: Tally, end: float) -> LLMResponse:
        kwargs = openai_wire.chat_kwargs(request, stream_usage=self.stream_usage)
        kwargs["timeout"] = min(self.timeout, seconds_left(end))
        if not request.stream:
            completion = self.client.chat.completions.create(**kwargs)
            return openai_wire.completion_response(completion.model_dump(mode="json"))
        reader = openai_wire.ChunkReader()
        cause: Exception | None = None
        kwargs.pop("stream")  # passed as a literal: the SDK's overload then types the stream
        with self.client.chat.completions.create(**kwargs, stream=True) as stream:
            try:
                for chunk in stream:
                    reader.add(chunk.model_dump(mode="json"))
            except (httpx2.TransportError, openai.APIConnectionError, ValueError) as exc:
                cause = exc
        if cause is None and reader.finished:
            return reader.response()
        tally.interruptions += 1
        reason = describe(cause) if cause else "no finish_reason"
        log_event("llm_stream_interrupted", layer="llm", severity="WARNING", cause=reason, peer=self.name)
        raise StreamInterrupted(reason) from cause


def is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in RETRYABLE_STATUS or exc.status_code >= 500
    # an ``error`` event inside a 200 stream is an ``APIError`` without a status: retried
    return isinstance(exc, openai.APIError | httpx2.TransportError | StreamInterrupted)


def retry_after(exc: BaseException | None) -> float | None:
    return header_retry_after(exc.response.headers) if isinstance(exc, openai.APIStatusError) else None


def describe(exc: BaseException | None) -> str:
    """A short, content-free description (never a response body: it may echo the prompt)."""
    if isinstance(exc, openai.APIStatusError):
        return f"{type(exc).__name__} status={exc.status_code}"
    return type(exc).__name__ if exc is not None else "none"


def to_llm_error(exc: BaseException) -> LLMError | None:
    if isinstance(exc, openai.RateLimitError) or (
        isinstance(exc, openai.APIStatusError) and exc.status_code == 429
    ):
        return LLMError("rate_limit", describe(exc), retry_after=retry_after(exc))
    if isinstance(exc, openai.APITimeoutError | httpx2.TimeoutException):
        return LLMError("api_timeout", describe(exc))
    if isinstance(exc, openai.APIError | httpx2.TransportError | StreamInterrupted):
        return LLMError("llm_unavailable", describe(exc))
    return None


class _OpenAIFailures:
    """The openai SDK's errors for the one retry policy (``llm_retry.Failures``)."""

    is_retryable = staticmethod(is_retryable)
    retry_after = staticmethod(retry_after)
    describe = staticmethod(describe)
    to_llm_error = staticmethod(to_llm_error)


FAILURES = _OpenAIFailures()
