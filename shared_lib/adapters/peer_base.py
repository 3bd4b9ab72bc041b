"""What every LLM peer adapter shares (``ports.LLMPeer``): its identity and limits, the model
map, ``complete`` under the one retry policy (``llm_retry``) inside one GenAI span, and
``health`` as one minimal call with no retries.

A subclass sets ``kind`` and ``provider`` (the span's ``gen_ai.provider.name``), calls
``_peer(…)`` from its constructor with its SDK's ``Failures``, and gives ``_once`` (one attempt
before the deadline ``end``) and ``_ping`` (the probe's one call on ``model``).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any

from shared_lib import tracing
from shared_lib.adapters.llm_retry import Failures, RetryPolicy, Tally, call_with_retries, probe
from shared_lib.ports import LLMRequest, LLMResponse, PeerHealth


class PeerAdapter(ABC):
    provider: str = ""

    def _peer(
        self,
        *,
        failures: Failures,
        policy: RetryPolicy | None,
        max_retries: int,
        timeout: float,
        sleep: Callable[[float], None] = time.sleep,
        name: str,
        local: bool,
        max_context_tokens: int,
        supports_parallel: bool,
        models: Mapping[str, str] | None,
        health_model: str,
        health_timeout: float,
    ) -> None:
        self.failures = failures
        self.policy = policy or RetryPolicy(max_retries=max_retries)
        self.timeout = timeout
        self._sleep = sleep
        self.name = name
        self.local = local
        self.max_context_tokens = max_context_tokens
        self.supports_parallel = supports_parallel
        self.models = dict(models or {})  # the product's model name → the name this peer serves
        self.health_model = health_model
        self.health_timeout = health_timeout

    def complete(self, request: LLMRequest) -> LLMResponse:
        """One call with its retries, under one span with the GenAI conventions (``tracing.llm_span``)."""
        served = request.model_copy(update={"model": self.models.get(request.model, request.model)})
        with tracing.llm_span(served, provider=self.provider) as span:
            response = call_with_retries(
                served,
                lambda tally, end: self._once(served, tally, end),
                policy=self.policy,
                failures=self.failures,
                sleep=self._sleep,
            )
            tracing.record_llm_response(span, response)
            return response

    def health(self) -> PeerHealth:
        """One minimal call (``max_tokens`` 1, no retries) on the mapped health model; never raises."""
        model = self.models.get(self.health_model, self.health_model)
        return probe(lambda: self._ping(model), self.failures)

    @abstractmethod
    def _once(self, request: LLMRequest, tally: Tally, end: float) -> LLMResponse:
        """One attempt of ``request`` with this peer's SDK, to finish before the deadline ``end``."""

    @abstractmethod
    def _ping(self, model: str) -> Any:
        """The health probe's one minimal call on ``model`` (its answer is not read)."""
