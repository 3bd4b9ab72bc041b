"""Brain-shadow layer: on ``turns.contextualized`` (its own subscription), runs the
candidate arm through brain, guardian, authorizer and a dry-run executor and responder.

It never executes a tool, never writes session state, never sends a message; its
failures are recorded, never raised into the served arm. The candidate envelope goes to
``turns.shadow`` where the observer stores and compares it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from shared_lib.envelope import Turn
from shared_lib.errors import BrainError
from shared_lib.layers import authorizer, brain, executor, guardian, responder
from shared_lib.layers.base import Layer, LayerRunner, Outcome

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime

log = logging.getLogger(__name__)
CANDIDATE_LAYERS = (brain.LAYER, guardian.LAYER, authorizer.LAYER, executor.LAYER, responder.LAYER)


def run(turn: Turn, rt: Runtime) -> Outcome:
    if turn.flags.shadow_candidate_arm is None or turn.shadow or turn.step > 0:
        return Outcome("not_sampled", reason_code="shadow.off", next_topic=None)
    turn.shadow = True
    for layer in CANDIDATE_LAYERS:
        try:
            LayerRunner(layer, rt).run(turn)
        except Exception as exc:  # recorded, never raised into the served arm
            log.warning("shadow candidate failed in %s: %s", layer.name, exc)
            turn.add_error(BrainError.of("execution_error", f"shadow {layer.name}: {exc}", layer=layer.name))
            break
    return Outcome("candidate", reason_code=f"shadow.{turn.flags.shadow_candidate_arm}")


LAYER = Layer("brain_shadow", "shadow", run)
