"""Answers to approval jobs (seed 002 §6.2–6.4, §10.2; seed 000 §5.1.7): which job an answer
decides, who may give it, and what the turn records. Code decides; the LLM is never asked.

* a plain 「はい」/「いいえ」 decides the person's only waiting job; with two or more it asks which
  (each job id with its one-line summary) and decides nothing (``ask_which``);
* 「承認 J-…」, 「J-… はい」, 「却下 J-…」 decide exactly that job (``named``): the person's own,
  or — when the policy's ``approval.approver_min_level`` is set — someone else's in the same
  room, by a person of that level or higher in the same organisation (the directory's level the
  context layer read). The requester's stored action then runs in the approver's turn (the
  authorization gate checks the approver; the record names both) and the requester's waiting
  entry is resolved. Anyone else is refused and nothing changes;
* a job no longer pending (decided, expired, unknown) is said so, and nothing runs;
* a job found past its deadline (the session saw it expire, or it is named) is written
  ``expired`` and recorded ``approval.expired`` on the turn (``expire_seen``).

Granted and denied are written with ``jobs.decide`` in the answering turn, once: a redelivered
turn reads its own decision back, a second answer (another tap) finds the job decided.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from shared_lib.dates import read
from shared_lib.features.approvals import store as jobs
from shared_lib.policy.guardian import proposal_hash
from shared_lib.state import session
from shared_lib.turn.envelope import StepRecord, Turn
from shared_lib.turn.proposal import Proposal

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime

Kind = Literal["approve", "deny"]


def fixed_text(text: str, why: str) -> Proposal:
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


def reply(turn: Turn, text: str, why: str, approval: dict[str, Any]) -> bool:
    turn.proposal.arm = "state"
    turn.proposal.proposal = fixed_text(text, why)
    turn.proposal.approval = approval
    return True


def waiting(turn: Turn) -> list[dict[str, Any]]:
    """The person's own waiting actions, oldest first (id, summary, reminded), as the context read them."""
    listed = turn.context.session.get("pending_actions")
    rows = listed if isinstance(listed, list) else []
    if not rows and turn.context.pending_action:
        rows = [turn.context.pending_action]
    return [r for r in rows if isinstance(r, dict) and r.get("user_id") == turn.user_id]


def _is_job(approval_id: str) -> bool:
    return approval_id.startswith("J-")


def _expire(turn: Turn, rt: Runtime, job_id: str, now: datetime) -> bool:
    """Write a job past its deadline ``expired`` and record it; ``False`` if it was not (still
    pending in time, or decided). A turn redelivered records its own expiry again."""
    job = jobs.decide(rt.store, turn.org_id, job_id, "expired", now, turn_id=turn.turn_id)
    if job is None:
        return False
    jobs.record_event(turn, job)
    return True


def expire_seen(turn: Turn, rt: Runtime, now: datetime) -> None:
    """The jobs the session found past their deadline: written expired, recorded on this turn."""
    for job_id in turn.context.session.get("expired_approval_ids") or []:
        if _is_job(str(job_id)):
            current = jobs.get(rt.store, turn.org_id, str(job_id), now)
            if current is not None and current["status"] == "expired":
                _expire(turn, rt, str(job_id), now)


def _not_pending(
    turn: Turn, rt: Runtime, job_id: str, job: dict[str, Any] | None, now: datetime, **extra: Any
) -> bool:
    """The reply to an answer naming a job that waits no more; nothing runs. ``extra`` (the
    conversation's stale entry to drop) goes into the turn's approval."""
    persona = rt.persona
    if job is None:
        return reply(
            turn,
            persona.message("approval_unknown", given=job_id),
            "名指しされた確認は存在しない",
            {"named": job_id, "outcome": "unknown", **extra},
        )
    if job["status"] == "expired":
        _expire(turn, rt, job_id, now)
        return reply(
            turn,
            persona.message("pending_expired", approval_id=job_id),
            "名指しされた確認は期限切れのため実行しない",
            {"expired_approval_id": job_id, "named": job_id, "outcome": "expired", **extra},
        )
    return reply(
        turn,
        persona.message(
            "approval_decided", approval_id=job_id, status=persona.message(f"job_status_{job['status']}")
        ),
        "名指しされた確認はすでに決まっているため実行しない",
        {"named": job_id, "outcome": "already_decided", **extra},
    )


