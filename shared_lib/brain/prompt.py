"""Prompt assembly for the proposal call (seed 000 §5.2.2, §8, §14; seed 004 §3 three layers).

Fixed order, the cache order of the Messages API, stable first:

1. **tools** (the route's registry tools + the decision tool), no breakpoint of their own;
2. **Base** (``stable_system``: persona system prompt v2.0 + the charter's instructions,
   the seed 004 §9 dialog policy among them): the same bytes for every turn of every
   conversation of a persona, on every route; breakpoint 1 (it caches tools + Base);
3. **the route's block** (its profile's instructions, ``config/routing.json``); breakpoint 2;
   none for a route without instructions (CHAT);
4. **Specialised** (``clarify``, ``plan``, ``confirm_gate``, ``summarise`` or none, chosen by
   code: ``specialised.choose_specialised``, the persona's ``[prompts]``); breakpoint 3, so
   turns choosing the same one share the prefix up to it;
5. **Main**, volatile, no breakpoint: the agent state (``agent_state_prompt``; the budget may
   have cut its open questions and plan, seed 004 §11),
   the organisation's learned persona and the context's override (``persona_prompt``), then
   the context in Truth order (``context_prompt``, the builder's budget);
6. **messages**: the user's message, then at a later step the earlier steps
   (``steps_prompt``), breakpoint 4 on the last step's result.

The API allows 4 breakpoints; with all five places marked a later step of a routed,
specialised turn would send 5. The tools' breakpoint is the one dropped (``proposal_tools``):
the tools are always followed by Base, whose bytes are fixed per persona, so the prefix
"tools" is never reused without "tools + Base" being reusable too; breakpoint 1 covers both.
The response-integration call sends the same tools and Base, so it reads the same prefix.

All text is masked first (``Sanitizer``). The vault returned holds only the values of the
user's own message: placeholders that exist only in the context can never be restored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from shared_lib.brain.agent_state_prompt import render_agent_state
from shared_lib.brain.context_prompt import render_context
from shared_lib.brain.persona_prompt import persona_block
from shared_lib.brain.specialised import Specialised, choose_specialised, specialised_blocks
from shared_lib.brain.tool_defs import CACHE, DECISION_TOOL, anthropic_tools
from shared_lib.persona.catalogue import Persona
from shared_lib.ports import LLMRequest, LLMResponse
from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.tools.registry import ToolRegistry
from shared_lib.turn.envelope import Turn


@dataclass(frozen=True)
class Prompt:
    tools: list[dict[str, Any]]
    system: list[dict[str, Any]]
    user_text: str  # masked
    vault: dict[str, str] = field(default_factory=dict)  # user-message values only
    # a later step: the earlier steps as submit_proposal calls and their tool_result (steps_prompt)
    history: list[dict[str, Any]] = field(default_factory=list)
    specialised: Specialised | None = None  # the Specialised block chosen (seed 004 §3.3)


def stable_system(persona: Persona) -> dict[str, Any]:
    """Base: the cached system block, identical for every turn of a persona."""
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
    # Main: the agent state, the organisation's learned persona (seed 001 §16), the context
    parts = (render_agent_state(turn.context.agent_state), persona_block(turn, persona, registry))
    main = "\n\n".join(p for p in parts if p) + "\n\n" + render_context(turn, now)
    main, _ = sanitizer.mask(main, working)
    route = [{"type": "text", "text": route_prompt, "cache_control": dict(CACHE)}] if route_prompt else []
    chosen = choose_specialised(turn)
    special = specialised_blocks(persona, chosen)
    system = [stable_system(persona), *route, *special, {"type": "text", "text": main}]
    return Prompt(
        tools=proposal_tools(registry),
        system=system,
        user_text=user_text or "（空のメッセージ）",
        vault=dict(user_vault),
        specialised=chosen if special else None,
    )


def proposal_tools(registry: ToolRegistry) -> list[dict[str, Any]]:
    """The tools of the proposal (and integration) call, without a breakpoint: Base's covers them."""
    return [{k: v for k, v in tool.items() if k != "cache_control"} for tool in anthropic_tools(registry)]


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
