"""What one step of a turn produced: its tool results, its usage, its hand-over to the loop
controller (``WorkerOutput``, seed 002 §4.4) and, once finished, its ``StepRecord``.

Part of the ``Turn`` envelope (``shared_lib.turn.envelope`` re-exports every name here).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from shared_lib.turn.decisions import AuthDecision, Verdict
from shared_lib.turn.proposal import Proposal


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolResult(_Section):
    tool_name: str
    call_index: int
    ok: bool
    result: dict[str, Any] = Field(default_factory=dict)
    error_code: str | None = None
    receipt_id: str | None = None
    duration_ms: float = 0.0
    dry_run: bool = False
    replayed: bool = False
    # the values the handler unsealed for the asker (``sealing``: a kept document they may read);
    # the only values of a result a reply restores after the LLM phrased it with placeholders
    revealed: list[str] = Field(default_factory=list)


class Usage(_Section):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cost_usd: float = 0.0
    llm_calls: int = 0
    llm_duration_ms: float = 0.0
    # what each purpose of call cost (``ports.Purpose``: proposal, phrasing, evaluation, ...)
    cost_by_purpose: dict[str, float] = Field(default_factory=dict)

    def add(self, other: Usage) -> None:
        for name in type(self).model_fields:
            if name == "cost_by_purpose":
                for purpose, cost in other.cost_by_purpose.items():
                    self.cost_by_purpose[purpose] = round(self.cost_by_purpose.get(purpose, 0.0) + cost, 8)
            else:
                setattr(self, name, getattr(self, name) + getattr(other, name))

    def since(self, before: Usage) -> Usage:
        """What was added to this usage after ``before`` was taken (a copy of it)."""
        out = Usage(
            **{k: getattr(self, k) - getattr(before, k) for k in Usage.model_fields if k != "cost_by_purpose"}
        )
        spent = {p: round(c - before.cost_by_purpose.get(p, 0.0), 8) for p, c in self.cost_by_purpose.items()}
        out.cost_by_purpose = {p: c for p, c in spent.items() if c}
        return out


class WorkerOutput(_Section):
    """What one step hands the loop controller (seed 002 §4.4, §5): built by the controller from
    the step's results and the proposal's ``loop`` block, validated; an invalid block is a
    ``worker.fail`` and stops the loop (``needs_next_loop`` false)."""

    result: str = ""
    needs_next_loop: bool = False
    why: str = ""
    next_actions: list[str] = Field(default_factory=list, max_length=3)
    questions_for_user: list[str] = Field(default_factory=list, max_length=3)
    confidence: float = Field(default=0.0, ge=0.0, le=1.0)
    risk: Literal["low", "medium", "high"] = "low"
    fit: bool | None = None
    suggested_route: str | None = None


class StepRecord(_Section):
    """One finished step of a multi-step turn: what was proposed, decided and done."""

    step: int  # its number in the loop (1-based; a resumed turn goes on from the paused one)
    turn_id: str  # the turn that ran it
    arm: str = ""
    model: str | None = None
    route: str = "CHAT"
    proposal: Proposal | None = None
    guardian: Verdict | None = None
    authorization: AuthDecision | None = None
    results: list[ToolResult] = Field(default_factory=list)
    worker: WorkerOutput = Field(default_factory=WorkerOutput)
    usage: Usage = Field(default_factory=Usage)  # the brain's calls of this step
