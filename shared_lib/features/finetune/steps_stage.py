"""Fine-tuning staging's step of the memory target's stage (``MANIFEST.steps``): a person's turn
staged as fine-tuning data when the fixed rules say so (seed 001 §29.3). Cost: one transaction
when the organisation opted in and the turn is a candidate; none otherwise."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_lib.features.finetune.state import staging
from shared_lib.layers import memory
from shared_lib.turn.decisions import Outcome
from shared_lib.turn.envelope import Turn
from shared_lib.turn.stages import amend

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


def stage(turn: Turn, rt: Runtime, outcome: Outcome) -> Outcome:
    staged = staging.stage(
        rt.store, turn, now=rt.clock(), retention=rt.settings.retention(turn.org_id)
    ).result
    return memory.with_result(outcome, f"ft_{staged}")


STEPS = (amend("finetune.stage", stage, on_job="never", effects=True),)
