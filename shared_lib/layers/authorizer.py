"""Authorizer layer: the Authorization Gate, checked before any confirmation is asked and
again by the executor right before execution.

It runs for every verdict except a block (a confirmation is only asked for what the user
may do). A directory that cannot be read denies (``access_control_error``) and raises an
admin alert at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_lib.errors import BrainError
from shared_lib.features.jobs import state as agent_jobs
from shared_lib.layers.base import Layer, Outcome
from shared_lib.policy.authorization import authorize
from shared_lib.turn.decisions import AuthDecision
from shared_lib.turn.envelope import Turn
from shared_lib.turn.proposal import Proposal

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


def gate(turn: Turn, rt: Runtime, proposal: Proposal) -> AuthDecision:
    """The Authorization Gate on ``proposal`` for the turn's user (also asked by auto-approve).
    A delegated job's turn runs as its requester and may never delegate again (depth 1)."""
    if turn.job is not None and agent_jobs.delegates(c.tool_name for c in proposal.tool_calls):
        return AuthDecision.denied(agent_jobs.NESTED, message="deny")
    return authorize(
        proposal,
        store=rt.store,
        org_id=turn.org_id,
        user_id=turn.user_id,
        registry=rt.registry,
        config=rt.policy,
    )


def run(turn: Turn, rt: Runtime) -> Outcome:
    proposal = turn.proposal.proposal
    if proposal is None or (turn.guardian is not None and turn.guardian.blocked):
        turn.authorization = AuthDecision.not_applicable()
        return Outcome("not_applicable", reason_code="not_applicable")
    decision = gate(turn, rt, proposal)
    turn.authorization = decision
    if decision.reason_code == "directory.unavailable":
        detail = str(decision.details.get("error", "directory unreadable"))
        turn.add_error(BrainError.of("access_control_error", detail, layer="authorizer"))
        if not turn.shadow:
            rt.emit_alert(turn, "access_control_error", f"directory unreadable: denied ({detail})")
    return Outcome(decision.result, reason_code=decision.reason_code)


LAYER = Layer("authorizer", "authorized", run)
