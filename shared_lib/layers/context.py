"""Context layer: flags for this person, then the Context Builder (seed 000 §6.1).

Before the core, the stage's answer steps (``shared_lib.wiring.stages``) may end it: a delegated
job's turn that is over, the debounce (seed 001 §7.3: a turn whose message a later one of the same
burst will carry ends there, ``absorbed``; the burst's last turn goes on with every text of the
burst, one per line), and the instant OFF of auto-approve is written first.

Flags are evaluated first (an unreadable flag document means the legacy arm). Sources
are read concurrently through ``shared_lib.context``; a failing source degrades the
context (``memory_access_error``, proceed without it) instead of failing the turn; the
built context is recorded on ``turn.context``. After the core, a person's words are appended
to the conversation history (conversation memory; the responder appends the reply).

Then the router (seed 003, ``shared_lib.routing``) decides the input's route with the
conversation's ``local_only`` (the session document's) and the channel (LINE starts in CHAT,
``line_forced_chat``) and records it on ``turn.route``. An
input neither a command nor a rule decides goes to the classifier, once, on the flags' fast
model, its usage counted on the turn; while local-only only when a local peer classifies, not for the
kill switch, the legacy arm, a shadow copy or a later step (nothing would use the route), nor
for a greeting the fast path answers, an answer to a pending confirmation or a turn whose
budget is spent. A classifier
that fails or answers out of shape leaves the route CHAT ``fallback`` with the reason
recorded (``classifier_error``); the turn goes on. ``/local`` and ``/cloud`` are kept for the conversation until the other is given (``set_local_only``,
idempotent; not with the session's TTL). A session source that failed or timed out is read once more directly; a session
the context cannot read at all counts as local-only: a ``/local`` that cannot be read must not
let a request reach the cloud (the legacy brain answers).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from shared_lib.adapters.scoped import scoped
from shared_lib.brain import fast_path
from shared_lib.brain.accounting import add_call_usage
from shared_lib.brain.config import load_brain_config
from shared_lib.brain.models import fast_model, flags_document
from shared_lib.context import ContextInput, record, summary_line
from shared_lib.context.builder import BuiltContext
from shared_lib.context.history import append_message, history_path
from shared_lib.context.record import window_tokens
from shared_lib.errors import BrainError
from shared_lib.layers.base import Layer, Outcome
from shared_lib.observability.logs import log_event
from shared_lib.peers.router import local_serving
from shared_lib.routing import Classify, decide, llm_classifier
from shared_lib.routing.commands import split_commands
from shared_lib.state.answers import read_answer
from shared_lib.state.local_only import write_local_only as set_local_only
from shared_lib.state.session import load_session
from shared_lib.turn.callctx import call_context, remaining
from shared_lib.turn.envelope import RouteSection, Turn

if TYPE_CHECKING:
    from shared_lib.ports import Store
    from shared_lib.runtime import Runtime

__all__ = ["LAYER", "append_history", "classifier", "history_path", "route", "run"]


def append_history(
    rt: Runtime, turn: Turn, role: str, text: str, suffix: str, *, store: Store | None = None
) -> None:
    """Conversation memory: idempotent append (the id derives from the turn), kept masked with
    its values sealed under the vault's key, for the organisation's retention (written through
    ``store``, ``rt.store`` unless given)."""
    now = rt.clock()
    append_message(
        scoped(store or rt.store, turn.org_id),
        turn.org_id,
        turn.conversation_key,
        f"{turn.turn_id}-{turn.step}-{suffix}",
        role=role,
        text=text,
        at=now,
        user_id=turn.user_id,
        room_id=turn.room_id,
        expires_at=now + rt.settings.retention(turn.org_id),
        cipher=rt.cipher(turn.org_id),
    )


def run(turn: Turn, rt: Runtime) -> Outcome:
    """The context stage (``rt.stages["context"]``: a job's start, the debounce, the instant
    OFF; then ``core``; then the person's words into the history)."""
    return rt.stages["context"].run(turn, rt)


def core(turn: Turn, rt: Runtime) -> Outcome:
    flags, flag_error = rt.flags.evaluate(turn.org_id, turn.user_id, rt.clock())
    turn.flags = flags
    if flag_error:
        turn.add_error(BrainError.of("memory_access_error", f"flags: {flag_error}", layer="context"))
    greeting, reads_as_answer = _answered_from_text(turn, rt)
    built = rt.context_builder.build(
        ContextInput(
            store=rt.store,
            tasks=rt.task_backend,
            org_id=turn.org_id,
            user_id=turn.user_id,
            room_id=turn.room_id,
            conversation_key=turn.conversation_key,
            text=turn.inbound.text,
            now=rt.clock(),
            user_name=turn.inbound.user_name,
            embedder=rt.embedder,
            greeting=greeting,
            reads_as_answer=reads_as_answer,
        ),
        # what the execution path needs is waited for within the turn's budget (a slow store, not a down one)
        required=load_brain_config().degraded.store_sources,
    )
    record(turn.context, built, user_id=turn.user_id, user_name=turn.inbound.user_name)
    limit = getattr(getattr(rt.context_builder, "config", None), "recent_messages", 0)
    turn.context.window_tokens = window_tokens(built, limit)  # the memory stage's compaction check
    turn.context.agent_state = dict(built.values.get("agent_state") or {})  # seed 004: read with the sources
    turn.context.persona_ext = dict(
        built.values.get("persona_ext") or {}
    )  # seed 001 §16: the org's extension
    failures = built.failures()
    for failure in failures:
        turn.add_error(
            BrainError.of(
                "memory_access_error",
                f"{failure.name}: {failure.error}",
                layer="context",
                source=failure.name,
                reason=failure.status,
            )
        )
    attempted = [r for r in built.records.values() if r.status != "skipped"]
    if failures and len(failures) == len(attempted):
        turn.add_error(BrainError.of("db_connection_error", "every context source failed", layer="context"))
    route(turn, rt, stored=_stored_local_only(turn, rt, built))
    r = turn.route
    outcome = "degraded" if built.degraded else "ok"
    d = turn.context.debounce
    batch = f" debounce={d['role']}:{len(d.get('turn_ids', ()))} waited_ms={d['waited_ms']}" if d else ""
    batch += f" window_ms={d['window_ms']}" if d.get("window_ms") else ""
    return Outcome(
        outcome,
        reason_code=f"flags.{flags.reason}",
        detail=f"arm={flags.arm} route={r.route}/{r.source} local_only={int(r.local_only)} "
        f"{summary_line(built)}{batch}",
    )


def _answered_from_text(turn: Turn, rt: Runtime) -> tuple[bool, bool]:
    """What the text alone says before any read: the fast path will answer it (a greeting,
    as the brain decides it: a person's first step, the flags document not switching the fast
    path off), and it reads as an answer to a confirmation. The sources recall nothing for a
    greeting, nor for an answer when the session waits on a confirmation
    (``context.sources.answered_without_recall``)."""
    if turn.step != 0:  # as the brain decides both: a later step is neither
        return False, False
    rest = split_commands(turn.inbound.text).rest
    text = rest if rest.strip() else turn.inbound.text
    doc = flags_document(rt)
    greeting = (doc is None or doc.fast_path) and fast_path.match(text, load_brain_config()) is not None
    return greeting, read_answer(text, rt.policy.confirmation).kind != "other"


def remember_words(turn: Turn, rt: Runtime, outcome: Outcome) -> None:
    """An after step (a person's turn, not a job's task): their words into the history, once."""
    if turn.step == 0:
        append_history(rt, turn, "user", turn.inbound.text, "in")


def _stored_local_only(turn: Turn, rt: Runtime, built: BuiltContext) -> bool:
    """The session's ``local_only`` before this input; ``True`` when the session source failed."""
    read = built.records.get("session")
    if read is None:  # a builder without the session source: read it here
        return bool(load_session(rt.store, turn.org_id, turn.conversation_key, rt.clock()).get("local_only"))
    if read.status != "ok":  # timed out or failed under the sources' deadline: read it once more
        try:
            return bool(
                load_session(rt.store, turn.org_id, turn.conversation_key, rt.clock()).get("local_only")
            )
        except Exception:  # unknown: a /local that cannot be read must not let a request reach the cloud
            return True
    return bool(turn.context.session.get("local_only"))


def classifier(turn: Turn, rt: Runtime) -> Classify | None:
    """The classifier over the runtime's LLM, or ``None`` when this turn must not pay for one."""
    if rt.llm is None or turn.step != 0 or turn.flags.kill_switch or turn.flags.arm != "llm":
        return None
    if turn.context.auto_off:  # the instant OFF (or ON) is answered from the catalogue
        return None
    if (left := remaining()) is not None and left <= 0:  # the turn's budget is spent: no call starts
        return None
    greeting, reads_as_answer = _answered_from_text(turn, rt)
    if greeting or (turn.context.pending_action and reads_as_answer):
        return None
    return llm_classifier(rt.llm, model=fast_model(rt), record=partial(add_call_usage, turn, rt.prices))


def route(turn: Turn, rt: Runtime, *, stored: bool) -> None:
    """The router's decision on the input (``stored``: the conversation was local-only before
    it), recorded on ``turn.route``; a ``/local`` or ``/cloud`` is kept in the session."""
    text = turn.inbound.text
    commands = split_commands(text)
    local = stored if commands.local_only is None else commands.local_only
    # a local-only input is classified only by a local peer (none: the router does not ask), its call
    # bound as local-only so the peer router refuses every cloud peer (fail closed)
    local_classifier = local and local_serving(rt.llm, "classification")[0] is not None
    turn.route.local_only = local
    with call_context(turn, "context"):
        decision = decide(
            text,
            local_only=stored,
            classify=classifier(turn, rt),
            local_classifier=local_classifier,
            channel=turn.channel,
        )
    said = decision.flags
    turn.route = RouteSection(
        route=decision.primary_route.value,
        source=decision.source,
        confidence=decision.confidence,
        reason=decision.reason,
        rule_id=decision.rule_id,
        local_only=decision.flags.local_only,
        refused=decision.flags.refused,
        forced=decision.flags.forced,
        guidance=decision.guidance,
        commands=list(decision.commands),
        text=commands.rest if commands.tokens else None,
        classifier_called=said.classifier_called,
        classifier_route=said.classifier_route.value if said.classifier_route else None,
        classifier_confidence=said.classifier_confidence,
        classifier_error=said.classifier_error,
        previous_route=last if isinstance(last := turn.context.session.get("last_route"), str) else None,
    )
    log_event(
        "router.decision",
        turn=turn,
        layer="context",
        initial_route=turn.route.route,
        source=turn.route.source,
        confidence=turn.route.confidence,
        local_only=turn.route.local_only,
        refused=turn.route.refused,
        forced=turn.route.forced,
        rule_id=turn.route.rule_id,
        classifier_route=turn.route.classifier_route,
        classifier_confidence=turn.route.classifier_confidence,
        classifier_error=turn.route.classifier_error,
    )
    if commands.local_only is not None:
        set_local_only(
            rt.store,
            turn.org_id,
            turn.conversation_key,
            commands.local_only,
            rt.clock(),
            turn_id=turn.turn_id,
            at=turn.created_at,
        )


LAYER = Layer("context", "contextualized", run)
