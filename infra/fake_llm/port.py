"""The scripted model behind the product's ``LLM`` port, in process (no HTTP): what the fake
server answers, with the usage the fake server would report (its deterministic token estimate
and prompt cache), so a run's cost is the demo's cost.

>>> from shared_lib.ports import LLMRequest
>>> llm = InProcessScriptedLLM()
>>> reply = llm.complete(LLMRequest(model="m", messages=[{"role": "user", "content": "おはよう"}]))
>>> reply.stop_reason, reply.usage.input_tokens > 0
('end_turn', True)
"""

from __future__ import annotations

import time

from infra.fake_llm.scenario import MessagesRequest
from infra.fake_llm.scripted import answer
from infra.fake_llm.server import PromptCache, output_tokens
from shared_lib import tracing
from shared_lib.ports import LLMRequest, LLMResponse, LLMUsage

PROVIDER = "charter.scripted"  # the span's gen_ai.provider.name: not Anthropic's service


class InProcessScriptedLLM:
    """``complete`` answers as the fake server's scripted model does; ``calls`` counts them.

    Each call is a GenAI span, as the Anthropic adapter's are (``tracing.llm_span``)."""

    def __init__(self) -> None:
        self.cache = PromptCache()
        self.calls = 0

    def complete(self, request: LLMRequest) -> LLMResponse:
        with tracing.llm_span(request, provider=PROVIDER) as span:
            response = self._complete(request)
            tracing.record_llm_response(span, response)
            return response

    def _complete(self, request: LLMRequest) -> LLMResponse:
        start = time.perf_counter()
        self.calls += 1
        body = request.model_dump(exclude_none=True)
        reply = answer(MessagesRequest(body))
        used = self.cache.account(body)
        return LLMResponse(
            content=reply.content,
            stop_reason=reply.resolved_stop_reason(),
            model=request.model,
            usage=LLMUsage(
                input_tokens=used.input_tokens,
                output_tokens=output_tokens(reply.content),
                cache_creation_input_tokens=used.cache_creation_input_tokens,
                cache_read_input_tokens=used.cache_read_input_tokens,
            ),
            duration_ms=round((time.perf_counter() - start) * 1000, 3),
        )
