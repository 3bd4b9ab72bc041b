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
from shared_lib.ports import LLMRequest, LLMResponse, LLMUsage


class InProcessScriptedLLM:
    """``complete`` answers as the fake server's scripted model does; ``calls`` counts them."""

    def __init__(self) -> None:
        self.cache = PromptCache()
        self.calls = 0

    def complete(self, request: LLMRequest) -> LLMResponse:
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
