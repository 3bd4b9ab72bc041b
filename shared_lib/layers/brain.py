"""Brain layer: picks the arm, handles a pending confirmation's answer, or asks for a
proposal (LLM brain or legacy brain). It proposes; it decides nothing."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from shared_lib.brain import legacy
from shared_lib.brain.llm_brain import propose as llm_propose
from shared_lib.envelope import Turn, Usage
from shared_lib.errors import BrainError, LLMError
from shared_lib.layers.base import Layer, Outcome
from shared_lib.proposal import Proposal
from shared_lib.state import confirmation

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


def fixed_text(text: str, why: str, confidence: float = 1.0) -> Proposal:
    return Proposal.model_validate({
        "output_type": "text_response",
        "reasoning": {"intent_understanding": why, "no_tool_reason": "固定の応答で答える状況のため"},
        "confidence": {"overall": confidence}, "text_response": text})


def run(turn: Turn, rt: Runtime) -> Outcome:
    sec = turn.proposal
    t0 = time.perf_counter()
    try:
        if turn.flags.kill_switch:
            sec.arm = "kill_switch"
            sec.proposal = fixed_text(rt.persona.message("kill_switch"), "緊急停止中のため固定メッセージで応答する")
            return Outcome("kill_switch", reason_code="flags.KILL_SWITCH")
        if not turn.shadow and confirmation.handle_pending_answer(turn, rt):
            return Outcome("pending_answer", reason_code=f"approval.{'set' if sec.approval else 'none'}")
        arm = turn.flags.shadow_candidate_arm if turn.shadow and turn.flags.shadow_candidate_arm else turn.flags.arm
        if arm == "llm" and rt.llm is not None:
            return _llm(turn, rt)
        sec.arm = "legacy"
        sec.proposal = legacy.propose(turn.inbound.text, registry=rt.registry, persona=rt.persona)
        return Outcome("proposed", reason_code="legacy", detail=sec.proposal.output_type)
    finally:
        sec.duration_ms = round((time.perf_counter() - t0) * 1000, 3)


def _llm(turn: Turn, rt: Runtime) -> Outcome:
    sec = turn.proposal
    sec.arm = "llm"
    sec.model = turn.flags.model or rt.settings.model
    assert rt.llm is not None
    try:
        result = llm_propose(turn, llm=rt.llm, persona=rt.persona, registry=rt.registry, model=sec.model,
                             max_tokens=rt.settings.max_tokens)
    except LLMError as exc:
        turn.add_error(BrainError.of(exc.code, exc.detail or exc.code, layer="brain"))
        sec.proposal = fixed_text(rt.persona.message(exc.code if exc.code in rt.persona.messages else "llm_unavailable"),
                             f"LLM呼び出しに失敗したため定型文で応答する（{exc.code}）", 0.0)
        return Outcome("llm_error", reason_code=exc.code)
    sec.proposal = result.proposal
    sec.attempts = result.attempts
    for resp in result.responses:
        turn.usage.add(Usage(input_tokens=resp.usage.input_tokens, output_tokens=resp.usage.output_tokens,
                             cache_creation_input_tokens=resp.usage.cache_creation_input_tokens,
                             cache_read_input_tokens=resp.usage.cache_read_input_tokens,
                             llm_calls=1, llm_duration_ms=resp.duration_ms,
                             cost_usd=rt.prices.cost(sec.model, resp.usage)))
    if result.error:
        turn.add_error(result.error)
        return Outcome("parse_error", reason_code="parse_error")
    return Outcome("proposed", reason_code=result.proposal.output_type)


LAYER = Layer("brain", "proposed", run)
