"""Which model serves a call (seed 000 §14): the flags' ``model`` by default, the flags'
``fast_model`` for simple turns (short, no tool keyword, nothing pending) and, as
``brain.json`` ``models`` says, for the integration and self-critique calls. A routed turn
(not CHAT) takes its route profile's model (``default``: ``model``, ``fast``: ``fast_model``),
never the simple-turn guess. The choice is recorded on the turn (``turn.proposal.model``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_lib.brain.config import BrainConfig
from shared_lib.brain.route_profile import profile
from shared_lib.flags import FlagsDocument
from shared_lib.routing import Route
from shared_lib.turn.envelope import Turn

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


def flags_document(rt: Runtime) -> FlagsDocument | None:
    try:
        return rt.flags.current()[0]
    except Exception:  # unreadable flags: settings' defaults
        return None


def main_model(turn: Turn, rt: Runtime) -> str:
    doc = flags_document(rt)
    return turn.flags.model or (doc.model if doc else rt.settings.model)


def fast_model(rt: Runtime) -> str:
    doc = flags_document(rt)
    return doc.fast_model if doc else rt.settings.fast_model


def tool_words(rt: Runtime, cfg: BrainConfig) -> set[str]:
    words = {k for spec in rt.registry.enabled() for k in spec.keywords}
    for intent in cfg.legacy.intents.values():
        words.update(intent.primary)
    return {w for w in words if w}


def is_simple(turn: Turn, rt: Runtime, cfg: BrainConfig) -> bool:
    text = turn.brain_text().strip()
    return (
        len(text) <= cfg.models.simple_max_chars
        and turn.step == 0
        and not turn.context.pending_action
        and not any(w in text for w in tool_words(rt, cfg))
    )


def proposal_model(turn: Turn, rt: Runtime, cfg: BrainConfig) -> tuple[str, str]:
    """(model, why) for the proposal call: the route's profile first (``route:ANALYZE``), then,
    on CHAT with the default model, the fast model for a simple turn."""
    route = turn.route.route
    if profile(turn).model == "fast":
        return fast_model(rt), f"route:{route}"
    if route != "CHAT" and route in Route.__members__:
        return main_model(turn, rt), f"route:{route}"
    if is_simple(turn, rt, cfg):
        return fast_model(rt), "simple"
    return main_model(turn, rt), "default"


def model_for(role: str, turn: Turn, rt: Runtime) -> str:
    """``same`` (the proposal's model, sharing its cache), ``fast`` or ``main``."""
    if role == "fast":
        return fast_model(rt)
    if role == "same" and turn.proposal.model:
        return turn.proposal.model
    return main_model(turn, rt)
