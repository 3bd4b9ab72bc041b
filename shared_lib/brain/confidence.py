"""The confidence table of seed 000 §5.2.3b, applied to the LLM's proposal.

| overall | band | tool_call | text_response |
|---|---|---|---|
| 0.9-1.0 | very_high | as proposed | as proposed |
| 0.7-0.89 | high | as proposed (band logged) | as proposed |
| 0.5-0.69 | medium | ``needs_confirmation`` (confirm mode) | as proposed |
| 0.3-0.49 | low | ``needs_confirmation`` + a confirmation question | becomes a clarification question |
| 0.0-0.29 | very_low | as proposed: the guardian blocks it (``confidence.too_low``) and the reply says "分からない" | "分からない" reply |

The brain only ever makes a proposal stricter; the guardian decides with its own copy of
the same thresholds. Clarifications are kept in every band: asking is always safe.
"""

from __future__ import annotations

from shared_lib.brain.config import Band, BrainConfig
from shared_lib.brain.constitution import confirmation_question
from shared_lib.persona.catalogue import Persona
from shared_lib.tools.registry import ToolRegistry
from shared_lib.turn.proposal import Proposal, TextResponseProposal, ToolCallProposal


def apply_band(
    proposal: Proposal, cfg: BrainConfig, persona: Persona, registry: ToolRegistry
) -> tuple[Proposal, Band]:
    band = cfg.band(proposal.confidence)
    root = proposal.root
    if isinstance(root, ToolCallProposal) and band.action in ("confirm", "ask"):
        question = root.confirmation_question
        if band.action == "ask" and not question.strip():
            question = confirmation_question(root, persona, registry)
        return Proposal(
            root=root.model_copy(update={"needs_confirmation": True, "confirmation_question": question})
        ), band
    if isinstance(root, TextResponseProposal) and band.action == "dont_know":
        return Proposal(
            root=root.model_copy(update={"text_response": persona.message("too_low_confidence")})
        ), band
    if isinstance(root, TextResponseProposal) and band.action == "ask":
        return Proposal.model_validate(
            {
                "output_type": "clarification_needed",
                "reasoning": {
                    "ambiguity_detected": f"確信度 {proposal.confidence:.2f} は低い帯（{band.min}以上）のため、"
                    "答える前に確認する",
                    "possible_interpretations": [root.reasoning.intent_understanding],
                },
                "confidence": root.confidence.model_dump(),
                "clarification_question": persona.message("clarify_low_confidence"),
            }
        ), band
    return proposal, band
