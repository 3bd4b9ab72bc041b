"""Persona learning's steps of the stages (``MANIFEST.steps``; the stage table orders them): what
the LLM proposed to teach the organisation's persona, judged and applied once (seed 001 §16), or
on a dry run recorded refused. Cost: one transaction on the extension when a turn proposed a
change; none otherwise."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_lib.brain.persona_prompt import context_for
from shared_lib.features.persona_learning.store import apply_turn
from shared_lib.turn.decisions import Outcome
from shared_lib.turn.envelope import Turn
from shared_lib.turn.stages import amend

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


def _section(turn: Turn, rt: Runtime, *, dry_run: bool) -> None:
    section = apply_turn(rt.store, turn, rt.persona.core(), now=rt.clock(), dry_run=dry_run)
    section.context = context_for(turn, rt.registry)
    turn.persona = section


def learn(turn: Turn, rt: Runtime, outcome: Outcome) -> Outcome:
    """The turn's persona proposals, judged and applied once; the outcome notes what was taught."""
    _section(turn, rt, dry_run=False)
    detail = " ".join(x for x in (outcome.detail, turn.persona.note()) if x)
    return Outcome(
        outcome.outcome, reason_code=outcome.reason_code, next_topic=outcome.next_topic, detail=detail
    )


def dry_run(turn: Turn, rt: Runtime, outcome: Outcome) -> Outcome:
    """A shadow candidate's persona proposals: recorded refused, nothing written."""
    _section(turn, rt, dry_run=True)
    return outcome


STEPS = (
    amend("persona.learn", learn, on_job="never", effects=True),
    amend("persona.dry_run", dry_run, on_job="never", shadow_only=True),
)
