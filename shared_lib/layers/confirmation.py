"""Confirmation flow (seed 000 §5.1.5–5.1.7, seed 004 §8, seed 002 §6): ask, answer, expire.

Three entry points, called by layers owned elsewhere:

* ``handle_pending_answer(turn, rt)`` — brain layer. While a confirmation is pending, the
  answer is handled by state, not by the LLM (§5.1.7): an approval re-proposes the
  stored action with the approval the guardian re-checks; a denial cancels; an urgent
  message cancels and returns ``False`` so the brain proposes for it normally; anything
  else gets the reminder. Only the proposing user can answer, and an answer naming
  another approval id is refused. An answer to an expired confirmation is told so.
* ``ask_confirmation(turn, rt, root)`` — responder. Never asks unless the Authorization
  Gate allowed the action; stores the pending action (approval id, proposing user,
  parameters hash, policy version, the reasons shown) and returns the five-point gate.
* ``after_reply(turn, rt)`` — responder. Clears a pending action that was answered and
  records the turn in the session (error recovery, last intent, last tool).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from shared_lib.envelope import StepRecord, Turn
from shared_lib.ids import new_short_id
from shared_lib.policy.effective import Policy
from shared_lib.policy.guardian import proposal_hash
from shared_lib.policy.teachings import valid_teachings
from shared_lib.proposal import Proposal, ToolCallProposal
from shared_lib.sanitizer import Sanitizer
from shared_lib.state import gate, session
from shared_lib.state.answers import is_urgent, read_answer

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime

REMINDER_QUOTE_CHARS = 20


def _fixed_text(text: str, why: str) -> Proposal:
    return Proposal.model_validate(
        {
            "output_type": "text_response",
            "reasoning": {
                "intent_understanding": why,
                "no_tool_reason": "確認フローの固定応答で答える状況のため",
            },
            "confidence": {"overall": 1.0},
            "text_response": text,
        }
    )


def _reply(turn: Turn, text: str, why: str, approval: dict[str, Any]) -> bool:
    turn.proposal.arm = "state"
    turn.proposal.proposal = _fixed_text(text, why)
    turn.proposal.approval = approval
    return True


def handle_pending_answer(turn: Turn, rt: Runtime) -> bool:
    """Seed 000 §5.1.7; ``True`` when state answered (the brain must not ask the LLM)."""
    if turn.step > 0:  # a later step of the same turn: the answer was handled at step 0
        return False
    cfg = rt.policy.confirmation
    pending, text = turn.context.pending_action, turn.inbound.text
    answer = read_answer(text, cfg)
    if not pending:
        expired = turn.context.session.get("expired_approval_id")
        if turn.context.session.get("pending_expired") and answer.kind != "other":
            return _reply(
                turn,
                rt.persona.message("pending_expired", approval_id=expired or ""),
                "確認待ちの操作は期限切れのため実行しない",
                {"expired_approval_id": expired},
            )
        return False
    approval_id = str(pending.get("approval_id"))
    persona = rt.persona
    if pending.get("user_id") != turn.user_id:
        if answer.kind == "other":
            return False
        return _reply(
            turn,
            persona.message("approval_foreign"),
            "確認を依頼した本人以外は承認できない",
            {"approval_id": approval_id, "reminder": True, "foreign": True, "by": turn.user_id},
        )
    if answer.kind != "other" and answer.approval_id and answer.approval_id != approval_id:
        return _reply(
            turn,
            persona.message("approval_stale", given=answer.approval_id, approval_id=approval_id),
            "別の確認IDへの回答は受け付けない",
            {"approval_id": approval_id, "reminder": True, "stale": answer.approval_id},
        )
    if answer.kind == "approve":
        return _approve(turn, rt, pending)
    if answer.kind == "deny":
        return _reply(
            turn,
            persona.message("cancelled"),
            "確認待ちの操作をユーザーが取り消した",
            {"approval_id": approval_id, "approved": False, "by": turn.user_id},
        )
    if is_urgent(text, cfg):
        session.resolve_pending(
            rt.store,
            turn.org_id,
            turn.conversation_key,
            approval_id,
            rt.clock(),
            outcome="cancelled_urgent",
            config=cfg,
        )
        return False
    quote = text if len(text) <= REMINDER_QUOTE_CHARS else text[:REMINDER_QUOTE_CHARS] + "…"
    return _reply(
        turn,
        persona.message(
            "pending_reminder_gate",
            summary=pending.get("summary", ""),
            new_message=quote,
            approval_id=approval_id,
        ),
        "確認待ちの操作があるため、まず回答を求める",
        {"approval_id": approval_id, "reminder": True},
    )


def _approve(turn: Turn, rt: Runtime, pending: dict[str, Any]) -> bool:
    approval_id = str(pending.get("approval_id"))
    try:
        proposal = Proposal.model_validate(pending.get("proposal"))
    except ValidationError:  # an unreadable stored action never runs
        session.resolve_pending(
            rt.store, turn.org_id, turn.conversation_key, approval_id, rt.clock(), outcome="unreadable"
        )
        return _reply(
            turn,
            rt.persona.message("pending_expired", approval_id=approval_id),
            "確認待ちの操作を読み取れないため実行しない",
            {"expired_approval_id": approval_id},
        )
    turn.proposal.arm = "state"
    turn.proposal.proposal = proposal
    _resume(turn, pending)
    turn.proposal.approval = {
        "approval_id": approval_id,
        "approved": True,
        "by": turn.user_id,
        "proposer": pending.get("user_id"),
        "params_hash": pending.get("params_hash"),
        "policy_version": pending.get("policy_version"),
        "reasons": list(pending.get("reasons") or []),
        "concerns": list(pending.get("concerns") or []),
        "double": bool(pending.get("double")),
        "confirmations": int(pending.get("confirmations_received") or 0) + 1,
    }
    return True


def _confirmation_type(code: str) -> str:
    kinds = {
        "danger": "danger",
        "confidence": "ambiguous",
        "teaching": "teaching",
        "date": "date",
        "consistency": "ambiguous",
        "approval": "changed",
    }
    prefix = code.split(".", 1)[0]
    if code.startswith("params.amount"):
        return "high_value"
    return kinds.get(prefix, "high_impact" if prefix == "params" else "requested")


def ask_confirmation(turn: Turn, rt: Runtime, root: ToolCallProposal) -> str:
    """The gate message; stores the pending action. Never asks what the user may not do."""
    g, auth = turn.guardian, turn.authorization
    if auth is None or auth.result != "allowed":
        return rt.persona.message(
            "access_control_error" if auth and auth.reason_code == "directory.unavailable" else "deny"
        )
    if g is None or g.action != "confirm" or turn.proposal.proposal is None:
        raise ValueError("ask_confirmation needs a proposal with a confirm verdict")
    cfg = rt.policy
    policy = Policy.build(cfg, rt.registry, valid_teachings(turn.context.teachings))
    now, key = rt.clock(), turn.conversation_key
    today = now.astimezone(cfg.zone).date()
    stage_id = g.details.get("approval_id")
    if (
        g.details.get("stage") == 2
        and stage_id
        and (
            turn.shadow
            or session.advance_pending(
                rt.store, turn.org_id, key, str(stage_id), now, confirmations=1, config=cfg.confirmation
            )
        )
    ):
        return gate.compose(rt.persona, g, root, policy, approval_id=str(stage_id), stage=2, today=today)
    approval_id = new_short_id("ap")
    covers = [str(c) for c in g.details.get("covers") or [g.reason_code]]
    reasons = list(dict.fromkeys([*(str(s) for s in g.details.get("satisfied") or []), *covers]))
    if not turn.shadow:
        stored = _at_rest(turn, root, gate.summary(root, rt.registry, today=today))
        session.set_pending(
            rt.store,
            turn.org_id,
            key,
            {
                "approval_id": approval_id,
                "user_id": turn.user_id,
                "room_id": turn.room_id,
                "turn_id": turn.turn_id,
                **stored,
                "tool_name": root.tool_calls[0].tool_name,
                "params_hash": proposal_hash(Proposal.model_validate(stored["proposal"])),
                "policy_version": g.details.get("policy_version") or policy.version,
                "reasons": reasons,
                "reason_code": g.reason_code,
                "concerns": [str(c) for c in g.details.get("concerns") or [g.message]],
                "double": g.double_confirmation,
                "confirmations_required": 2 if g.double_confirmation else 1,
                "confirmations_received": 0,
                "confirmation_type": _confirmation_type(g.reason_code),
                "confidence": root.confidence.overall,
                **_paused_loop(turn),
            },
            now,
            config=cfg.confirmation,
        )
    return gate.compose(rt.persona, g, root, policy, approval_id=approval_id, today=today)


def _at_rest(turn: Turn, root: ToolCallProposal, summary: str) -> dict[str, Any]:
    """The pending action as the session stores it, masked. The action itself keeps numbered
    placeholders of the user's own message, whose values this turn's vault keeps (both arms)
    so the executor restores them on approval; identifiers stay as they are. The texts that
    are only shown (a reminder, the next turn's context) keep unnumbered ones."""
    s = Sanitizer.default()
    assert turn.proposal.proposal is not None
    action = {
        "proposal": turn.proposal.proposal.model_dump(mode="json"),
        "parameters": dict(root.tool_calls[0].parameters),
    }
    shown = {
        "summary": summary,
        "question": summary,
        "original_message": turn.inbound.text[:1000],
        "original_reasoning": root.reasoning_text()[:1000],
    }
    masked: dict[str, Any] = {
        **s.mask_obj(action, s.mask(turn.inbound.text)[1], keep_identifiers=True),
        **s.mask_stored(shown),
    }
    return masked


def _paused_loop(turn: Turn) -> dict[str, Any]:
    """A confirmation asked at a later step pauses the loop: its earlier steps, masked, wait in
    the pending action, and 「はい」 resumes the loop at this step (``_resume``)."""
    if not turn.loop.steps:
        return {}
    kept = turn.loop.model_dump(mode="json", include={"steps", "reroute_used"})
    return {"loop": Sanitizer.default().mask_stored(kept)}


def _resume(turn: Turn, pending: dict[str, Any]) -> None:
    stored = pending.get("loop")
    if not isinstance(stored, dict):
        return
    try:
        steps = [StepRecord.model_validate(s) for s in stored.get("steps") or []]
    except ValidationError:  # the approved action still runs, as a first step
        return
    turn.loop.steps, turn.loop.reroute_used = steps, bool(stored.get("reroute_used"))
    turn.loop.resumed_from = str(pending.get("turn_id") or "") or None
    turn.loop.request = str(pending.get("original_message") or "")


def after_reply(turn: Turn, rt: Runtime) -> None:
    """Close an answered confirmation and record the turn in the session."""
    if turn.shadow:
        return
    cfg = rt.policy.confirmation
    approval = turn.proposal.approval or {}
    approval_id, kind, now = approval.get("approval_id"), turn.response.kind, rt.clock()
    if approval_id and not approval.get("reminder") and not (approval.get("approved") and kind == "confirm"):
        # the answer was final (executed, blocked, denied or cancelled): the pending action is consumed
        outcome = "approved" if approval.get("approved") else "denied"
        session.resolve_pending(
            rt.store, turn.org_id, turn.conversation_key, str(approval_id), now, outcome=outcome, config=cfg
        )
    if kind == "confirm":
        return  # ask_confirmation wrote the session
    p = turn.proposal.proposal
    failed = [r for r in turn.execution.results if not r.ok]
    error = "parse_error" if kind == "error" else (failed[0].error_code if failed else None)
    session.finish_turn(
        rt.store,
        turn.org_id,
        turn.conversation_key,
        now,
        error_code=error,
        config=cfg,
        last_intent=p.output_type if p else None,
        last_tool_called=p.tool_calls[0].tool_name if p and p.tool_calls else None,
        last_route=turn.route.route,  # the next input's route is announced when it differs
    )
