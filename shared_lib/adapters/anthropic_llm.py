"""Anthropic ``LLM`` adapter: the real ``anthropic`` SDK (``base_url`` configurable, so the
same client talks to Claude, a gateway, or the local fake server).

Retry policy lives in one place: the SDK's own retries (exponential backoff with jitter,
``retry-after`` honoured) for 408/409/429/5xx/529 and connection errors, bounded by
``max_retries``; this adapter adds none on top. When the SDK gives up, an ``LLMError``
with a catalogue code (``api_timeout``, ``rate_limit``, ``llm_unavailable``) is raised.
"""

from __future__ import annotations

import time
from typing import Any

import anthropic

from shared_lib.errors import LLMError
from shared_lib.ports import LLMRequest, LLMResponse, LLMUsage


class AnthropicLLM:
    def __init__(self, *, api_key: str | None = None, base_url: str | None = None, timeout: float = 30.0,
                 max_retries: int = 3, client: anthropic.Anthropic | None = None) -> None:
        self.client = client or anthropic.Anthropic(api_key=api_key, base_url=base_url, timeout=timeout,
                                                    max_retries=max_retries)

    def _kwargs(self, req: LLMRequest) -> dict[str, Any]:
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

    def complete(self, request: LLMRequest) -> LLMResponse:
        t0 = time.perf_counter()
        try:
            message = self.client.messages.create(**self._kwargs(request))
        except anthropic.APITimeoutError as exc:
            raise LLMError("api_timeout", str(exc)) from exc
        except anthropic.RateLimitError as exc:
            raise LLMError("rate_limit", str(exc), retry_after=_retry_after(exc)) from exc
        except anthropic.APIStatusError as exc:
            raise LLMError("llm_unavailable", f"status {exc.status_code}") from exc
        except anthropic.APIConnectionError as exc:
            raise LLMError("llm_unavailable", str(exc)) from exc
        usage = message.usage
        return LLMResponse(
            content=[block.model_dump(mode="json", exclude_none=True) for block in message.content],
            stop_reason=message.stop_reason,
            model=message.model,
            usage=LLMUsage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                           cache_creation_input_tokens=usage.cache_creation_input_tokens or 0,
                           cache_read_input_tokens=usage.cache_read_input_tokens or 0),
            duration_ms=(time.perf_counter() - t0) * 1000,
        )


def _retry_after(exc: anthropic.APIStatusError) -> float | None:
    value = exc.response.headers.get("retry-after") if exc.response is not None else None
    try:
        return float(value) if value else None
    except ValueError:
        return None
