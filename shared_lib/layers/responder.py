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

import unicodedata
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING

from shared_lib import collections, loop
from shared_lib.brain import constitution, integration
from shared_lib.delivery.idempotency import Claims, ClaimState
from shared_lib.errors import BrainError
from shared_lib.layers.base import Layer, Outcome, lateness
from shared_lib.layers.context import append_history
from shared_lib.observability.logs import log_event
from shared_lib.ports import OutboundReply
from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.routing import Route, announcement_line, delegate
from shared_lib.state import turn_end
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
        return "reply", _without_protocol(turn, rt, root.text_response)
    if isinstance(root, ClarificationProposal):
        options = "\n".join(f"{i}. {o}" for i, o in enumerate(root.options, 1))
        return "clarify", persona.message("clarify", question=root.clarification_question) + (
            f"\n{options}" if options else ""
        )
    if g is not None and g.action == "confirm":  # the question is asked by the approvals step
        return "confirm", ""
    return "reply", ""  # the results, phrased by the step ``phrase`` (unless a step said it already)


def _without_protocol(turn: Turn, rt: Runtime, text: str) -> str:
    """A reply on a channel fixed to CHAT never shows the DELEGATE protocol's lines (seed 002
    §2.6): a delegation the controller did not take leaves what the model said around it, or,
    when nothing is left, the catalogue's word on why the work was not taken."""
    if not turn.route.forced:
        return text
    kept = delegate.without_protocol(text)
    if kept:
        return kept
    found = delegate.read(text).delegation
    if found is not None and found.route is Route.CODE and turn.route.local_only:
        return rt.persona.message("route.code_local_only")
    return rt.persona.message("route.delegation_not_taken")


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


def next_step(turn: Turn, rt: Runtime) -> Outcome | None:
    """An answer step, the loop controller (seed 002 §3): another step goes back to the brain."""
    s = rt.settings
    return take_or_stop(
        turn, rt, loop.LoopLimits(max_loops=s.max_steps, max_millis=int(s.max_turn_seconds * 1000))
    )


def take_or_stop(
    turn: Turn,
    rt: Runtime,
    limits: loop.LoopLimits,
    boundary: Callable[[Turn, Runtime, loop.LoopDecision], loop.LoopDecision] | None = None,
) -> Outcome | None:
    """Decide after a step (``boundary`` may amend the decision): take the next step (the
    turn goes back to the brain), else record the stop and let the reply be composed."""
    s = rt.settings
    llm = rt.llm is not None and not turn.flags.kill_switch and not turn.route.local_only
    now = rt.clock() + lateness(turn, rt)
    decision = loop.decide(turn, limits, now, can_continue=llm and turn.brain_arm == "llm")
    if boundary is not None:
        decision = boundary(turn, rt, decision)
    if decision.reroute_refused:
        log_event("loop.reroute_refused", turn=turn, layer="responder", refused=decision.reroute_refused)
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


# What the user reads when the loop stopped before the work was done (persona catalogue).
_STOP_NOTES = {"max_loops": "loop_stop_max_loops", "max_millis": "loop_stop_max_millis"}


def _stop_note(turn: Turn, rt: Runtime, text: str) -> str:
    """A loop that stopped with work left says so, and asks what the step needed to know."""
    reason, detail = turn.loop.stop_reason or "", turn.loop.stop_detail
    lines = [text]
    key = _STOP_NOTES.get(reason)
    if key and rt.persona.has(key):
        lines.append(rt.persona.message(key, steps=len(turn.loop.steps) + 1))
    if reason == "need_user_confirmation" and not detail.startswith(("confirm:", "clarification")):
        # the model's questions (the controller's checked hand-over); never its internal next actions;
        # a question the reply already asks in its own words is not asked twice
        asks = turn.loop.worker.questions_for_user if turn.loop.worker else []
        if new := [q for q in dict.fromkeys(q.strip() for q in asks) if q and not _says(text, q)]:
            lines.append(
                rt.persona.message("loop_stop_questions", questions="\n".join(f"・{q}" for q in new))
            )
        elif not asks:
            lines.append(rt.persona.message("loop_stop_ask"))
    return "\n".join(x for x in lines if x)


