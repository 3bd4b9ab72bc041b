"""Prompt assembly for the proposal call (seed 000 §5.2.2, §8, §14 prompt caching).

Order is the cache order of the Messages API: **tools** (the route's registry tools + the
decision tool, breakpoint on the last) → **system block 1** (persona system prompt v2.0 + the
charter's instructions of §5.2.5, breakpoint) → **the route's block** (its profile's
instructions, ``config/routing.json``, breakpoint; none for a route without them, as CHAT)
→ **the volatile context** in Truth order, no breakpoint → **messages** (the user's message,
then at a later step of a multi-step turn the earlier steps, ``steps_prompt``, with the fourth
and last breakpoint on the last step's result). Everything stable is cached, each route's
prefix apart; nothing volatile precedes it; block 1 is the same bytes on every route.

All text is masked first (``Sanitizer``). The vault returned holds only the values of the
user's own message: placeholders that exist only in the context can never be restored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from shared_lib.brain.context_prompt import render_context
from shared_lib.brain.tool_defs import CACHE, DECISION_TOOL, anthropic_tools
from shared_lib.envelope import Turn
from shared_lib.persona import Persona
from shared_lib.ports import LLMRequest, LLMResponse
from shared_lib.sanitizer import Sanitizer
from shared_lib.tools.registry import ToolRegistry


@dataclass(frozen=True)
class Prompt:
    tools: list[dict[str, Any]]
    system: list[dict[str, Any]]
    user_text: str  # masked
    vault: dict[str, str] = field(default_factory=dict)  # user-message values only
    # a later step: the earlier steps as submit_proposal calls and their tool_result (steps_prompt)
    history: list[dict[str, Any]] = field(default_factory=list)


def stable_system(persona: Persona) -> dict[str, Any]:
    """The cached system block: identical for every turn of a persona."""
    text = persona.system_prompt().rstrip() + "\n\n" + persona.prompt("instructions").strip()
    return {"type": "text", "text": text, "cache_control": dict(CACHE)}


def assemble(
    turn: Turn,
    *,
    persona: Persona,
    registry: ToolRegistry,
    now: datetime,
    sanitizer: Sanitizer | None = None,
    route_prompt: str = "",
) -> Prompt:
    """``registry`` holds the tools offered (the route's); ``route_prompt`` its instructions."""
    sanitizer = sanitizer or Sanitizer.default()
    user_text, user_vault = sanitizer.mask(turn.brain_text())
    working = dict(user_vault)  # same value, same placeholder; context-only entries stay here
    context, _ = sanitizer.mask(render_context(turn, now), working)
    route = [{"type": "text", "text": route_prompt, "cache_control": dict(CACHE)}] if route_prompt else []
    system = [stable_system(persona), *route, {"type": "text", "text": context}]
    return Prompt(
        tools=anthropic_tools(registry),
        system=system,
        user_text=user_text or "（空のメッセージ）",
        vault=dict(user_vault),
    )


def proposal_request(
    prompt: Prompt,
    *,
    model: str,
    max_tokens: int,
    stream: bool,
    previous: LLMResponse | None = None,
    guidance: str = "",
) -> LLMRequest:
    """The proposal call; with ``previous`` and ``guidance`` the one retry of seed §6.7.3."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt.user_text}, *prompt.history]
    if previous is not None and guidance:
        messages += retry_messages(previous, guidance)
    return LLMRequest(
        call_type="proposal",
        model=model,
        max_tokens=max_tokens,
        system=prompt.system,
        tools=prompt.tools,
        tool_choice={"type": "tool", "name": DECISION_TOOL},
        messages=messages,
        stream=stream,
    )


def retry_messages(previous: LLMResponse, guidance: str) -> list[dict[str, Any]]:
    """The model's invalid answer and the validator's guidance, as the API expects them:
    a ``tool_result`` with ``is_error`` for each tool call, or plain text otherwise."""
    note = (
        f"前回の提出は受け付けられなかった。理由: {guidance}\n"
        f"{DECISION_TOOL} のスキーマと、定義済みのToolとその input_schema に従って、もう一度 {DECISION_TOOL} で提出すること。"
    )
    content = [b for b in previous.content if b.get("type") in ("text", "tool_use")]
    uses = [b for b in content if b.get("type") == "tool_use"]
    if not content:
        return [{"role": "assistant", "content": "（応答なし）"}, {"role": "user", "content": note}]
    if not uses:
        return [{"role": "assistant", "content": content}, {"role": "user", "content": note}]
    results = [
        {"type": "tool_result", "tool_use_id": u.get("id", ""), "is_error": True, "content": note}
        for u in uses
    ]
    return [{"role": "assistant", "content": content}, {"role": "user", "content": results}]
