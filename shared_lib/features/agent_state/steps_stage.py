"""The agent state's step of the stages (``MANIFEST.steps``; the stage table places it): the
conversation's state after this utterance, applied once (seed 004). Cost: nothing of its own
when the turn proposed or decided a move — its read and write join the responder's end commit
(``state.turn_end``, with the session and the reply's history); none otherwise."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_lib.features.agent_state.store import agent_state_path, record_part
from shared_lib.state import turn_end
from shared_lib.turn.agent_record import AgentSection
from shared_lib.turn.decisions import Outcome
from shared_lib.turn.envelope import Turn
from shared_lib.turn.stages import after

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


def record(turn: Turn, rt: Runtime, outcome: Outcome) -> None:
    part = record_part(turn, now=rt.clock(), retention=rt.settings.retention(turn.org_id))
    if part is None:  # nothing proposed, nothing decided: the state read by the context stands
        turn.agent = AgentSection(state=dict(turn.context.agent_state))
        return

    def recorded(section: AgentSection) -> None:
        turn.agent = section

    turn_end.run(rt.store, part, recorded, reads=[agent_state_path(turn.org_id, turn.conversation_key)])


STEPS = (after("agent_state.record", record, on_job="never"),)
