"""Brain layer: picks the arm, handles a pending confirmation's answer, or asks for a
proposal (LLM arm, ``shared_lib.brain.llm_arm``; or the legacy keyword brain). It
proposes; it decides nothing.

Arms: ``kill_switch`` (fixed message), ``state`` (an answer to a pending confirmation,
seed §5.1.7), ``fast_path`` (a trivial greeting, no LLM call), ``llm``, ``legacy`` (the
control arm, and the fallback when no LLM is configured).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from shared_lib.brain import legacy, llm_arm
from shared_lib.brain.config import load_brain_config
from shared_lib.brain.llm_brain import fixed_text
from shared_lib.brain.vault import store_vault
from shared_lib.envelope import Turn
from shared_lib.errors import BrainError
from shared_lib.layers import confirmation
from shared_lib.layers.base import Layer, Outcome
from shared_lib.sanitizer import Sanitizer

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime

__all__ = ["LAYER", "fixed_text", "run"]


def run(turn: Turn, rt: Runtime) -> Outcome:
    sec = turn.proposal
    t0 = time.perf_counter()
    try:
        if turn.flags.kill_switch:
            sec.arm = "kill_switch"
            sec.proposal = fixed_text(
                rt.persona.message("kill_switch"), "緊急停止中のため固定メッセージで応答する"
            )
            return Outcome("kill_switch", reason_code="flags.KILL_SWITCH")
        if not turn.shadow and confirmation.handle_pending_answer(turn, rt):
            return Outcome("pending_answer", reason_code=f"approval.{'set' if sec.approval else 'none'}")
        arm = (
            turn.flags.shadow_candidate_arm
            if turn.shadow and turn.flags.shadow_candidate_arm
            else turn.flags.arm
        )
        if arm == "llm" and rt.llm is not None:
            return llm_arm.run(turn, rt)
        sec.arm = "legacy"
        sec.proposal = legacy.propose(turn.inbound.text, registry=rt.registry, persona=rt.persona)
        if sec.proposal.tool_calls:
            _keep_own_values(turn, rt)
        reason = "legacy" if arm == "legacy" else "legacy.no_llm"
        return Outcome("proposed", reason_code=reason, detail=sec.proposal.output_type)
    finally:
        sec.duration_ms = round((time.perf_counter() - t0) * 1000, 3)


def _keep_own_values(turn: Turn, rt: Runtime) -> None:
    """The legacy arm proposes with the user's real values; a confirmation stores its pending
    action masked (``confirmation``), so the vault keeps them for the executor, as the LLM arm's does."""
    entries = Sanitizer.default().mask(turn.inbound.text)[1]
    try:
        ttl = load_brain_config().vault.ttl_minutes
        store_vault(rt.store, turn, entries, now=rt.clock(), ttl_minutes=ttl, cipher=rt.vault)
    except Exception as exc:  # the action still runs now; only a later approval loses the values
        turn.add_error(
            BrainError.of(
                "memory_access_error", f"vault: {type(exc).__name__}", layer="brain", source="store"
            )
        )


LAYER = Layer("brain", "proposed", run)
