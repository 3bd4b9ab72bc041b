"""Context layer: flags for this person, then the Context Builder (seed 000 §6.1).

Flags are evaluated first (an unreadable flag document means the legacy arm). Sources
are read concurrently through ``shared_lib.context``; a failing source degrades the
context (``memory_access_error``, proceed without it) instead of failing the turn; the
built context is recorded on ``turn.context``. The inbound message is then appended to
the conversation history (conversation memory; the responder appends the reply).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_lib.context import ContextInput, record, summary_line
from shared_lib.context.history import append_message, history_path
from shared_lib.envelope import Turn
from shared_lib.errors import BrainError
from shared_lib.layers.base import Layer, Outcome
from shared_lib.tools.scoped import scoped

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime

__all__ = ["LAYER", "append_history", "history_path", "run"]


def append_history(rt: Runtime, turn: Turn, role: str, text: str, suffix: str) -> None:
    """Conversation memory: idempotent append (the id derives from the turn), kept masked
    for the organisation's retention."""
    now = rt.clock()
    append_message(
        scoped(rt.store, turn.org_id),
        turn.org_id,
        turn.conversation_key,
        f"{turn.turn_id}-{turn.step}-{suffix}",
        role=role,
        text=text,
        at=now,
        user_id=turn.user_id,
        room_id=turn.room_id,
        expires_at=now + rt.settings.retention(turn.org_id),
    )


def run(turn: Turn, rt: Runtime) -> Outcome:
    flags, flag_error = rt.flags.evaluate(turn.org_id, turn.user_id, rt.clock())
    turn.flags = flags
    if flag_error:
        turn.add_error(BrainError.of("memory_access_error", f"flags: {flag_error}", layer="context"))
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
        )
    )
    record(turn.context, built, user_id=turn.user_id, user_name=turn.inbound.user_name)
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
    if turn.step == 0 and not turn.shadow:
        append_history(rt, turn, "user", turn.inbound.text, "in")
    outcome = "degraded" if built.degraded else "ok"
    return Outcome(
        outcome, reason_code=f"flags.{flags.reason}", detail=f"arm={flags.arm} {summary_line(built)}"
    )


LAYER = Layer("context", "contextualized", run)
