"""The approvals' steps of the stages (``MANIFEST.steps``; the stage table orders them): an answer
to a pending confirmation, the question asked (stored, or composed only on a dry run), and the
session written after the reply. Cost: the question's writes (the pending action and its job)
and the after-reply session write; the dry-run twin writes nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_lib.features.approvals import steps as confirmation
from shared_lib.turn.decisions import Outcome
from shared_lib.turn.envelope import Turn
from shared_lib.turn.proposal import ToolCallProposal
from shared_lib.turn.stages import after, amend, answer

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


def pending_answer(turn: Turn, rt: Runtime) -> Outcome | None:
    """A message that answers a pending confirmation is answered from state (seed 000 §5.1.7)."""
    if not confirmation.handle_pending_answer(turn, rt):
        return None
    return Outcome("pending_answer", reason_code=f"approval.{'set' if turn.proposal.approval else 'none'}")


def ask(turn: Turn, rt: Runtime, outcome: Outcome, *, write: bool = True) -> Outcome:
    """A confirm verdict: the question, and the pending action written. Parameters their tool
    checks before asking (``ToolSpec.precheck``) and would refuse after 「はい」 are refused
    now instead, with the handler's own sentence, and nothing is stored: a question is never
    asked for an action that cannot run."""
    root = turn.proposal.proposal.root if turn.proposal.proposal else None
    if turn.response.kind == "confirm" and isinstance(root, ToolCallProposal):
        refused = confirmation.refused_before_asking(rt, root, turn.org_id)
        if refused is not None:
            turn.response.kind, turn.response.text = "clarify", refused
            return Outcome(outcome.outcome, reason_code="clarify", detail="precheck.refused")
        turn.response.text = confirmation.ask_confirmation(turn, rt, root, write=write)
    return outcome


def ask_dry(turn: Turn, rt: Runtime, outcome: Outcome) -> Outcome:
    """A dry run's question: composed as the served turn's would be, stored nowhere."""
    return ask(turn, rt, outcome, write=False)


def after_reply(turn: Turn, rt: Runtime, outcome: Outcome) -> None:
    confirmation.after_reply(turn, rt)


STEPS = (
    answer("approvals.pending_answer", pending_answer, effects=True),
    amend("approvals.ask", ask, on_job="never", effects=True),
    amend("approvals.ask_dry", ask_dry, on_job="never", shadow_only=True),
    after("approvals.after_reply", after_reply, on_job="never"),
)
