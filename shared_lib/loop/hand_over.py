"""The step's hand-over as the model writes it (seed 002 §3.4, §4.4, §5): strictly typed.

The ``loop`` block of a proposal is the model's hand-over to the loop controller. Its types
are JSON's own: ``needs_next_loop``, ``fit`` and ``propose_next_loop`` are ``true`` or
``false``, never 「yes」, ``"true"`` or ``1``; ``risk`` is one of three words; the lists hold
at most three strings. A block of any other shape is invalid LLM output: the brain's
validation refuses the proposal (the one retry with this guidance, then the clarification),
so nothing of it is executed, and the controller, should one reach it, ends the loop with
``worker_failure``.

>>> hand_over_problem({"needs_next_loop": "yes"})
"loop.needs_next_loop: must be true or false (a JSON boolean), got 'yes'"
>>> hand_over_problem({"needs_next_loop": False, "questions_for_user": ["どちらの会議室？"]}) is None
True
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

BOOLEANS = frozenset({"needs_next_loop", "fit", "propose_next_loop"})
MAX_ITEMS = 3  # seed 002 §5: next_actions and questions_for_user hold at most three


class HandOver(BaseModel):
    """The ``loop`` block: the seed's worker output (§4.4) and the conversation model's
    re-route proposal (§3.4); ``result`` and ``confidence`` are the controller's to fill."""

    model_config = ConfigDict(extra="forbid", strict=True)

    needs_next_loop: bool = False
    why: str = ""
    next_actions: list[str] = Field(default_factory=list, max_length=MAX_ITEMS)
    questions_for_user: list[str] = Field(default_factory=list, max_length=MAX_ITEMS)
    risk: Literal["low", "medium", "high"] = "low"
    fit: bool | None = None
    suggested_route: str | None = None
    result: str = ""
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    propose_next_loop: bool = False
    route: str | None = None
    reason: str = ""


def hand_over_problem(raw: Any) -> str | None:
    """Why ``raw`` is not a valid hand-over (guidance naming the field, never echoing more
    than a short value), or ``None`` when it is."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        return f"loop: must be a JSON object, got {type(raw).__name__}"
    try:
        HandOver.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first.get("loc", ()))
        name = where.split(".", 1)[0]
        if name in BOOLEANS and first.get("type") == "bool_type":
            return f"loop.{name}: must be true or false (a JSON boolean), got {_short(raw.get(name))}"
        return f"loop.{where}: {first.get('msg', 'invalid')}"[:200]
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 20 else text[:19] + "…"
