"""Memory stories' step of the memory target's stage (``MANIFEST.steps``): an event episode of the
turn when it deserves one (seed 001 §22). Cost: one fast-model call and the episode's writes
when the turn's facts call for an episode; none otherwise."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_lib.errors import LLMError
from shared_lib.features.memory_stories import steps as stories
from shared_lib.layers import memory
from shared_lib.observability.logs import log_event
from shared_lib.turn.callctx import job_context
from shared_lib.turn.decisions import Outcome
from shared_lib.turn.envelope import Turn
from shared_lib.turn.stages import amend

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


def episode(turn: Turn, rt: Runtime, outcome: Outcome) -> Outcome:
    with job_context(
        turn.org_id, "memory", conversation_key=turn.conversation_key, local_only=turn.route.local_only
    ):
        try:
            told = stories.on_turn_episode(rt, turn)
            status: str = told.status if told is not None else "none"
        except LLMError as exc:  # the model refused or failed: this turn keeps no episode
            log_event(
                "episode_failed", layer="memory", org_id=turn.org_id, error=f"{type(exc).__name__}: {exc}"
            )
            status = "llm_failed"
    return memory.with_result(outcome, f"episode_{status}")


STEPS = (amend("memory_stories.episode", episode, effects=True),)
