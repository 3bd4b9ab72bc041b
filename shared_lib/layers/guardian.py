"""Guardian layer: judges the proposal with the decision tree (``shared_lib.policy.guardian``).

The policy is the runtime's (``rt.policy``) plus the organisation's teachings the
context builder found. A violation the brain's constitution enforcer marked ``block``
(``turn.proposal.violations``) blocks at priority 1 before the tree runs. A constitution violation is recorded as a ``constitution_violation``
error, which the observer turns into an admin alert (seed 000 §4.7.1: block + alert).
A confirmation a live auto-approve grant covers becomes ``allow`` (``approval.auto_approved``,
``layers.auto_approval``: seed 002 §6.4).

It runs without a claim (``Layer.claimed``, issue 39): the verdict is a function of the
proposal, the policy, the teachings the envelope carries, the live grants it reads and the clock;
it writes only the approval job of an auto-approved verdict, created under an id derived from
the turn and its step (``approvals.store.create`` keeps the first), and errors on the envelope.
A redelivery runs it again and the authorizer's claim absorbs the second publish.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_lib.errors import BrainError
from shared_lib.layers.base import Layer, Outcome
from shared_lib.policy import guardian
from shared_lib.policy.subject import Origin
from shared_lib.policy.teachings import valid_teachings
from shared_lib.turn.decisions import Verdict
from shared_lib.turn.envelope import Turn

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


def origin(turn: Turn) -> Origin:
    """``system`` for the brain's fixed catalogue texts (kill switch, confirmation flow, LLM
    failure, a turn not started), which carry no model confidence; ``proposer`` for anything a brain proposed."""
    sec, p = turn.proposal, turn.proposal.proposal
    if p is None or p.output_type == "tool_call":
        return "proposer"
    if sec.arm in ("state", "kill_switch"):
        return "system"
    failed_llm = any(  # the call failed, or the turn's budget was gone before it (turn_backlog)
        e.layer == "brain" and (e.category == "llm_error" or e.code == "turn_backlog") for e in turn.errors
    )
    return "system" if sec.arm == "llm" and sec.attempts == 0 and failed_llm else "proposer"


def run(turn: Turn, rt: Runtime) -> Outcome:
    """The guardian stage (``rt.stages["guardian"]``: ``core``, then the steps that amend its verdict)."""
    return rt.stages["guardian"].run(turn, rt)


def core(turn: Turn, rt: Runtime) -> Outcome:
    proposal = turn.proposal.proposal
    if proposal is None:
        return Outcome("skipped", reason_code="no_proposal")
    blocking = next((v for v in turn.proposal.violations if v.action == "block"), None)
    verdict = (
        Verdict.block(blocking.code, priority=1, message=f"憲法違反（{blocking.article}）")
        if blocking
        else guardian.evaluate(
            proposal,
            registry=rt.registry,
            now=rt.clock(),
            config=rt.policy,
            approval=turn.proposal.approval,
            user_id=turn.user_id,
            origin=origin(turn),
            teachings=valid_teachings(turn.context.teachings),
        )
    )
    turn.guardian = verdict
    if verdict.reason_code.startswith("constitution."):
        turn.add_error(
            BrainError.of(
                "constitution_violation",
                f"{verdict.reason_code}: {verdict.message}",
                layer="guardian",
                reason_code=verdict.reason_code,
            )
        )
    return verdict_outcome(verdict)


def verdict_outcome(verdict: Verdict) -> Outcome:
    """The stage's outcome for ``verdict`` (an amend step that changes the verdict reports it so)."""
    return Outcome(verdict.action, reason_code=verdict.reason_code)


LAYER = Layer("guardian", "guarded", run, claimed=False)
