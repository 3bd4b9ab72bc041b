"""The debounce's step of the context stage (seed 001 §7.3; the buffer is ``state``).

``gather(turn, rt)`` is an answer step: an absorbed turn ends here, recorded as merged into the
later turn (the observer's ``merged``); a leader carries its batch's texts, one per line, as its
input; an answer to a pending confirmation (the ingress marked it, ``state_answer``) goes on at
once, alone; any other turn goes on (``None``). The window is the sender's
(``state_pace.window_for``: the channel's ``debounce_seconds`` until their rhythm shows, then
the median gap × 1.5 within ``debounce_min_seconds``..``debounce_max_seconds``). Cost: the
buffer's reads, one read of the sender's pace when the turn may wait, and one claim transaction
a batch when the channel has a window; none otherwise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_lib.features.debounce import state as debounce
from shared_lib.features.debounce import state_pace
from shared_lib.observability.logs import log_event
from shared_lib.turn.decisions import Outcome
from shared_lib.turn.envelope import Turn
from shared_lib.turn.stages import answer

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


def gather(turn: Turn, rt: Runtime) -> Outcome | None:
    """The debounce of ``turn`` (``state.debounce``): absorbed, leading its batch, or alone."""
    seconds = debounce.window(rt.settings.debounce_seconds, turn.channel)
    if not seconds or rt.vault is None or turn.step or turn.smoke:
        return None
    s = rt.settings
    path = debounce.buffer_path(turn.org_id, turn.channel, turn.room_id, turn.user_id)
    pace = state_pace.pace_path(turn.org_id, debounce.buffer_key(turn.channel, turn.room_id, turn.user_id))

    def rhythm() -> float:
        low, high = s.debounce_min_seconds, min(s.debounce_max_seconds, debounce.MAX_WINDOW_SECONDS)
        return state_pace.window_for(rt.store, pace, default=seconds, low=low, high=high)

    settled = debounce.settle(
        rt.store,
        path,
        turn.turn_id,
        window_seconds=rhythm,
        clock=rt.clock,
        sleep=rt.sleep,
        cipher=rt.vault.for_org(turn.org_id),
        pace=pace,
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


STEPS = (answer("debounce.gather", gather, on_job="never", effects=True),)
