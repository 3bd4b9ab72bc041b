"""The agent state of a conversation at rest, and what the charter decided on a turn's steps.

``orgs/{org}/agent_states/{conversation id}`` (one per conversation, outliving the session):
the state of ``shared_lib.features.agent_state.state`` with its texts masked (``Sanitizer.mask_stored``), the
conversation's ``user_id``, ``expires_at`` the organisation's retention after the last write,
the utterances already applied and the last one's outcome.

``record_turn`` applies a finished turn in one transaction: each of the turn's own steps (a
resumed loop's earlier steps belong to the paused utterance) with the code's transition for it
(``code_transition``) and the LLM's ``state_update``. A redelivered turn finds its utterance
applied and changes nothing (it reads back the outcome it recorded). A shadow turn never writes,
nor a turn whose steps proposed no update and on which the code decided nothing (small talk).

The code's transitions (seed 004 §6, the charter decides)::

    CONFIRM asked                    -> AWAITING_APPROVAL  REQUIRES_USER_INPUT  pending_gate
    approval granted and executed    -> EXECUTION          SUCCESS | ERROR by the results
    approval denied/cancelled/expired,
      or granted but not executed    -> PLANNING           (ERROR when not executed)
    a tool executed without approval -> EXECUTION          SUCCESS
    a failed execution               -> PLANNING           ERROR (the error transition)
    blocked or denied by the gate    -> (none)             ERROR
    a clarification / a text reply   -> (none)             REQUIRES_USER_INPUT / unchanged
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from shared_lib.collections import conversation_id, path
from shared_lib.features.agent_state.state import FIVE, AgentState, CodeTransition, apply
from shared_lib.ports import Store, Transaction
from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.turn.agent_record import AgentSection, Status, Step, Transition
from shared_lib.turn.envelope import StepRecord, Turn
from shared_lib.turn.proposal import ClarificationProposal, StateUpdate

APPLIED_KEPT = 20  # utterances remembered as applied (a redelivery comes within minutes)
_TEXTS = (*FIVE, "decision_log", "last_delta", "context_refs")


def agent_state_path(org_id: str, conversation_key: str) -> str:
    return path("agent_states", org=org_id, id=conversation_id(conversation_key))


def load_agent_state(store: Store, org_id: str, conversation_key: str) -> dict[str, Any]:
    """The conversation's state as the prompt reads it (``{}``: none yet)."""
    doc = store.get(agent_state_path(org_id, conversation_key))
    return AgentState.model_validate(doc).context_view() if doc else {}


def own_steps(turn: Turn) -> list[StepRecord]:
    """The steps this utterance ran: a resumed loop carries the paused turn's, applied then."""
    return [*(s for s in turn.loop.steps if s.turn_id == turn.turn_id), turn.current_step(turn.loop.worker)]


def _approval(step: StepRecord, approval: dict[str, Any], pending_before: bool) -> CodeTransition | None:
    """The first step of an utterance that answered a pending confirmation (``None``: it did not)."""
    executed = step.arm == "state" and bool(step.results)
    if executed or approval.get("approved") is True:
        if not step.results:  # approved, then blocked or denied on the re-check: nothing ran
            return CodeTransition(Step.PLANNING, Status.ERROR, False, "approval.not_executed")
        ok = all(r.ok for r in step.results)
        return CodeTransition(
            Step.EXECUTION, Status.SUCCESS if ok else Status.ERROR, False, "approval.granted"
        )
    if approval.get("reminder"):
        return CodeTransition(None, Status.REQUIRES_USER_INPUT, None, "approval.pending")
    if approval.get("expired_approval_id"):
        return CodeTransition(Step.PLANNING, Status.IN_PROGRESS, False, "approval.expired")
    if approval.get("approved") is False:
        return CodeTransition(Step.PLANNING, Status.IN_PROGRESS, False, "approval.denied")
    if pending_before and step.arm in ("llm", "legacy"):  # an urgent message cancelled the pending action
        return CodeTransition(Step.PLANNING, Status.IN_PROGRESS, False, "approval.cancelled")
    return None