def _folded(text: str) -> str:
    """The text as compared for sameness: NFKC, letters and digits only (no spaces, punctuation
    or emoji), so 「どのタスクから？🐺」 and 「どのタスクから?」 are the same."""
    return "".join(ch for ch in unicodedata.normalize("NFKC", text) if ch.isalnum())


def _says(text: str, question: str) -> bool:
    """Whether ``text`` already holds ``question`` (compared folded)."""
    q = _folded(question)
    return bool(q) and q in _folded(text)


def run(turn: Turn, rt: Runtime) -> Outcome:
    """The responder stage (``rt.stages["responder"]``): the loop's answer steps, ``core`` (the
    reply composed), the steps that amend it (the confirmation question, a job's report) and
    the effects after it (send once, the session, history, agent state). The session, the
    reply's history and the agent state are one commit at the stage's end (``state.turn_end``):
    after the send, before the turn is published on."""
    with turn_end.opened(rt.store):
        return rt.stages["responder"].run(turn, rt)


def core(turn: Turn, rt: Runtime) -> Outcome:
    """The reply: composed, with the loop's stop note, a route change and a late start said."""
    kind, text = _compose(turn, rt)
    turn.response.kind, turn.response.text = kind, text  # type: ignore[assignment]
    return Outcome("sent", reason_code=kind)


def finish_text(turn: Turn, rt: Runtime, outcome: Outcome) -> Outcome:
    """An amend step, after those that wrote the reply: the loop's stop note, a route change,
    a late start owned up to, and ``Sanitizer.present`` (no placeholder reaches a user)."""
    res = turn.response
    text = _stop_note(turn, rt, res.text)
    if line := announcement_line(
        turn.route, arm=turn.proposal.arm, kind=res.kind
    ):  # a route change (seed 003)
        text = f"{line}\n{text}"
    if turn.budget.backlogged and not _not_started(turn):  # it waited in a backlog: the reply owns up to it
        text = f"{rt.persona.message('backlog_late')}\n{text}"
    # An answer to a pending action shows placeholders of an earlier message: none is this one's.
    own = "" if turn.proposal.arm == "state" else turn.inbound.text
    res.text = Sanitizer.default().present(text, own=own, language=turn.inbound.language)
    bon = res.best_of_n  # Best-of-N phrased it: the trail says so (features.best_of_n)
    notes = (
        f"{len(res.text)} chars",
        f"best-of-n N={bon.get('n')} chosen={bon.get('chosen')}" if bon else "",
    )
    return Outcome(outcome.outcome, reason_code=res.kind, detail=" ".join(x for x in notes if x))


def phrase(turn: Turn, rt: Runtime, outcome: Outcome) -> Outcome:
    """An amend step: the tool results phrased in the persona (response integration), unless
    a step before it wrote the reply."""
    res = turn.response
    if res.kind == "reply" and not res.text:
        res.text = integration.integrate(turn, rt)
    return outcome


def send(turn: Turn, rt: Runtime, outcome: Outcome) -> None:
    """An after step: the reply sent once (the send receipt)."""
    _send_once(turn, rt, turn.response.text)


def remember_reply(turn: Turn, rt: Runtime, outcome: Outcome) -> None:
    """An after step: the reply appended to the conversation's history (in the end commit)."""
    append_history(rt, turn, "assistant", turn.response.text, "out", store=turn_end.deferring(rt.store))


def _not_started(turn: Turn) -> bool:
    """The brain answered that it could not start (its reply already says the turn was not done)."""
    return any(e.code == "turn_backlog" for e in turn.errors)


LAYER = Layer("responder", "completed", run)
