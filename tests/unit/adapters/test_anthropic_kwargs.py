"""What the Anthropic-family adapters (AnthropicLLM, VertexLLM) hand the SDK: only arguments its
Messages.create takes. SDK 2.x (API version 2026-10-21) has no sampling parameters: a request's
temperature (Best-of-N candidates, the memory jobs) must not reach it, or every such call fails."""

from __future__ import annotations

import inspect

from anthropic.resources.messages import Messages

from shared_lib.adapters.anthropic_llm import _kwargs
from shared_lib.ports import LLMRequest


def test_every_argument_the_adapter_passes_is_one_the_sdk_takes():
    request = LLMRequest(
        model="claude-haiku-4-5",
        max_tokens=50,
        system=[{"type": "text", "text": "s"}],
        tools=[{"name": "t", "description": "d", "input_schema": {"type": "object"}}],
        tool_choice={"type": "auto"},
        messages=[{"role": "user", "content": "こんにちは"}],
        temperature=0.7,
    )
    taken = set(inspect.signature(Messages.create).parameters)
    kwargs = _kwargs(request)
    assert set(kwargs) <= taken, set(kwargs) - taken
    assert {"model", "max_tokens", "messages", "system", "tools", "tool_choice"} <= set(kwargs)
