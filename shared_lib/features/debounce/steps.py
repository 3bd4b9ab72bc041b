"""The debounce's step of the context stage (seed 001 §7.3; the buffer is ``state``).

``gather(turn, rt)`` is an answer step: an absorbed turn ends here, recorded as merged into the
later turn (the observer's ``merged``); a leader carries its batch's texts, one per line, as its
input; any other turn goes on (``None``). Cost: one buffer transaction a message when the
channel has a window, none otherwise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_lib.features.debounce import state as debounce
from shared_lib.observability.logs import log_event
from shared_lib.turn.decisions import Outcome
from shared_lib.turn.envelope import Turn

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


def gather(turn: Turn, rt: Runtime) -> Outcome | None:
    """The debounce of ``turn`` (``state.debounce``): absorbed, leading its batch, or alone."""
    seconds = debounce.window(rt.settings.debounce_seconds, turn.channel)
    if not seconds or rt.vault is None or turn.step or turn.smoke:
        return None
    path = debounce.buffer_path(turn.org_id, turn.channel, turn.room_id, turn.user_id)
    settled = debounce.settle(
        rt.store, path, turn.turn_id, window_seconds=seconds, clock=rt.clock, sleep=rt.sleep, cipher=rt.vault
    )
    turn.context.debounce = settled.section()
    if settled.role == "absorbed":
        log_event("debounce_absorbed", turn=turn, layer="context", merged_into=settled.merged_into)
        return Outcome(
            "absorbed",
            reason_code="debounce.absorbed",
            next_topic="completed",
            detail=f"merged_into={settled.merged_into}",
        )
    if len(settled.texts) > 1:
        turn.inbound = turn.inbound.model_copy(update={"text": debounce.SEPARATOR.join(settled.texts)})
    return None
