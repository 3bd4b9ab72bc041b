"""Token accounting per call and per turn (seed 000 §14): input, output, cache write,
cache read and cost from the configurable price table.

Each call adds to ``turn.usage`` (the per-turn total) and emits one ``llm_call`` event
(the per-call record the observer stores). Events carry numbers only, never text.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from shared_lib.envelope import Turn, Usage
from shared_lib.ports import LLMRequest, LLMResponse
from shared_lib.prices import PriceTable

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime

log = logging.getLogger(__name__)


def usage_of(request: LLMRequest, response: LLMResponse, prices: PriceTable) -> Usage:
    u = response.usage
    return Usage(
        input_tokens=u.input_tokens,
        output_tokens=u.output_tokens,
        cache_creation_input_tokens=u.cache_creation_input_tokens,
        cache_read_input_tokens=u.cache_read_input_tokens,
        llm_calls=1,
        llm_duration_ms=round(response.duration_ms, 3),
        cost_usd=prices.cost(request.model, u),
    )


def record_call(turn: Turn, rt: Runtime, request: LLMRequest, response: LLMResponse, *, layer: str) -> Usage:
    usage = usage_of(request, response, rt.prices)
    turn.usage.add(usage)
    payload = {
        "layer": layer,
        "step": turn.step,
        "shadow": turn.shadow,
        "call_type": request.call_type,
        "model": request.model,
        "stop_reason": response.stop_reason,
        "attempts": response.attempts,
        "interruptions": response.interruptions,
        "salvaged": response.salvaged,
        **usage.model_dump(),
    }
    try:
        rt.emit_event(turn, "llm_call", request.call_type, payload)
    except Exception as exc:  # the per-call record is observability; the turn's total is already kept
        log.warning("llm_call event not published: %s", type(exc).__name__)
    return usage
