"""The conversation's agent state (seed 004 §4–§6): the fixed five, the step machine, pure.

``AgentState`` keeps the fixed five of seed 004 §5 (``goal``, ``why_now``, ``constraints``,
``plan_brief``, ``open_questions``), the decision log, the last delta, ``pending_gate`` and
``context_refs``, and ``step`` and ``status`` as two separate fields (§4.3). Limits are
enforced by cutting, never by refusing: a text over its limit is folded to one line and cut to
the limit ending in 「…」, a list keeps its first items (the decision log its last ones), so a
model that wrote a little too much costs no retry and the state never breaks its shape.

The step moves only along the allowed-transition table (``config/agent_state.json``, validated
at load: an unknown step is refused). The LLM moves it at most once per utterance (one user
message, one ``turn_id``), and never after a move in the same utterance; the code's own
transitions say what the charter did at each step of the utterance, so a multi-step turn
follows them as a chain, one per step and each along the table (step 1 ran a search, step 2
asks for approval: PLANNING → EXECUTION → AWAITING_APPROVAL)::

    PLANNING ──► EXECUTION ──► REVIEW ──► DONE ──► PLANNING (ours: a new goal)
       │  └──────► REVIEW        │ ▲          error transitions (the step ends in ERROR):
       └──► AWAITING_APPROVAL ◄──┴─┘            EXECUTION ──► PLANNING, REVIEW ──► PLANNING
            └──► EXECUTION (approved) / PLANNING (denied)

``apply`` takes what the charter decided this step (``CodeTransition``) and what the LLM
proposed (``StateUpdate``). The code's transition wins; the LLM's is taken only when the code
decided none, no transition was taken in the utterance yet and the table allows it. A
transition refused (not in the table, the LLM's second one in the same utterance, or the LLM's
against the code's decision) is recorded with its reason and the state keeps its step. Status is not a transition: it changes freely, the code's word over
the LLM's. ``pending_gate`` is the code's alone.

>>> s, out = apply(AgentState(), None, utterance_id="t1", code_transition=CodeTransition(Step.EXECUTION))
>>> (s.step.value, out.transition.by if out.transition else None)
('EXECUTION', 'code')
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from shared_lib.errors import ConfigError
from shared_lib.turn.agent_record import Status, Step, Transition
from shared_lib.turn.proposal import StateUpdate

TABLE_FILE = Path(__file__).resolve().parents[2] / "config" / "agent_state.json"
ONE_LINE = 200  # goal, why_now, last_delta (seed 004 §5.1)
ITEM = 100  # each constraint, plan move, open question, decision (seed 004 §5.1)
CAPS = {"constraints": 2, "plan_brief": 3, "open_questions": 2, "context_refs": 10}
DECISION_LOG_MAX = 10  # the newest decisions are kept (seed 004 §6.4: histories are bounded)
FIVE = ("goal", "why_now", "constraints", "plan_brief", "open_questions")
# what the context layer hands the prompt (``turn.context.agent_state``)
CONTEXT_KEYS = (*FIVE, "step", "status", "decision_log", "last_delta", "pending_gate")


def clip(text: Any, limit: int) -> str:
    """One line of at most ``limit`` characters; a longer one ends in 「…」."""
    line = " ".join(str(text or "").split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _items(values: Any, cap: int, *, newest: bool = False) -> list[str]:
    items = [clip(v, ITEM) for v in values or [] if str(v or "").strip()]
    return items[-cap:] if newest else items[:cap]


class AgentState(BaseModel):
    """One conversation's agent state; every field within its seed 004 §5 limit."""

    model_config = ConfigDict(extra="ignore")  # a stored document carries bookkeeping fields

    goal: str = ""
    why_now: str = ""
    constraints: list[str] = Field(default_factory=list)
    plan_brief: list[str] = Field(default_factory=list)
    open_questions: list[str] = Field(default_factory=list)
    step: Step = Step.PLANNING
    status: Status = Status.IN_PROGRESS
    decision_log: list[str] = Field(default_factory=list)
    last_delta: str = ""
    pending_gate: bool = False
    context_refs: list[str] = Field(default_factory=list)
    transition_utterance: str | None = None  # the utterance that took the last transition

    @field_validator("goal", "why_now", "last_delta", mode="before")
    @classmethod
    def _one_line(cls, value: Any) -> str:
        return clip(value, ONE_LINE)

    @field_validator("constraints", "plan_brief", "open_questions", "context_refs", mode="before")
    @classmethod
    def _capped(cls, value: Any, info: ValidationInfo) -> list[str]:
        return _items(value, CAPS[str(info.field_name)])

    @field_validator("decision_log", mode="before")
    @classmethod
    def _log(cls, value: Any) -> list[str]:
        return _items(value, DECISION_LOG_MAX, newest=True)

    def context_view(self) -> dict[str, Any]:
        """The state as the context layer hands it to the prompt (``turn.context.agent_state``)."""
        return self.model_dump(mode="json", include=set(CONTEXT_KEYS))


