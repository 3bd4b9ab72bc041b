"""Token accounting per turn (seed 000 §14): input, output, cache write, cache read and
cost from the configurable price table, added up on ``turn.usage``.

The per-call record is not kept here: the LLM port's decorator writes it
(``shared_lib.telemetry.llm_calls.LLMCallLog``) from the same ``usage_of``, so the turn's total
is the sum of its calls' entries.
"""

from __future__ import annotations

from shared_lib.ports import LLMRequest, LLMResponse
from shared_lib.prices import PriceTable
from shared_lib.telemetry.llm_calls import usage_of
from shared_lib.turn.envelope import Turn, Usage


def add_call_usage(turn: Turn, prices: PriceTable, request: LLMRequest, response: LLMResponse) -> Usage:
    """Add one answered call to ``turn.usage``; the call's own usage is returned."""
    usage = usage_of(request, response, prices)
    turn.usage.add(usage)
    if response.peer and response.peer not in turn.route.peers:  # which peer served: the record shows it
        turn.route.peers.append(response.peer)
    return usage
