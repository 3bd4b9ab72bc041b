"""What the agent state did on a turn (seed 004 §4, §6): the vocabulary and the turn's section.

``Step`` (what the agent is doing) and ``Status`` (how it stands) are two separate fields of the
state, never one. A ``Transition`` is a change of step, taken by the code (what the charter
decided this turn) or by the LLM (its proposed ``state_update.step``); a refused one keeps its
reason. ``AgentSection`` is the turn's record of it, written by the responder: the state after
the turn, the transitions taken (the LLM's at most one per utterance, the code's one per step)
and the refused ones.

Part of the ``Turn`` envelope (``shared_lib.turn.envelope``); the rules live in ``shared_lib.features.agent_state.state``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Step(StrEnum):
    PLANNING = "PLANNING"
    EXECUTION = "EXECUTION"
    REVIEW = "REVIEW"
    AWAITING_APPROVAL = "AWAITING_APPROVAL"
    DONE = "DONE"


class Status(StrEnum):
    IN_PROGRESS = "IN_PROGRESS"
    SUCCESS = "SUCCESS"
    ERROR = "ERROR"
    REQUIRES_USER_INPUT = "REQUIRES_USER_INPUT"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Transition(_Section):
    """One change of step: ``by`` the code or the LLM; ``reason`` is what caused it (taken) or
    why it was refused (``not_in_table``, ``second_transition``, ``code_decided``)."""

    from_step: Step
    to_step: Step
    by: Literal["code", "llm"]
    reason: str = ""


class AgentSection(_Section):
    """The turn's agent state record. ``state`` is the state after the turn as stored (masked);
    ``transition`` holds those taken, in order (at most one by the LLM; the code's, one per
    step); ``applied`` is false when nothing was written
    (a shadow turn, or a redelivered turn already applied)."""

    state: dict[str, Any] = Field(default_factory=dict)
    transition: list[Transition] = Field(default_factory=list)
    refused: list[Transition] = Field(default_factory=list)
    applied: bool = False
