"""Authorizer layer: the Authorization Gate, checked before any confirmation is asked and
again by the executor right before execution.

It runs for every verdict except a block (a confirmation is only asked for what the user
may do). A directory that cannot be read denies (``access_control_error``) and raises an
admin alert at once.

It runs without a claim (``Layer.claimed``, issue 39): the decision is a function of the
proposal, the policy and the directory it reads; its one write is the alert above, whose event
id is derived from the turn and its step, so a redelivery that runs it again raises it once.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from shared_lib.errors import BrainError
from shared_lib.layers.base import Layer, Outcome
from shared_lib.policy.authorization import authorize
from shared_lib.turn.decisions import AuthDecision
from shared_lib.turn.envelope import Turn
from shared_lib.turn.proposal import Proposal

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


def gate(turn: Turn, rt: Runtime, proposal: Proposal) -> AuthDecision:
    """The Authorization Gate on ``proposal`` for the turn's user (also asked by auto-approve and
    by the executor right before execution)."""
    return authorize(
        proposal,
        store=rt.store,
        org_id=turn.org_id,
        user_id=turn.user_id,
        registry=rt.registry,
        config=rt.policy,
    )


def run(turn: Turn, rt: Runtime) -> Outcome:
    """The authorizer stage (``rt.stages["authorizer"]``: ``core``, its amend and after steps)."""
    return rt.stages["authorizer"].run(turn, rt)


def core(turn: Turn, rt: Runtime) -> Outcome:
    proposal = turn.proposal.proposal
    if proposal is None or (turn.guardian is not None and turn.guardian.blocked):
        turn.authorization = AuthDecision.not_applicable()
        return Outcome("not_applicable", reason_code="not_applicable")
    decision = gate(turn, rt, proposal)
    turn.authorization = decision
    if decision.reason_code == "directory.unavailable":
        detail = str(decision.details.get("error", "directory unreadable"))
        turn.add_error(BrainError.of("access_control_error", detail, layer="authorizer"))
    return Outcome(decision.result, reason_code=decision.reason_code)


def directory_alert(turn: Turn, rt: Runtime, outcome: Outcome) -> None:
    """An after step: a directory that cannot be read raises an admin alert at once."""
    a = turn.authorization
    if a is not None and a.reason_code == "directory.unavailable":
        rt.emit_alert(
            turn,
            "access_control_error",
            f"directory unreadable: denied ({a.details.get('error', '')})",
            event_id=alert_id(turn),
        )


def alert_id(turn: Turn) -> str:
    """The directory alert's event id: the same for the same turn and step, whatever the delivery."""
    key = f"{turn.org_id}:{turn.turn_id}:{turn.step}:authorizer.directory_unavailable"
    return "ev-" + hashlib.sha256(key.encode()).hexdigest()[:32]


LAYER = Layer("authorizer", "authorized", run, claimed=False)
