"""Confirmation flow (seed 000 §5.1.5–5.1.7, seed 004 §8, seed 002 §6): ask, answer, expire.

Three entry points, called by layers owned elsewhere:

* ``handle_pending_answer(turn, rt)`` — brain layer. While a confirmation is pending, the
  answer is handled by state, not by the LLM (§5.1.7): an approval re-proposes the
  stored action with the approval the guardian re-checks; a denial cancels; an urgent
  message cancels every waiting action and returns ``False`` so the brain proposes for it
  normally; the first other message gets the reminder, a further one is a new intent (the
  brain handles it; the job waits on, and a new confirmation adds a second job). Which job
  an answer decides and who may give it: ``approval_answers``. Jobs past their deadline are
  written expired; an answer to an expired confirmation is told so.
* ``ask_confirmation(turn, rt, root)`` — responder. Never asks unless the Authorization
  Gate allowed the action; creates the approval job (seed 002 §6.2, ``state.jobs``, recorded
  ``approval.requested``), stores the pending action under the job's id (proposing user,
  parameters hash, policy version, the reasons shown) and returns the five-point gate.
* ``after_reply(turn, rt)`` — responder. Clears a pending action that was answered and
  records the turn in the session (error recovery, last intent, last tool).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from shared_lib.brain.integration import refusal_text
from shared_lib.collections import session_path
from shared_lib.features.approvals import steps_answers as answers
from shared_lib.features.approvals import store as jobs
from shared_lib.features.approvals.steps_answers import reply
from shared_lib.features.auto_approve import store as auto_approve
from shared_lib.policy.effective import Policy
from shared_lib.policy.guardian import proposal_hash
from shared_lib.policy.teachings import valid_teachings
from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.state import gate, session, turn_end
from shared_lib.state.answers import is_urgent, read_answer
from shared_lib.tools.display import parameter_lines
from shared_lib.tools.registry import PrecheckReads, ToolInputError
from shared_lib.turn.envelope import Turn
from shared_lib.turn.proposal import Proposal, ToolCallProposal

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime

REMINDER_QUOTE_CHARS = 20


def handle_pending_answer(turn: Turn, rt: Runtime) -> bool:
    """Seed 000 §5.1.7; ``True`` when state answered (the brain must not ask the LLM)."""
    if turn.step > 0:  # a later step of the same turn: the answer was handled at step 0
        return False
    cfg, now = rt.policy.confirmation, rt.clock()
    pending, text = turn.context.pending_action, turn.inbound.text
    answer = read_answer(text, cfg)
    answers.expire_seen(turn, rt, now)
    rows = answers.waiting(turn)
    if (
        answer.kind != "other"
        and answer.approval_id
        and not (pending and pending.get("user_id") != turn.user_id)
    ):
        return answers.named(turn, rt, answer.kind, answer.approval_id, rows, now)
    if not pending:
        expired = turn.context.session.get("expired_approval_id")
        if turn.context.session.get("pending_expired") and answer.kind != "other":
            return reply(
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
        return reply(
            turn,
            persona.message("approval_foreign"),
            "確認を依頼した本人以外は承認できない",
            {"approval_id": approval_id, "reminder": True, "foreign": True, "by": turn.user_id},
        )
    if answer.kind != "deny" and answers.answer_question(
        turn, rt, pending, now, conversation_key=turn.conversation_key
    ):
        return True  # 「じゃあ金曜まで」 answering 「いつにするウル？」: the action with that date
    if answer.kind != "other":
        if len(rows) > 1:
            return answers.ask_which(turn, rt, rows)
        return answers.answer(turn, rt, pending, answer.kind, now, conversation_key=turn.conversation_key)
    if is_urgent(text, cfg):
        _cancel_all(turn, rt, rows)
        return False
    if pending.get("reminded"):  # reminded once already: this is a new intent, the job waits on
        return False
    quote = text if len(text) <= REMINDER_QUOTE_CHARS else text[:REMINDER_QUOTE_CHARS] + "…"
    return reply(
        turn,
        persona.message(
            "pending_reminder_gate",
            summary=pending.get("summary", ""),
            new_message=quote,
            approval_id=approval_id,
        ),
        "確認待ちの操作があるため、まず回答を求める",
        {"approval_id": approval_id, "reminder": True, "reminded": approval_id},
    )


def _cancel_all(turn: Turn, rt: Runtime, rows: list[dict[str, Any]]) -> None:
    """Seed 000 §5.1.7 Q3: an urgent message cancels what waits (the person's own jobs: denied)."""
    cfg, now = rt.policy.confirmation, rt.clock()
    for row in rows:
        approval_id = str(row.get("approval_id"))
        session.resolve_pending(
            rt.store,
            turn.org_id,
            turn.conversation_key,
            approval_id,
            now,
            outcome="cancelled_urgent",
            config=cfg,
        )
        if approval_id.startswith("J-"):
            job = jobs.decide(
                rt.store, turn.org_id, approval_id, "denied", now, approver=turn.user_id, turn_id=turn.turn_id
            )
            if job is not None:
                jobs.record_event(turn, job)


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


def refused_before_asking(rt: Runtime, root: ToolCallProposal, org_id: str) -> str | None:
    """The sentence refusing the first call whose parameters fail its tool's ``precheck``, or
    ``None``: every call may be asked about. Parameters the model wrote that do not validate are
    left to the handler, as before (the proposal was validated when it was made)."""
    for call in root.tool_calls:
        spec = rt.registry.get(call.tool_name)
        if spec is None or spec.precheck is None:
            continue
        try:
            params = spec.params.model_validate(rt.registry.canonical_parameters(spec.name, call.parameters))
        except ValidationError:
            continue
        try:
            spec.precheck(params, PrecheckReads(rt.store, org_id))
        except ToolInputError as exc:
            return refusal_text(rt.persona, rt.registry, spec.name, exc)
    return None


def ask_confirmation(turn: Turn, rt: Runtime, root: ToolCallProposal, *, write: bool = True) -> str:
    """The gate message; creates the job and stores the pending action (``write`` false: a dry
    run's question, composed the same and stored nowhere). Never asks what the user may not do."""
    g, auth = turn.guardian, turn.authorization
    if auth is None or auth.result != "allowed":
        return rt.persona.message(
            "access_control_error" if auth and auth.reason_code == "directory.unavailable" else "deny"
        )
    if g is None or g.action != "confirm" or turn.proposal.proposal is None:
        raise ValueError("ask_confirmation needs a proposal with a confirm verdict")
    cfg = rt.policy
    policy = Policy.build(cfg, rt.registry, valid_teachings(turn.context.teachings))
    now, answered = rt.clock(), turn.proposal.approval or {}
    key = str(answered.get("conversation_key") or turn.conversation_key)  # the requester's
    today = now.astimezone(cfg.zone).date()
    decide_by = now + timedelta(minutes=cfg.confirmation.pending_ttl_minutes)
    stage_id = g.details.get("approval_id")
    if (
        g.details.get("stage") == 2
        and stage_id
        and (
            not write
            or session.advance_pending(
                rt.store, turn.org_id, key, str(stage_id), now, confirmations=1, config=cfg.confirmation
            )
        )
    ):
        if write:  # the question is asked again: its job waits as long as the action
            jobs.extend(rt.store, turn.org_id, str(stage_id), decide_by, now)
        return gate.compose(rt.persona, g, root, policy, approval_id=str(stage_id), stage=2, today=today)
    job_id = jobs.job_id_for(turn.turn_id, turn.step)  # a redelivered responder names the same job
    covers = [str(c) for c in g.details.get("covers") or [g.reason_code]]
    reasons = list(dict.fromkeys([*(str(s) for s in g.details.get("satisfied") or []), *covers]))
    if write:
        summary = gate.summary(root, rt.registry, today=today)
        stored = _at_rest(turn, root, summary)
        replaces = answered.get("approval_id") if key == turn.conversation_key else None
        session.set_pending(
            rt.store,
            turn.org_id,
            turn.conversation_key,
            {
                "approval_id": job_id,
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
                "asks": g.details.get("asks"),  # the parameter a question asks for, if any
                "confidence": root.confidence.overall,
                **_paused_loop(turn),
            },
            now,
            replaces=str(replaces) if replaces else None,
            config=cfg.confirmation,
        )
        job = jobs.create(rt.store, _job(turn, rt, root, policy, job_id, summary, now, decide_by))
        jobs.record_event(turn, job)
    return gate.compose(rt.persona, g, root, policy, approval_id=job_id, today=today)


def _job(
    turn: Turn,
    rt: Runtime,
    root: ToolCallProposal,
    policy: Policy,
    job_id: str,
    summary: str,
    now: datetime,
    decide_by: datetime,
) -> dict[str, Any]:
    """Seed 002 §6.2–6.3: the job of this confirmation (``jobs.create`` masks what is shown)."""
    assert turn.guardian is not None
    reg = policy.registry
    targets = (
        [line for c in root.tool_calls for line in parameter_lines(reg, c.tool_name, c.parameters)]
        if reg
        else []
    )
    return {
        "job_id": job_id,
        "org_id": turn.org_id,
        "status": "pending",
        "requested_at": now,
        "decide_by": decide_by,
        "user_id": turn.user_id,
        "room_id": turn.room_id,
        "channel": turn.channel,  # the heartbeat's reminder goes back through it
        "conversation_key": turn.conversation_key,
        "turn_id": turn.turn_id,
        "step": turn.step,
        "tools": [c.tool_name for c in root.tool_calls],
        "targets": targets,
        "job_type": auto_approve.job_type(turn.route.route or "tool_call"),
        "summary": gate.short_summary(summary),
        "impact": gate.impact_lines(rt.persona, turn.guardian, root, policy),
        "reversible": gate.reversible(root, policy),
        "reason_code": turn.guardian.reason_code,
        "expires_at": now + rt.settings.retention(turn.org_id),
    }


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
    the pending action, and 「はい」 resumes the loop at this step (``approval_answers.resume``)."""
    if not turn.loop.steps:
        return {}
    kept = turn.loop.model_dump(mode="json", include={"steps", "reroute_used"})
    return {"loop": Sanitizer.default().mask_stored(kept)}


def after_reply(turn: Turn, rt: Runtime) -> None:
    """Close an answered confirmation and record the turn in the session (an after step: never
    on a dry run). The session's changes join the responder's end commit (``state.turn_end``)."""
    cfg = rt.policy.confirmation
    approval = turn.proposal.approval or {}
    approval_id, kind, now = approval.get("approval_id"), turn.response.kind, rt.clock()
    key = str(approval.get("conversation_key") or turn.conversation_key)  # the requester's
    sessions = {session_path(turn.org_id, k) for k in (key, turn.conversation_key)}
    store = turn_end.deferring(rt.store, reads=sorted(sessions))
    if approval.get("reminded"):  # seed 000 §5.1.7: reminded once; a further other message is new
        session.mark_reminded(store, turn.org_id, key, str(approval["reminded"]), now, config=cfg)
    if approval_id and not approval.get("reminder") and not (approval.get("approved") and kind == "confirm"):
        # the answer was final (executed, blocked, denied or cancelled): the pending action is consumed
        outcome = approval.get("outcome") or ("approved" if approval.get("approved") else "denied")
        session.resolve_pending(store, turn.org_id, key, str(approval_id), now, outcome=outcome, config=cfg)
    if kind == "confirm":
        return  # ask_confirmation wrote the session
    p = turn.proposal.proposal
    failed = [r for r in turn.execution.results if not r.ok]
    error = "parse_error" if kind == "error" else (failed[0].error_code if failed else None)
    session.finish_turn(
        store,
        turn.org_id,
        turn.conversation_key,
        now,
        error_code=error,
        config=cfg,
        last_intent=p.output_type if p else None,
        last_tool_called=p.tool_calls[0].tool_name if p and p.tool_calls else None,
        last_route=turn.route.route,  # the next input's route is announced when it differs
    )
