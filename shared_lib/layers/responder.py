"""Responder layer: composes the reply, updates session state, sends exactly once.

Fixed templates (persona catalogue) answer confirm / block / deny / errors; tool results
are phrased by a second LLM call in the persona (response integration) when the LLM arm
served the turn, else by a fixed template. The send receipt makes a redelivered
responder never send twice; the channel gets the same idempotency key on a retry.

A smoke turn (synthetic, run by the candidate revisions before a promotion) that its channel
has nowhere to send (the plain-HTTP channel without a reply URL, as in a cloud environment)
completes unsent rather than being retried into the dead-letter topic: everything up to the
send ran, and the smoke test reads the record.

Whatever composed it, a reply is ``Sanitizer.present``-ed before it is sent: placeholders of
the user's own message become their values again, any other one becomes words — a user
never reads ``[PHONE_1]``, and values of other turns or other people are never restored
(an answer to a pending action restores nothing: its placeholders are the earlier turn's).
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from shared_lib import collections, loop
from shared_lib.brain import constitution, integration
from shared_lib.brain.persona_prompt import context_for
from shared_lib.delivery.idempotency import Claims, ClaimState
from shared_lib.errors import BrainError
from shared_lib.features.agent_state.store import record_turn
from shared_lib.features.approvals import steps as confirmation
from shared_lib.features.jobs import state as agent_jobs
from shared_lib.features.jobs import steps as job_turns
from shared_lib.features.persona_learning.store import apply_turn
from shared_lib.layers.base import Layer, Outcome, lateness
from shared_lib.layers.context import append_history
from shared_lib.observability.logs import log_event
from shared_lib.persona.ext import PersonaSection
from shared_lib.ports import OutboundReply
from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.routing import announcement_line
from shared_lib.turn.envelope import Turn
from shared_lib.turn.proposal import ClarificationProposal, TextResponseProposal

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


def _compose(turn: Turn, rt: Runtime) -> tuple[str, str]:
    """(kind, text) of the reply; never text from an exception."""
    persona, p = rt.persona, turn.proposal.proposal
    if p is None:
        return "error", persona.message("parse_error")
    g, a = turn.guardian, turn.authorization
    if g is not None and g.blocked:
        if g.reason_code.startswith("constitution."):  # §4.7.1: what was stopped and what comes next
            return "block", constitution.reply_for(persona, g.reason_code)
        if g.reason_code.startswith("confidence"):
            return "block", persona.message("too_low_confidence")
        return "block", persona.message("block", reason=g.message)
    if a is not None and a.result == "denied":
        key = "access_control_error" if a.reason_code == "directory.unavailable" else "deny"
        return "deny", persona.message(key)
    root = p.root
    if isinstance(root, TextResponseProposal):
        return "reply", root.text_response
    if isinstance(root, ClarificationProposal):
        options = "\n".join(f"{i}. {o}" for i, o in enumerate(root.options, 1))
        return "clarify", persona.message("clarify", question=root.clarification_question) + (
            f"\n{options}" if options else ""
        )
    if g is not None and g.action == "confirm":  # a job asks nobody: its turn ends (job_turns)
        return "confirm", "" if turn.job else confirmation.ask_confirmation(turn, rt, root)
    if started := job_turns.started_reply(turn, rt):
        return "reply", started
    return "reply", integration.integrate(turn, rt)


# Longer than any redelivery of the turn (its layer claims live three days).
SEND_RECEIPT_TTL = timedelta(days=30)
# What a channel answers when it has no destination for a reply (not a failure of the send).
NO_DESTINATION = frozenset({"no_reply_url", "callback_not_allowed"})


def _send_once(turn: Turn, rt: Runtime, text: str) -> None:
    """Claim a send receipt, send, mark it sent; a redelivery after 'sent' never sends again."""
    key = f"{turn.turn_id}-{turn.step}"
    path = collections.path("send_receipts", org=turn.org_id, id=key)
    receipts = Claims(rt.store, ttl=SEND_RECEIPT_TTL, in_progress="sending", completed="sent")
    # No lease: a delivery that finds 'sending' sends again, under the same idempotency key.
    claim = receipts.claim(path, now=rt.clock(), lease=timedelta(0), fields={"at": rt.clock()})
    res = turn.response
    if claim.state is ClaimState.COMPLETED:
        res.sent, res.duplicate_send, res.send_receipt = True, True, key
        return
    channel = rt.channels.get(turn.channel)
    if channel is None:
        turn.add_error(
            BrainError.of("send_error", f"no channel adapter for {turn.channel}", layer="responder")
        )
        return
    reply = OutboundReply(
        channel=turn.channel,
        org_id=turn.org_id,
        room_id=turn.room_id,
        thread_id=turn.inbound.thread_id,
        user_id=turn.user_id,
        reply_handle=turn.inbound.reply_handle,
        text=text,
        idempotency_key=key,
    )
    result = channel.send(reply)
    if not result.ok and turn.smoke and result.error in NO_DESTINATION:
        receipts.release(path)
        log_event("smoke_reply_not_sent", turn=turn, layer="responder", reason=result.error)
        return
    if not result.ok:
        turn.add_error(
            BrainError.of("send_error", result.error or f"status {result.status}", layer="responder")
        )
        raise RuntimeError(f"send failed: {result.error or result.status}")  # redeliver, then dead-letter
    receipts.complete(
        path, now=rt.clock(), fields={"at": rt.clock(), "provider_message_id": result.provider_message_id}
    )
    res.sent, res.send_receipt = True, key


# A job's loop runs within its own deadline (``ends_at``, the watchdog), not a person's turn budget.
JOB_MAX_MILLIS = agent_jobs.load_limits().max_seconds * 1000
# What the user reads when the loop stopped before the work was done (persona catalogue).
_STOP_NOTES = {"max_loops": "loop_stop_max_loops", "max_millis": "loop_stop_max_millis"}


def _loop(turn: Turn, rt: Runtime) -> Outcome | None:
    """The loop controller (seed 002 §3): another step goes back to the brain; else the stop is
    recorded and the reply is composed from every step."""
    s = rt.settings
    limits = loop.LoopLimits(max_loops=s.max_steps, max_millis=int(s.max_turn_seconds * 1000))
    if turn.job is not None:  # a delegated job: its own budget, the watchdog at every step
        limits = loop.LoopLimits(max_loops=turn.job.max_steps, max_millis=JOB_MAX_MILLIS)
    llm = rt.llm is not None and not turn.flags.kill_switch and not turn.route.local_only
    now = rt.clock() + lateness(turn, rt)
    decision = loop.decide(turn, limits, now, can_continue=llm and turn.flags.arm == "llm")
    if turn.job is not None and not turn.shadow:
        decision = job_turns.boundary(turn, rt, decision)
    if decision.action == "continue":
        loop.take_step(
            turn, decision, rt.clock(), step_seconds=s.turn_budget_seconds, max_millis=limits.max_millis
        )
        log_event("loop.continue", turn=turn, layer="responder", next_step=turn.step, reason=decision.reason)
        return Outcome("continue", reason_code=f"loop.{decision.reason}", next_topic="contextualized")
    loop.stop(turn, decision)
    if turn.loop.steps or decision.reason != "done":
        log_event(
            "loop.stop",
            turn=turn,
            layer="responder",
            stop_reason=decision.reason,
            steps=len(turn.loop.steps) + 1,
        )
    return None


def _stop_note(turn: Turn, rt: Runtime, text: str) -> str:
    """A loop that stopped with work left says so, and asks what the step needed to know."""
    reason, detail = turn.loop.stop_reason or "", turn.loop.stop_detail
    lines = [text]
    key = _STOP_NOTES.get(reason)
    if key and rt.persona.has(key):
        lines.append(rt.persona.message(key, steps=len(turn.loop.steps) + 1))
    if reason == "need_user_confirmation" and not detail.startswith(("confirm:", "clarification")):
        # the model's questions (the controller's checked hand-over); never its internal next actions
        if asks := (turn.loop.worker.questions_for_user if turn.loop.worker else []):
            lines.append(
                rt.persona.message("loop_stop_questions", questions="\n".join(f"・{q}" for q in asks))
            )
        else:
            lines.append(rt.persona.message("loop_stop_ask"))
    return "\n".join(x for x in lines if x)


def run(turn: Turn, rt: Runtime) -> Outcome:
    if (continued := _loop(turn, rt)) is not None:
        return continued
    kind, text = _compose(turn, rt)
    text = _stop_note(turn, rt, text)
    if line := announcement_line(turn.route, arm=turn.proposal.arm, kind=kind):  # a route change (seed 003)
        text = f"{line}\n{text}"
    if turn.budget.backlogged and not _not_started(turn):  # it waited in a backlog: the reply owns up to it
        text = f"{rt.persona.message('backlog_late')}\n{text}"
    # An answer to a pending action shows placeholders of an earlier message: none is this one's.
    own = "" if turn.proposal.arm == "state" else turn.inbound.text
    text = Sanitizer.default().present(text, own=own, language=turn.inbound.language)
    res = turn.response
    if turn.job is not None and not turn.shadow:  # a job reports into its parent's room, once
        kind, text = job_turns.conclude(turn, rt, kind, text)
        res.kind, res.text = kind, text  # type: ignore[assignment]
        job = agent_jobs.get(rt.store, turn.org_id, turn.job.job_id) or {}
        res.sent = job_turns.report_once(rt, job, text) if job else False
        append_history(rt, turn, "assistant", text, "out")
        return Outcome("sent", reason_code=f"job.{job.get('status', 'unknown')}", detail=f"{len(text)} chars")
    res.kind, res.text = kind, text  # type: ignore[assignment]
    if turn.shadow:  # a dry run teaches nothing: its proposals are recorded refused (shadow)
        turn.persona = _persona(turn, rt)
        return Outcome("dry_run", reason_code=kind, detail=turn.persona.note(), next_topic=None)
    confirmation.after_reply(turn, rt)
    _send_once(turn, rt, text)
    append_history(rt, turn, "assistant", text, "out")
    # seed 004: the conversation's agent state after this utterance, applied once (never for a shadow)
    turn.agent = record_turn(rt.store, turn, now=rt.clock(), retention=rt.settings.retention(turn.org_id))
    # seed 001 §16: what the LLM proposed to teach the organisation's persona, judged and applied once
    turn.persona = _persona(turn, rt)
    bon = res.best_of_n  # Best-of-N phrased it: the trail says so (brain.best_of_n)
    notes = (
        f"{len(text)} chars",
        f"best-of-n N={bon.get('n')} chosen={bon.get('chosen')}" if bon else "",
        turn.persona.note(),
    )
    return Outcome("sent", reason_code=kind, detail=" ".join(x for x in notes if x))


def _not_started(turn: Turn) -> bool:
    """The brain answered that it could not start (its reply already says the turn was not done)."""
    return any(e.code == "turn_backlog" for e in turn.errors)


def _persona(turn: Turn, rt: Runtime) -> PersonaSection:
    section = apply_turn(rt.store, turn, rt.persona.core(), now=rt.clock())
    section.context = context_for(turn, rt.registry)
    return section


LAYER = Layer("responder", "completed", run)
