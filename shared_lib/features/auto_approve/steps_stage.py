"""Auto-approve's steps of the stages (``MANIFEST.steps``; the stage table orders them): the chat
command written first, its answer from the catalogue, a grant applied to a confirm verdict, and
the approval job of an auto-approved verdict recorded once the verdict stands. Cost: the
command's write when the message is one; one grants read on a confirm verdict; the job's write
when a grant applied."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_lib.features.auto_approve import steps as auto_approval
from shared_lib.layers import guardian
from shared_lib.turn.decisions import Outcome
from shared_lib.turn.envelope import Turn
from shared_lib.turn.stages import after, amend, answer

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


def command(turn: Turn, rt: Runtime) -> Outcome | None:
    """The instant OFF (or ON) is written before anything else reads the grants (seed 002 §6.4)."""
    auto_approval.chat_command(turn, rt)
    return None


def apply(turn: Turn, rt: Runtime, outcome: Outcome) -> Outcome:
    """A confirm verdict a live auto-approve grant covers runs without asking."""
    if turn.guardian is None or turn.guardian.action != "confirm":
        return outcome
    turn.guardian = auto_approval.apply(turn, rt, turn.guardian)
    return guardian.verdict_outcome(turn.guardian)


def record(turn: Turn, rt: Runtime, outcome: Outcome) -> None:
    auto_approval.record(turn, rt)


STEPS = (
    answer("auto_approve.command", command, on_job="never", effects=True),
    answer("auto_approve.answer", auto_approval.answer_command),
    amend("auto_approve.apply", apply),
    after("auto_approve.record", record),
)
