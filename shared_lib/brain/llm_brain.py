"""The LLM brain: asks Claude for a proposal through the ``submit_proposal`` decision tool.

Design: the registry tools are sent (so the model sees every schema, and the prefix is
cached) together with one decision tool whose input is the seed §5.2.3b proposal;
``tool_choice`` forces the decision tool, so the answer is always one JSON object with
reasoning and confidence. It is validated (shape, known tool, the tool's own parameter
model); an invalid answer is retried once with guidance, then becomes a clarification
(``parse_error`` fallback of seed §6.7.3).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from shared_lib.brain.tool_defs import DECISION_TOOL, anthropic_tools
from shared_lib.envelope import Turn
from shared_lib.errors import BrainError, LLMError
from shared_lib.persona import Persona
from shared_lib.ports import LLM, LLMRequest, LLMResponse
from shared_lib.proposal import Proposal, ToolCallProposal
from shared_lib.sanitizer import Sanitizer
from shared_lib.tools.registry import ToolRegistry


@dataclass
class BrainResult:
    proposal: Proposal
    attempts: int
    responses: list[LLMResponse] = field(default_factory=list)
    error: BrainError | None = None


def build_request(turn: Turn, *, persona: Persona, registry: ToolRegistry, model: str, max_tokens: int,
                  guidance: str = "") -> LLMRequest:
    sanitizer = Sanitizer.default()
    system = [{"type": "text", "text": persona.system_prompt(), "cache_control": {"type": "ephemeral"}}]
    context = sanitizer.mask_text(turn.context.rendered) if turn.context.rendered else ""
    user_text = sanitizer.mask_text(turn.inbound.text)
    content = (f"【現在のコンテキスト】\n{context}\n\n" if context else "") + f"【ユーザーのメッセージ】\n{user_text}"
    if guidance:
        content += f"\n\n【前回の出力の問題】\n{guidance}\nsubmit_proposal のスキーマに正しく従って出し直してください。"
    return LLMRequest(call_type="proposal", model=model, max_tokens=max_tokens, system=system,
                      tools=anthropic_tools(registry), tool_choice={"type": "tool", "name": DECISION_TOOL},
                      messages=[{"role": "user", "content": content}])


def validate_proposal(raw: Any, registry: ToolRegistry) -> Proposal:
    """Shape + known tools + each tool's parameter model. Raises ``ValueError`` with guidance."""
    try:
        proposal = Proposal.model_validate(raw)
    except ValidationError as exc:
        raise ValueError(f"schema: {exc.errors()[:3]}") from exc
    if isinstance(proposal.root, ToolCallProposal):
        for call in proposal.root.tool_calls:
            spec = registry.get(call.tool_name)
            if spec is None or not spec.enabled:
                raise ValueError(f"unknown tool {call.tool_name!r}")
            try:
                spec.params.model_validate(call.parameters)
            except ValidationError as exc:
                raise ValueError(f"parameters of {call.tool_name}: {exc.errors()[:3]}") from exc
    return proposal


def propose(turn: Turn, *, llm: LLM, persona: Persona, registry: ToolRegistry, model: str,
            max_tokens: int) -> BrainResult:
    responses: list[LLMResponse] = []
    guidance = ""
    for attempt in (1, 2):
        req = build_request(turn, persona=persona, registry=registry, model=model, max_tokens=max_tokens,
                            guidance=guidance)
        resp = llm.complete(req)  # LLMError propagates to the caller (catalogue fallback)
        responses.append(resp)
        uses = resp.tool_uses(DECISION_TOOL)
        try:
            if not uses:
                raise ValueError(f"no {DECISION_TOOL} call (stop_reason={resp.stop_reason})")
            return BrainResult(validate_proposal(uses[0].get("input"), registry), attempt, responses)
        except ValueError as exc:
            guidance = str(exc)[:800]
    error = BrainError.of("parse_error", f"invalid proposal after retry: {guidance}", layer="brain")
    return BrainResult(parse_error_clarification(persona, guidance), 2, responses, error)


def parse_error_clarification(persona: Persona, why: str) -> Proposal:
    return Proposal.model_validate({
        "output_type": "clarification_needed",
        "reasoning": {"ambiguity_detected": f"LLMの出力を検証できなかった: {why[:200]}",
                      "possible_interpretations": ["ユーザーに具体的に聞き直す"]},
        "confidence": {"overall": 0.0},
        "clarification_question": persona.message("parse_error"),
    })


def llm_error_text(persona: Persona, exc: LLMError) -> str:
    return persona.message(exc.code if exc.code in persona.messages else "llm_unavailable")


def dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, default=str)