@dataclass(frozen=True)
class TransitionTable:
    initial: Step
    allowed: dict[Step, frozenset[Step]]
    errors: dict[Step, Step]

    def allows(self, source: Step, target: Step, *, error: bool) -> bool:
        """Seed 004 §6.2; an error transition only when the step ends in ERROR."""
        if target in self.allowed.get(source, frozenset()):
            return True
        return error and self.errors.get(source) == target

    def pairs(self, *, error: bool) -> set[tuple[Step, Step]]:
        found = {(a, b) for a, targets in self.allowed.items() for b in targets}
        return found | ({(a, b) for a, b in self.errors.items()} if error else set())


def _step(value: Any, where: str) -> Step:
    try:
        return Step(value)
    except ValueError:
        raise ConfigError(f"agent state table: unknown step {value!r} in {where}") from None


def parse_table(raw: dict[str, Any]) -> TransitionTable:
    """The table from its JSON object; an unknown step or a step to itself is a ``ConfigError``."""
    try:
        moves = dict(raw["transitions"])
        errors = dict(raw.get("error_transitions") or {})
        initial = _step(raw.get("initial", Step.PLANNING.value), "initial")
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"agent state table: {exc}") from exc
    allowed: dict[Step, frozenset[Step]] = {}
    for source, targets in moves.items():
        a = _step(source, "transitions")
        allowed[a] = frozenset(_step(t, f"transitions.{source}") for t in targets)
    error_moves = {
        _step(a, "error_transitions"): _step(b, f"error_transitions.{a}") for a, b in errors.items()
    }
    if any(a in targets for a, targets in allowed.items()) or any(a == b for a, b in error_moves.items()):
        raise ConfigError("agent state table: a step cannot transition to itself")
    return TransitionTable(initial=initial, allowed=allowed, errors=error_moves)


@lru_cache(maxsize=4)
def load_table(path: Path = TABLE_FILE) -> TransitionTable:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"agent state table {path}: {exc}") from exc
    return parse_table(raw)


@dataclass(frozen=True)
class CodeTransition:
    """What the charter decided on one step: a target step (``None``: none), the status it sets,
    the pending gate (``None``: unchanged) and the cause (``confirm.asked``, ``tool.executed``…)."""

    to: Step | None = None
    status: Status | None = None
    pending_gate: bool | None = None
    cause: str = ""


@dataclass
class ApplyOutcome:
    transition: Transition | None = None
    refused: list[Transition] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)


def _refuse(out: ApplyOutcome, source: Step, target: Step, by: Literal["code", "llm"], why: str) -> None:
    out.refused.append(Transition(from_step=source, to_step=target, by=by, reason=why))


def apply(
    state: AgentState,
    update: StateUpdate | None,
    *,
    utterance_id: str,
    code_transition: CodeTransition | None,
    table: TransitionTable | None = None,
) -> tuple[AgentState, ApplyOutcome]:
    """The state after one step of utterance ``utterance_id`` (``state`` is not changed)."""
    table = table or load_table()
    code = code_transition or CodeTransition()
    out = ApplyOutcome()
    fields = state.model_dump()
    if update is not None:
        for name in FIVE:
            if (value := getattr(update, name)) is not None:
                fields[name] = value
        if update.decision and update.decision.strip():
            fields["decision_log"] = [*state.decision_log, update.decision]
    status = code.status or (update.status if update is not None else None) or state.status
    fields["status"] = status
    if code.pending_gate is not None:
        fields["pending_gate"] = code.pending_gate
    current, error = state.step, status is Status.ERROR
    taken_before = state.transition_utterance == utterance_id
    if code.to is not None and code.to is not current:
        # the code's move of an earlier step of this utterance does not hold this one back: each
        # says what the charter did at its step (a later step's approval asked after a search)
        if not table.allows(current, code.to, error=error):
            _refuse(out, current, code.to, "code", "not_in_table")
        else:
            out.transition = Transition(from_step=current, to_step=code.to, by="code", reason=code.cause)
    proposed = update.step if update is not None else None
    landed = out.transition.to_step if out.transition else current
    if proposed is not None and proposed not in (current, landed):  # staying put is no transition
        if taken_before or out.transition is not None:
            _refuse(out, current, proposed, "llm", "second_transition")
        elif code.to is not None:
            _refuse(out, current, proposed, "llm", "code_decided")
        elif not table.allows(current, proposed, error=error):
            _refuse(out, current, proposed, "llm", "not_in_table")
        else:
            out.transition = Transition(from_step=current, to_step=proposed, by="llm")
    if out.transition is not None:
        fields["step"], fields["transition_utterance"] = out.transition.to_step, utterance_id
    new = AgentState.model_validate(fields)
    out.changed = [
        n for n in (*FIVE, "decision_log", "status", "pending_gate") if getattr(new, n) != getattr(state, n)
    ]
    if out.transition is not None or out.changed:
        new.last_delta = clip(_delta(out), ONE_LINE)
    return new, out


def _delta(out: ApplyOutcome) -> str:
    """Seed 004 §5.4 ``last_delta``: one line saying what changed (seed example:
    「ステップをPLANNINGからEXECUTIONに変更」)."""
    parts = []
    if t := out.transition:
        parts.append(f"ステップを{t.from_step.value}から{t.to_step.value}に変更（{t.by}）")
    if out.changed:
        parts.append("更新: " + ", ".join(out.changed))
    return " / ".join(parts)