def ask_which(turn: Turn, rt: Runtime, rows: list[dict[str, Any]]) -> bool:
    """Two or more jobs wait: a plain answer decides none of them, the person is asked which."""
    persona = rt.persona
    lines = [
        persona.message(
            "approval_which_line",
            approval_id=r.get("approval_id"),
            summary=str(r.get("summary") or "").splitlines()[0] if r.get("summary") else "",
        )
        for r in rows
    ]
    ids = [str(r.get("approval_id")) for r in rows]
    return reply(
        turn,
        persona.message("approval_which", count=len(rows), jobs="\n".join(lines), example=ids[-1]),
        "確認待ちが複数あるため、どれへの回答かを尋ねる",
        {"which": ids, "reminder": True},
    )


def may_answer(turn: Turn, rt: Runtime, job: dict[str, Any]) -> bool:
    """The requester; or, when the policy names a level, a person of that level or higher in the
    same room (the organisation is the job's path). Never decided by what a message says."""
    if job.get("room_id") != turn.room_id:
        return False
    if job.get("user_id") == turn.user_id:
        return True
    least = rt.policy.approval.approver_min_level
    level = turn.context.user.level if turn.context.user else None
    return least is not None and level is not None and level >= least


def named(
    turn: Turn, rt: Runtime, kind: Kind, job_id: str, rows: list[dict[str, Any]], now: datetime
) -> bool:
    """An answer naming ``job_id`` (「承認 J-…」): decides exactly that job, or says why not."""
    if any(r.get("approval_id") == job_id for r in rows):
        return _answer_stored(turn, rt, kind, job_id, turn.conversation_key, now)
    job = jobs.get(rt.store, turn.org_id, job_id, now) if _is_job(job_id) else None
    if job is None and rows:  # an id of before, or a mistyped one, while the person's own job waits
        latest = str(rows[-1].get("approval_id"))
        return reply(
            turn,
            rt.persona.message("approval_stale", given=job_id, approval_id=latest),
            "別の確認IDへの回答は受け付けない",
            {"named": job_id, "stale": job_id},
        )
    if job is None or job["status"] != "pending":
        return _not_pending(turn, rt, job_id, job, now)
    if not may_answer(turn, rt, job):
        key = "approval_not_allowed" if rt.policy.approval.approver_min_level else "approval_foreign"
        return reply(
            turn,
            rt.persona.message(key),
            "この確認に答えられる人ではないため受け付けない",
            {"named": job_id, "foreign": True, "by": turn.user_id},
        )
    return _answer_stored(turn, rt, kind, job_id, str(job.get("conversation_key") or ""), now)


def _answer_stored(turn: Turn, rt: Runtime, kind: Kind, job_id: str, key: str, now: datetime) -> bool:
    latest = turn.context.pending_action or {}
    if key == turn.conversation_key and latest.get("approval_id") == job_id:
        pending: dict[str, Any] | None = latest
    else:  # an earlier job of this conversation, or the requester's conversation
        stored = session.load_session(rt.store, turn.org_id, key, now)
        pending = next((a for a in session.actions(stored) if a.get("approval_id") == job_id), None)
    if pending is None:  # the conversation holds the action no more: it cannot run
        if _is_job(job_id):
            jobs.decide(rt.store, turn.org_id, job_id, "expired", now, turn_id=turn.turn_id)
        return _not_pending(turn, rt, job_id, jobs.get(rt.store, turn.org_id, job_id, now), now)
    return answer(turn, rt, pending, kind, now, conversation_key=key)


def answer(
    turn: Turn, rt: Runtime, pending: dict[str, Any], kind: Kind, now: datetime, *, conversation_key: str
) -> bool:
    """Decide the job of ``pending`` (once its last confirmation is given) and answer the turn."""
    approval_id = str(pending.get("approval_id"))
    given = int(pending.get("confirmations_received") or 0) + 1
    final = kind == "deny" or given >= int(pending.get("confirmations_required") or 1)
    if _is_job(approval_id) and final:
        status: Literal["granted", "denied"] = "granted" if kind == "approve" else "denied"
        job = jobs.decide(
            rt.store, turn.org_id, approval_id, status, now, approver=turn.user_id, turn_id=turn.turn_id
        )
        if job is None:  # decided meanwhile, or past its deadline: the entry is dropped, nothing runs
            current = jobs.get(rt.store, turn.org_id, approval_id, now)
            return _not_pending(
                turn,
                rt,
                approval_id,
                current,
                now,
                approval_id=approval_id,
                conversation_key=conversation_key,
            )
        jobs.record_event(turn, job)
    if kind == "deny":
        return reply(
            turn,
            rt.persona.message("cancelled"),
            "確認待ちの操作をユーザーが取り消した",
            {
                "approval_id": approval_id,
                "approved": False,
                "by": turn.user_id,
                "proposer": pending.get("user_id"),
                "conversation_key": conversation_key,
            },
        )
    return approve(turn, rt, pending, conversation_key=conversation_key)


