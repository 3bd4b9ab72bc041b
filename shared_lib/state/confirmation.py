"""Confirmation flow (seed 000 §5.1.5–5.1.7, seed 004 §8): asking, answering, expiry.

Called by the brain layer (an answer to a pending confirmation is handled by state, not
by the LLM) and by the responder (asking for confirmation, updating the session).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from shared_lib.envelope import Turn
from shared_lib.ids import new_short_id
from shared_lib.proposal import Proposal, ToolCallProposal
from shared_lib.state import session
from shared_lib.state.session import parse_answer

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


def _fixed_text(text: str, why: str) -> Proposal:
    return Proposal.model_validate({
        "output_type": "text_response",
        "reasoning": {"intent_understanding": why, "no_tool_reason": "確認フローの固定応答のため"},
        "confidence": {"overall": 1.0}, "text_response": text})


def handle_pending_answer(turn: Turn, rt: Runtime) -> bool:
    """Seed 000 §5.1.7: an answer to a pending confirmation is handled by state, not the LLM."""
    pending = turn.context.pending_action
    if not pending:
        return False
    answer = parse_answer(turn.inbound.text)
    sec = turn.proposal
    sec.arm = "state"
    if answer == "approve":
        sec.approval = {"approval_id": pending["approval_id"], "approved": True,
                        "by": turn.user_id, "params_hash": pending.get("params_hash")}
        sec.proposal = Proposal.model_validate(pending["proposal"])
        return True
    if answer == "deny":
        sec.approval = {"approval_id": pending["approval_id"], "approved": False, "by": turn.user_id}
        sec.proposal = _fixed_text(rt.persona.message("cancelled"), "確認待ちの操作をユーザーが取り消した")
        return True
    sec.proposal = _fixed_text(rt.persona.message("pending_reminder", question=pending.get("question", "")),
                         "確認待ちの操作があるため、まず回答を求める")
    sec.approval = {"approval_id": pending["approval_id"], "reminder": True}
    return True


def ask_confirmation(turn: Turn, rt: Runtime, root: ToolCallProposal) -> str:
    assert turn.guardian is not None
    approval_id = new_short_id("ap")
    call = root.tool_calls[0]
    question = root.confirmation_question or f"{turn.guardian.message}\n操作: {call.tool_name} {json.dumps(call.parameters, ensure_ascii=False)}"
    if not turn.shadow:
        session.set_pending(rt.store, turn.org_id, turn.conversation_key, {
            "approval_id": approval_id, "user_id": turn.user_id, "question": question,
            "proposal": turn.proposal.proposal.model_dump(mode="json") if turn.proposal.proposal else None,
            "params_hash": session.params_hash(call.tool_name, call.parameters),
            "reason_code": turn.guardian.reason_code, "turn_id": turn.turn_id}, rt.clock())
    key = "confirm_double" if turn.guardian.double_confirmation else "confirm"
    return rt.persona.message(key, question=question, approval_id=approval_id)


def after_reply(turn: Turn, rt: Runtime) -> None:
    approval = turn.proposal.approval or {}
    now = rt.clock()
    if approval.get("approval_id") and not approval.get("reminder"):
        session.resolve_pending(rt.store, turn.org_id, turn.conversation_key, approval["approval_id"], now)
    if turn.response.kind != "confirm":
        p = turn.proposal.proposal
        session.touch(rt.store, turn.org_id, turn.conversation_key, now,
                      last_intent=p.output_type if p else None,
                      last_tool_called=p.tool_calls[0].tool_name if p and p.tool_calls else None)


