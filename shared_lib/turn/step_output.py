"""What a step's proposal may say beside its output: seed 004 §7's checks and the Coder's plan.

Seed 004 §7.1 (the Main LLM's output format, with §7.3 "JSON スキーマの厳格化"):

=====================  ==================================================================
``goal_consistency``   does the step serve the goal: ``yes`` or ``no``, then the reason
``constraint_check``   does it keep the constraints: ``yes`` or ``no``, then the reason
``next_step``          ``done``, ``pending_user``, ``defer`` or ``continue``
``prompt_pattern``     ``base_main`` or ``base_main_specialized`` (seed 004 §10.4)
=====================  ==================================================================

(``rationale``, ``step`` and ``state_delta`` are the proposal's ``reasoning`` and
``state_update``.) Each is optional, and strict when given: a boolean where a ``yes/no`` text
is due, a bare ``yes`` without its reason, or a value off the lists is a bad proposal, which
the brain retries once with the reason like any other.

Seed 002 §5.1 (the Coder's output, on the CODE route: a proposal and a diff, never an
execution): ``plan``, ``patch``, ``risk`` and ``need_approval`` (``true`` unless said
otherwise; a boolean, not a word), ``cost_hint`` optional. The job it belongs to is the
charter's (the approval job of the step), never the model's. The loop records it as the
event ``coder.plan_generated``.

>>> check("no: 期限の制約と矛盾する")
'no: 期限の制約と矛盾する'
>>> holds("Yes（目的どおり）")
True
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool

NEXT_STEPS = ("done", "pending_user", "defer", "continue")
PROMPT_PATTERNS = ("base_main", "base_main_specialized")
NextStep = Literal["done", "pending_user", "defer", "continue"]
PromptPattern = Literal["base_main", "base_main_specialized"]
_YES_NO = re.compile(
    r"^\s*(yes|no)\b\s*[:：,、，.。\-–—(（]?\s*(.*?)\s*[)）]?\s*$", re.IGNORECASE | re.DOTALL
)


def check(value: str) -> str:
    """A ``yes/no + 理由`` text as given; raises ``ValueError`` when it is not one."""
    m = _YES_NO.match(value)
    if m is None:
        raise ValueError("must start with yes or no, then the reason")
    if not m.group(2).strip():
        raise ValueError("yes or no needs its reason")
    return value


def holds(value: str) -> bool:
    """Whether a checked ``yes/no + 理由`` text says yes."""
    m = _YES_NO.match(value)
    return m is not None and m.group(1).lower() == "yes"


YesNoReason = Annotated[str, Field(strict=True, min_length=4, max_length=300), AfterValidator(check)]


class CoderPlan(BaseModel):
    """The Coder's proposal and diff (seed 002 §5.1)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    plan: Annotated[str, Field(strict=True, min_length=1, max_length=2000)]
    patch: Annotated[str, Field(strict=True, min_length=1, max_length=20000)]
    risk: Literal["low", "medium", "high"]
    need_approval: StrictBool = True
    cost_hint: Annotated[str, Field(strict=True, max_length=200)] | None = None

    def summary(self) -> str:
        """``coder_output`` of seed 002 §7.3: the plan's first line, the patch's size, the risk."""
        first = self.plan.strip().splitlines()[0][:120] if self.plan.strip() else ""
        lines = len(self.patch.splitlines())
        return f"plan: {first} / patch: {lines} lines / risk: {self.risk}"


def checks_schema() -> dict[str, Any]:
    """The seed 004 §7 properties of ``submit_proposal``; their descriptions are what the model reads."""
    yes_no = "yes or no, then the reason in one line (e.g. 'yes: 依頼どおりタスクを作る')."
    return {
        "goal_consistency": {
            "type": "string",
            "maxLength": 300,
            "description": "Does this step serve the conversation's goal? " + yes_no,
        },
        "constraint_check": {
            "type": "string",
            "maxLength": 300,
            "description": "Does it keep every constraint? " + yes_no,
        },
        "next_step": {
            "type": "string",
            "enum": list(NEXT_STEPS),
            "description": "What follows: done, pending_user (the user must answer), defer, continue.",
        },
        "prompt_pattern": {
            "type": "string",
            "enum": list(PROMPT_PATTERNS),
            "description": "base_main for a plain answer; base_main_specialized for planning, execution or review.",
        },
    }


def coder_schema() -> dict[str, Any]:
    """The ``coder`` object of ``submit_proposal`` (the CODE route's proposal and diff)."""
    return {
        "type": "object",
        "description": "On the CODE route only: your plan and diff. Never run or write anything.",
        "properties": {
            "plan": {"type": "string", "description": "Steps and the reasons, briefly."},
            "patch": {"type": "string", "description": "The change as a unified diff (or its list)."},
            "risk": {"type": "string", "enum": ["low", "medium", "high"]},
            "need_approval": {
                "type": "boolean",
                "description": "Whether applying it needs approval (usually true).",
            },
            "cost_hint": {
                "type": "string",
                "description": "Optional: an estimate of tokens or a limit near.",
            },
        },
        "required": ["plan", "patch", "risk"],
    }
