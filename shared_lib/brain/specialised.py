"""The Specialised prompt of a proposal call (seed 004 §3.3), chosen by code (issue 17).

Seed 004 §10 lets the model pick its prompt pattern; here the CODE chooses, from what the
charter already knows about the turn, so the choice is reproducible and testable and costs
no call. ``choose_specialised(turn)`` is pure; the first row that holds wins:

==  =========================================================================  ================
#   the turn                                                                  specialised
==  =========================================================================  ================
1   a confirmation is pending: ``turn.context.pending_action``, or the agent  ``confirm_gate``
    state's ``pending_gate``
2   a later step (``turn.step > 0``) after a completed step: the last of      ``summarise``
    ``turn.loop.steps`` ran its tools and every one succeeded
3   the agent state waits for the user: ``open_questions`` not empty, or      ``clarify``
    ``status`` ``REQUIRES_USER_INPUT``
4   the route is ``PLAN``, or the agent state's ``step`` is ``PLANNING``       ``plan``
5   anything else (an empty agent state included)                             none
==  =========================================================================  ================

The texts are the persona's data (``[prompts]`` in its TOML, Japanese, short); a persona
without the chosen text gets no block. The block is cached on its own, after the route's
(``brain.prompt``), so turns that choose the same one share the prefix up to it.
"""

from __future__ import annotations

from typing import Any, Literal

from shared_lib.brain.tool_defs import CACHE
from shared_lib.persona.catalogue import Persona
from shared_lib.turn.envelope import Turn

Specialised = Literal["clarify", "plan", "confirm_gate", "summarise"]
NAMES: tuple[Specialised, ...] = ("clarify", "plan", "confirm_gate", "summarise")


def choose_specialised(turn: Turn) -> Specialised | None:
    """The specialised prompt of this call by the table above (``None``: Base and Main only)."""
    state = turn.context.agent_state or {}
    if turn.context.pending_action or state.get("pending_gate"):
        return "confirm_gate"
    if turn.step > 0 and _last_step_completed(turn):
        return "summarise"
    if _items(state.get("open_questions")) or _word(state.get("status")) == "REQUIRES_USER_INPUT":
        return "clarify"
    if turn.route.route == "PLAN" or _word(state.get("step")) == "PLANNING":
        return "plan"
    return None


def specialised_blocks(persona: Persona, name: Specialised | None) -> list[dict[str, Any]]:
    """The cached system block of ``name`` (none when nothing is chosen or the persona lacks it)."""
    text = persona.specialised(name) if name else ""
    return [{"type": "text", "text": text, "cache_control": dict(CACHE)}] if text else []


def _last_step_completed(turn: Turn) -> bool:
    if not turn.loop.steps:
        return False
    results = turn.loop.steps[-1].results
    return bool(results) and all(r.ok for r in results)


def _items(value: Any) -> list[Any]:
    if isinstance(value, str):
        return [value] if value.strip() else []
    return [v for v in value if str(v).strip()] if isinstance(value, list | tuple) else []


def _word(value: Any) -> str:
    return str(value or "").strip().upper()