def approve(turn: Turn, rt: Runtime, pending: dict[str, Any], *, conversation_key: str) -> bool:
    """Re-propose the stored action with the approval the guardian re-checks."""
    approval_id = str(pending.get("approval_id"))
    try:
        proposal = Proposal.model_validate(pending.get("proposal"))
    except ValidationError:  # an unreadable stored action never runs
        session.resolve_pending(
            rt.store, turn.org_id, conversation_key, approval_id, rt.clock(), outcome="unreadable"
        )
        return reply(
            turn,
            rt.persona.message("pending_expired", approval_id=approval_id),
            "確認待ちの操作を読み取れないため実行しない",
            {"expired_approval_id": approval_id},
        )
    turn.proposal.arm = "state"
    turn.proposal.proposal = proposal
    resume(turn, pending)
    proposer = pending.get("user_id")
    turn.proposal.approval = {
        "approval_id": approval_id,
        "approved": True,
        "by": turn.user_id,
        "proposer": proposer,
        # a person of the policy's approver level answering someone else's job (``may_answer``)
        "approver_allowed": proposer != turn.user_id,
        "conversation_key": conversation_key,
        "pending_turn_id": pending.get("turn_id"),
        "params_hash": pending.get("params_hash"),
        "policy_version": pending.get("policy_version"),
        "reasons": list(pending.get("reasons") or []),
        "concerns": list(pending.get("concerns") or []),
        "double": bool(pending.get("double")),
        "confirmations": int(pending.get("confirmations_received") or 0) + 1,
        # what the person asked for, masked at rest: the request the approved action answers
        "request": str(pending.get("original_message") or ""),
    }
    return True


def answer_question(
    turn: Turn, rt: Runtime, pending: dict[str, Any], now: datetime, *, conversation_key: str
) -> bool:
    """An answer to a date question (「いつにするウル？」 → 「金曜まで」): the stored action with the
    date the answer says (the expression as the one reader finds it), judged afresh by the
    guardian — nothing else of the action counts as approved — under the job's id, so the
    executor restores the request's masked values. ``False`` when nothing is asked or the
    answer holds no date (then it is an ordinary other message)."""
    key = pending.get("asks")
    reading = read(turn.inbound.text, now.astimezone(rt.policy.zone)) if isinstance(key, str) else None
    if reading is None or reading.deadline is None or not isinstance(key, str):
        return False
    stored = pending.get("proposal")
    calls = stored.get("tool_calls") if isinstance(stored, dict) else None
    if (
        not isinstance(stored, dict)
        or not isinstance(calls, list)
        or not calls
        or not isinstance(calls[0], dict)
    ):
        return False
    first = {**calls[0], "parameters": {**(calls[0].get("parameters") or {}), key: reading.expression}}
    try:
        proposal = Proposal.model_validate({**stored, "tool_calls": [first, *calls[1:]]})
    except ValidationError:
        return False
    approval_id = str(pending.get("approval_id"))
    if _is_job(approval_id):
        job = jobs.decide(
            rt.store, turn.org_id, approval_id, "granted", now, approver=turn.user_id, turn_id=turn.turn_id
        )
        if job is not None:
            jobs.record_event(turn, job)
    turn.proposal.arm = "state"
    turn.proposal.proposal = proposal
    resume(turn, pending)
    turn.proposal.approval = {
        "approval_id": approval_id,
        "approved": True,
        "by": turn.user_id,
        "proposer": pending.get("user_id"),
        "approver_allowed": False,
        "conversation_key": conversation_key,
        "pending_turn_id": pending.get("turn_id"),
        "params_hash": proposal_hash(proposal),
        "policy_version": pending.get("policy_version"),
        "reasons": [],  # only the date was given: every other concern is asked again
        "concerns": [],
        "double": False,
        "confirmations": 1,
        "request": str(pending.get("original_message") or ""),
        "answered": key,
    }
    return True


def resume(turn: Turn, pending: dict[str, Any]) -> None:
    """A confirmation asked at a later step resumes the loop at that step with its earlier steps."""
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
