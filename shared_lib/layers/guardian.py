"""Guardian layer: judges the proposal with the decision tree (``shared_lib.policy.guardian``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_lib.envelope import Turn
from shared_lib.layers.base import Layer, Outcome
from shared_lib.policy import guardian

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


def run(turn: Turn, rt: Runtime) -> Outcome:
    proposal = turn.proposal.proposal
    if proposal is None:
        return Outcome("skipped", reason_code="no_proposal")
    verdict = guardian.evaluate(proposal, registry=rt.registry, now=rt.clock(), approval=turn.proposal.approval)
    turn.guardian = verdict
    return Outcome(verdict.action, reason_code=verdict.reason_code)


LAYER = Layer("guardian", "guarded", run)
