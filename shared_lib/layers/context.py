"""Context layer: flags for this person, then the Context Builder (seed 000 §6.1).

Sources are read independently; a failing source degrades the context
(``memory_access_error``, proceed without it) instead of failing the turn.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from shared_lib.envelope import Turn, UserInfo
from shared_lib.errors import BrainError
from shared_lib.layers.base import Layer, Outcome
from shared_lib.state.session import conversation_id, load_session
from shared_lib.tools.directory import get_person, list_people

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime

RECENT_MESSAGES = 10


def history_path(org_id: str, conversation_key: str) -> str:
    return f"orgs/{org_id}/conversations/{conversation_id(conversation_key)}/messages"


def append_history(rt: Runtime, turn: Turn, role: str, text: str, suffix: str) -> None:
    """Conversation memory: idempotent append (the id derives from the turn)."""
    rt.store.set(f"{history_path(turn.org_id, turn.conversation_key)}/{turn.turn_id}-{turn.step}-{suffix}",
                 {"role": role, "text": text, "at": rt.clock(), "user_id": turn.user_id})


def _sources(rt: Runtime, turn: Turn) -> dict[str, Callable[[], Any]]:
    org, now = turn.org_id, rt.clock()
    return {
        "user": lambda: get_person(rt.store, org, turn.user_id),
        "session": lambda: load_session(rt.store, org, turn.conversation_key, now),
        "recent_messages": lambda: [d for _, d in rt.store.query(
            history_path(org, turn.conversation_key), order_by="at", descending=True, limit=RECENT_MESSAGES)][::-1],
        "persons": lambda: [{"name": p.name, "department_id": p.department_id} for p in list_people(rt.store, org)],
    }


def render(turn: Turn) -> str:
    c = turn.context
    lines = []
    if c.user:
        lines.append(f"話している人: {c.user.name or c.user.user_id}")
    if c.session.get("mode") and c.session.get("mode") != "normal":
        lines.append(f"セッションモード: {c.session['mode']}")
    if c.persons:
        lines.append("社内の人: " + "、".join(p["name"] for p in c.persons[:50]))
    if c.recent_messages:
        lines.append("直近の会話:")
        lines += [f"- {m.get('role')}: {str(m.get('text', ''))[:200]}" for m in c.recent_messages]
    return "\n".join(lines)


def run(turn: Turn, rt: Runtime) -> Outcome:
    flags, flag_error = rt.flags.evaluate(turn.org_id, turn.user_id, rt.clock())
    turn.flags = flags
    if flag_error:
        turn.add_error(BrainError.of("memory_access_error", f"flags: {flag_error}", layer="context"))
    ctx = turn.context
    for name, read in _sources(rt, turn).items():
        try:
            value = read()
        except Exception as exc:
            ctx.degraded.append(name)
            turn.add_error(BrainError.of("memory_access_error", f"{name}: {exc}", layer="context", source=name))
            continue
        if name == "user" and value is not None:
            ctx.user = UserInfo(user_id=value.user_id, name=value.name, level=value.level,
                                department_id=value.department_id)
        elif name == "session":
            ctx.session = {k: v for k, v in value.items() if k != "pending_action"}
            ctx.pending_action = value.get("pending_action")
        elif name == "recent_messages":
            ctx.recent_messages = [{"role": m.get("role"), "text": m.get("text")} for m in value]
        elif name == "persons":
            ctx.persons = value
    ctx.rendered = render(turn)
    ctx.token_estimate = len(ctx.rendered) // 2
    if turn.step == 0 and not turn.shadow:
        append_history(rt, turn, "user", turn.inbound.text, "in")
    outcome = "degraded" if ctx.degraded else "ok"
    return Outcome(outcome, reason_code=f"flags.{flags.reason}", detail=f"arm={flags.arm}")


LAYER = Layer("context", "contextualized", run)