def code_transition(
    step: StepRecord,
    *,
    reply_kind: str | None = None,
    approval: dict[str, Any] | None = None,
    pending_before: bool = False,
) -> CodeTransition:
    """What the charter decided on ``step``. ``reply_kind`` only for the step the reply answers;
    ``approval``/``pending_before`` only for an utterance's first step (``turn.proposal.approval``
    and whether a confirmation was pending when it arrived)."""
    g, a = step.guardian, step.authorization
    if step.proposal is None:
        return CodeTransition(None, Status.ERROR, None, "proposal.invalid")
    if g is not None and g.action == "confirm" and reply_kind == "confirm":
        return CodeTransition(Step.AWAITING_APPROVAL, Status.REQUIRES_USER_INPUT, True, "confirm.asked")
    if approval is not None and (answered := _approval(step, approval, pending_before)) is not None:
        return answered
    if g is not None and g.blocked:
        return CodeTransition(None, Status.ERROR, None, "gate.blocked")
    if a is not None and a.result == "denied":
        return CodeTransition(None, Status.ERROR, None, "gate.denied")
    if step.results:
        if all(r.ok for r in step.results):
            return CodeTransition(Step.EXECUTION, Status.SUCCESS, None, "tool.executed")
        return CodeTransition(Step.PLANNING, Status.ERROR, None, "tool.failed")
    if isinstance(step.proposal.root, ClarificationProposal):
        return CodeTransition(None, Status.REQUIRES_USER_INPUT, None, "clarification")
    return CodeTransition()


def turn_plan(turn: Turn) -> list[tuple[StateUpdate | None, CodeTransition]]:
    """Per step of the utterance, in order: the LLM's proposed update and the code's transition."""
    steps = own_steps(turn)
    plan = []
    for i, step in enumerate(steps):
        first, last = i == 0, i == len(steps) - 1
        code = code_transition(
            step,
            reply_kind=turn.response.kind if last else None,
            approval=(turn.proposal.approval or {}) if first else None,
            pending_before=first and bool(turn.context.pending_action),
        )
        # a step of the "state" arm re-runs a stored action: its update was applied when proposed
        fresh = step.proposal is not None and step.arm != "state"
        update = step.proposal.root.state_update if fresh and step.proposal is not None else None
        plan.append((update, code))
    return plan


def _section(stored: dict[str, Any], outcome: dict[str, Any], *, applied: bool) -> AgentSection:
    return AgentSection(
        state=AgentState.model_validate(stored).context_view(),
        transition=[Transition.model_validate(t) for t in outcome.get("transition") or []],
        refused=[Transition.model_validate(t) for t in outcome.get("refused") or []],
        applied=applied,
    )


def record_turn(store: Store, turn: Turn, *, now: datetime, retention: timedelta) -> AgentSection:
    """Apply the finished ``turn`` to its conversation's state, once; the turn's agent section
    (an after step of the responder: a dry run never gets here)."""
    part = record_part(turn, now=now, retention=retention)
    if part is None:
        return AgentSection(state=dict(turn.context.agent_state))
    return store.run_transaction(part)


def record_part(
    turn: Turn, *, now: datetime, retention: timedelta
) -> Callable[[Transaction], AgentSection] | None:
    """``record_turn``'s transaction, for a commit that carries others too; ``None`` when the
    turn proposed and decided nothing (the state read by the context stands, no round trip)."""
    target = agent_state_path(turn.org_id, turn.conversation_key)
    plan = turn_plan(turn)
    if all(update is None and code == CodeTransition() for update, code in plan):
        return None

    def _txn(txn: Transaction) -> AgentSection:
        doc = txn.get(target) or {}
        done = [str(u) for u in doc.get("applied_utterances") or []]
        if turn.turn_id in done:  # a redelivery: nothing twice
            last = doc.get("last_outcome") or {}
            return _section(doc, last if last.get("utterance_id") == turn.turn_id else {}, applied=False)
        state, outcome = _run(AgentState.model_validate(doc), plan, turn.turn_id)
        dumped = state.model_dump(mode="json")
        masked = Sanitizer.default().mask_stored({k: dumped[k] for k in _TEXTS})
        txn.set(
            target,
            {
                **dumped,
                **masked,
                "org_id": turn.org_id,
                "user_id": turn.user_id,
                "room_id": turn.room_id,
                "applied_utterances": [*done, turn.turn_id][-APPLIED_KEPT:],
                "last_outcome": {"utterance_id": turn.turn_id, **outcome},
                "updated_at": now,
                "expires_at": now + retention,
            },
        )
        return _section({**dumped, **masked}, outcome, applied=True)

    return _txn


def _run(
    state: AgentState, plan: list[tuple[StateUpdate | None, CodeTransition]], utterance_id: str
) -> tuple[AgentState, dict[str, Any]]:
    taken: list[Transition] = []
    refused: list[Transition] = []
    for update, code in plan:
        state, out = apply(state, update, utterance_id=utterance_id, code_transition=code)
        taken += [out.transition] if out.transition else []
        refused += out.refused
    return state, {
        "transition": [t.model_dump(mode="json") for t in taken],
        "refused": [t.model_dump(mode="json") for t in refused],
    }
