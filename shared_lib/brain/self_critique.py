"""Self-critique (seed 000 §5.5.3, §6.5.3): for important judgements a second call asks the
model to criticise its own proposal. The result is recorded on
``turn.proposal.self_critique`` and changes nothing: it never alters the proposal, the
verdict or the reply, and its failure is recorded, never raised.

Conditions (§5.5.3): confidence in the middle band (0.7-0.9), more than one candidate
tool, a dangerous operation, or a 10 % random draw. A turn that meets one is critiqued
with probability ``flags.self_critique_rate`` (0 disables it). Draws are a hash of the
turn id, so a redelivered turn makes the same choice.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from shared_lib.brain.config import BrainConfig
from shared_lib.brain.continuation import Recorder, complete
from shared_lib.brain.tool_defs import CRITIQUE_TOOL, critique_tool
from shared_lib.errors import LLMError
from shared_lib.persona.catalogue import Persona
from shared_lib.ports import LLM, LLMRequest
from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.tools.registry import ToolRegistry
from shared_lib.turn.envelope import Turn
from shared_lib.turn.proposal import Proposal, ToolCallProposal


def draw(turn_id: str, purpose: str) -> float:
    """A stable number in [0, 1) for this turn and purpose."""
    digest = hashlib.sha256(f"{turn_id}:{purpose}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def conditions(proposal: Proposal, registry: ToolRegistry, cfg: BrainConfig, turn_id: str) -> list[str]:
    """Which §5.5.3 conditions hold (empty: none)."""
    rules, root, found = cfg.self_critique, proposal.root, []
    low, high = rules.mid_band
    if low <= proposal.confidence <= high:
        found.append("mid_confidence")
    if isinstance(root, ToolCallProposal):
        names = {s.name for s in registry.enabled()}
        others = {n for alt in root.reasoning.alternatives_considered for n in names if n in alt}
        if len(root.tool_calls) > 1 or others - {c.tool_name for c in root.tool_calls}:
            found.append("multiple_candidates")
        specs = [registry.get(c.tool_name) for c in root.tool_calls]
        if any(s and (s.danger in rules.dangerous_levels or s.danger_action) for s in specs):
            found.append("dangerous")
    if draw(turn_id, "critique-random") < rules.random_rate:
        found.append("random")
    return found


def should_run(found: list[str], rate: float, turn_id: str) -> bool:
    return bool(found) and rate > 0 and draw(turn_id, "critique-rate") < rate


def critique(
    llm: LLM,
    turn: Turn,
    proposal: Proposal,
    *,
    persona: Persona,
    model: str,
    cfg: BrainConfig,
    found: list[str],
    record: Recorder,
) -> dict[str, Any]:
    """Run the critique call; always returns a record (``status`` ok or error)."""
    s = Sanitizer.default()
    root = proposal.root
    tools = [{"tool_name": c.tool_name, "parameters": c.parameters} for c in proposal.tool_calls]
    text = persona.prompt(
        "self_critique",
        persona=persona.name,
        user_message=s.mask_text(turn.brain_text()),
        output_type=root.output_type,
        tools=json.dumps(s.mask_obj(tools), ensure_ascii=False),
        reasoning=s.mask_text(root.reasoning_text()),
        confidence=f"{proposal.confidence:.2f}",
    )
    request = LLMRequest(
        call_type="self_critique",
        model=model,
        max_tokens=cfg.max_tokens.self_critique,
        tools=[critique_tool()],
        tool_choice={"type": "tool", "name": CRITIQUE_TOOL},
        messages=[{"role": "user", "content": text}],
        stream=cfg.stream,
    )
    base: dict[str, Any] = {"conditions": found, "model": model}
    try:
        done = complete(llm, request, max_continuations=0, cap=cfg.max_tokens.cap, record=record)
    except LLMError as exc:
        return {**base, "status": "error", "code": exc.code}
    uses = done.response.tool_uses(CRITIQUE_TOOL)
    data = uses[0].get("input") if uses else None
    if not isinstance(data, dict):
        return {**base, "status": "error", "code": "parse_error"}
    appropriate = data.get("appropriate")
    return {
        **base,
        "status": "ok",
        "appropriate": appropriate if isinstance(appropriate, bool) else None,
        "improvements": s.mask_text(str(data.get("improvements") or ""))[:500],
        "risks": s.mask_text(str(data.get("risks") or ""))[:500],
    }
