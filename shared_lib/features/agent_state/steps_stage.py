"""The agent state's step of the stages (``MANIFEST.steps``; the stage table places it): the
conversation's state after this utterance, applied once (seed 004). Cost: one transaction when
the turn proposed or decided a move; none otherwise."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_lib.features.agent_state.store import record_turn
from shared_lib.turn.decisions import Outcome
from shared_lib.turn.envelope import Turn
from shared_lib.turn.stages import after

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


def record(turn: Turn, rt: Runtime, outcome: Outcome) -> None:
    turn.agent = record_turn(rt.store, turn, now=rt.clock(), retention=rt.settings.retention(turn.org_id))


STEPS = (after("agent_state.record", record, on_job="never"),)
