"""The LLM's proposal: the three output types of seed 000 §5.2.3b.

A proposal is what the LLM *suggests*; nothing in it decides anything. It is validated
here (shape, ranges, mandatory reasoning) and later judged by the guardian and the
authorization gate. ``ToolCall.parameters`` are candidates, never written unchecked.

>>> p = Proposal.model_validate({"output_type": "text_response",
...     "reasoning": {"intent_understanding": "挨拶をされたので挨拶を返す", "no_tool_reason": "雑談でありツールは不要"},
...     "confidence": {"overall": 0.95}, "text_response": "こんにちはウル！"})
>>> p.root.output_type
'text_response'
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel

from shared_lib.turn.agent_record import Status, Step
from shared_lib.turn.step_output import (
    CoderPlan,
    NextStep,
    PromptPattern,
    YesNoReason,
    checks_schema,
    coder_schema,
)

ParameterSource = Literal["user_message", "context", "inferred", "default"]
Score = Annotated[float, Field(ge=0.0, le=1.0)]


class _Model(BaseModel):
    # LLM output is not ours: unknown keys are ignored, not fatal, but types are strict.
    model_config = ConfigDict(extra="ignore", frozen=True)


class StateUpdate(_Model):
    """What the LLM proposes for the conversation's agent state (seed 004 §5, §7 ``step`` and
    ``state_delta``): the code validates and applies it (``shared_lib.features.agent_state.state``); texts over
    their limits are cut there, a wrong type or an unknown step is a bad proposal (the retry)."""

    goal: str | None = None
    why_now: str | None = None
    constraints: list[str] | None = None
    plan_brief: list[str] | None = None
    open_questions: list[str] | None = None
    step: Step | None = None  # the proposed next step: a transition only the table allows
    status: Status | None = None
    decision: str | None = None  # one line appended to the decision log


class PersonaUpdate(_Model):
    """A change the LLM proposes to its organisation's learned persona extension (seed 001 §16.4
    自己更新): a dotted key of the extension, its value, why. The code judges and applies it
    (``shared_lib.features.persona_learning.store``); a key of the core is refused there, never here."""

    key: Annotated[str, Field(min_length=1, max_length=100)]
    value: Any = None
    reasoning: Annotated[str, Field(max_length=300)] = ""


class _Output(_Model):
    # The step's hand-over to the loop controller (seed 002 §4.4): kept as the model wrote it and
    # validated by the controller (``shared_lib.loop``), so a bad block stops the loop, not the turn.
    loop: dict[str, Any] | None = None
    state_update: StateUpdate | None = None
    persona_update: Annotated[list[PersonaUpdate], Field(max_length=3)] | None = None
    # seed 004 §7: strict when given (``step_output``); a bad one is a bad proposal (the retry)
    goal_consistency: YesNoReason | None = None
    constraint_check: YesNoReason | None = None
    next_step: NextStep | None = None
    prompt_pattern: PromptPattern | None = None
    coder: CoderPlan | None = None  # seed 002 §5.1, the CODE route's plan and diff


class Confidence(_Model):
    overall: Score
    intent: Score | None = None
    parameters: Score | None = None


class ToolCallReasoning(_Model):
    intent_understanding: str
    context_used: list[str] = Field(default_factory=list)
    tool_selection_reason: str
    alternatives_considered: list[str] = Field(default_factory=list)


class TextReasoning(_Model):
    intent_understanding: str
    response_strategy: str = ""
    no_tool_reason: str


class ClarificationReasoning(_Model):
    ambiguity_detected: str
    possible_interpretations: list[str]


class ToolCall(_Model):
    tool_name: Annotated[str, Field(min_length=1, max_length=64)]
    parameters: dict[str, Any] = Field(default_factory=dict)
    parameter_sources: dict[str, ParameterSource] = Field(default_factory=dict)


class ToolCallProposal(_Output):
    output_type: Literal["tool_call"]
    reasoning: ToolCallReasoning
    confidence: Confidence
    tool_calls: Annotated[list[ToolCall], Field(min_length=1, max_length=5)]
    needs_confirmation: bool = False
    confirmation_question: str = ""

    def reasoning_text(self) -> str:
        r = self.reasoning
        return " / ".join(x for x in (r.intent_understanding, r.tool_selection_reason) if x)


class TextResponseProposal(_Output):
    output_type: Literal["text_response"]
    reasoning: TextReasoning
    confidence: Confidence
    text_response: Annotated[str, Field(min_length=1)]

    def reasoning_text(self) -> str:
        r = self.reasoning
        return " / ".join(x for x in (r.intent_understanding, r.response_strategy, r.no_tool_reason) if x)


class ClarificationProposal(_Output):
    output_type: Literal["clarification_needed"]
    reasoning: ClarificationReasoning
    confidence: Confidence
    clarification_question: Annotated[str, Field(min_length=1)]
    options: list[str] = Field(default_factory=list)

    def reasoning_text(self) -> str:
        r = self.reasoning
        return " / ".join([r.ambiguity_detected, *r.possible_interpretations])


AnyProposal = Annotated[
    ToolCallProposal | TextResponseProposal | ClarificationProposal, Field(discriminator="output_type")
]


class Proposal(RootModel[AnyProposal]):
    """Validated LLM output; ``.root`` is one of the three output types."""

    @property
    def output_type(self) -> str:
        return self.root.output_type

    @property
    def confidence(self) -> float:
        return self.root.confidence.overall

    @property
    def tool_calls(self) -> list[ToolCall]:
        return list(self.root.tool_calls) if isinstance(self.root, ToolCallProposal) else []


def proposal_json_schema() -> dict[str, Any]:
    """The JSON schema the LLM is asked to fill (the ``submit_proposal`` decision tool).

    Flattened (one object, ``output_type`` enum) because tool input schemas must be a
    single object; the discriminated union above re-checks each type's required fields.
    """
    str_list = {"type": "array", "items": {"type": "string"}}
    score = {"type": "number", "minimum": 0, "maximum": 1}
    return {
        "type": "object",
        "properties": {
            "output_type": {"type": "string", "enum": ["tool_call", "text_response", "clarification_needed"]},
            "reasoning": {
                "type": "object",
                "description": "Mandatory chain of thought (constitution art. 4.7).",
                "properties": {
                    "intent_understanding": {"type": "string"},
                    "context_used": str_list,
                    "tool_selection_reason": {"type": "string"},
                    "alternatives_considered": str_list,
                    "response_strategy": {"type": "string"},
                    "no_tool_reason": {"type": "string"},
                    "ambiguity_detected": {"type": "string"},
                    "possible_interpretations": str_list,
                },
            },
            "confidence": {
                "type": "object",
                "properties": {"overall": score, "intent": score, "parameters": score},
                "required": ["overall"],
            },
            "tool_calls": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "tool_name": {"type": "string"},
                        "parameters": {"type": "object"},
                        "parameter_sources": {
                            "type": "object",
                            "additionalProperties": {
                                "type": "string",
                                "enum": ["user_message", "context", "inferred", "default"],
                            },
                        },
                    },
                    "required": ["tool_name", "parameters"],
                },
            },
            "needs_confirmation": {"type": "boolean"},
            "confirmation_question": {"type": "string"},
            "text_response": {"type": "string"},
            "clarification_question": {"type": "string"},
            "options": str_list,
            "loop": {
                "type": "object",
                "description": "Multi-step hand-over: whether this step needs another after its result.",
                "properties": {
                    "needs_next_loop": {"type": "boolean"},
                    "why": {"type": "string"},
                    "next_actions": {**str_list, "maxItems": 3},
                    "questions_for_user": {**str_list, "maxItems": 3},
                    "risk": {"type": "string", "enum": ["low", "medium", "high"]},
                    "fit": {"type": "boolean"},
                    "suggested_route": {"type": "string"},
                },
            },
            "state_update": state_update_schema(),
            "persona_update": persona_update_schema(),
            **checks_schema(),
            "coder": coder_schema(),
        },
        "required": ["output_type", "reasoning", "confidence"],
    }


def state_update_schema() -> dict[str, Any]:
    """The ``state_update`` object of ``submit_proposal``; its descriptions are what the model reads."""

    def lines(n: int, what: str) -> dict[str, Any]:
        return {
            "type": "array",
            "items": {"type": "string", "maxLength": 100},
            "maxItems": n,
            "description": what,
        }

    return {
        "type": "object",
        "description": "Optional: your proposed update of the conversation's agent state (the charter "
        "validates it, allows at most one step change per user message, and may refuse it).",
        "properties": {
            "goal": {"type": "string", "maxLength": 200, "description": "The conversation's goal, one line."},
            "why_now": {"type": "string", "maxLength": 200, "description": "Why it is done now, one line."},
            "constraints": lines(2, "At most 2 constraints to respect."),
            "plan_brief": lines(3, "The next at most 3 moves of the plan."),
            "open_questions": lines(2, "At most 2 questions still open."),
            "step": {
                "type": "string",
                "enum": [s.value for s in Step],
                "description": "The step you propose next; only the allowed transitions are taken.",
            },
            "status": {"type": "string", "enum": [s.value for s in Status]},
            "decision": {"type": "string", "maxLength": 100, "description": "A decision taken, one line."},
        },
    }


def persona_update_schema() -> dict[str, Any]:
    """The ``persona_update`` array of ``submit_proposal``: what the organisation taught you."""
    return {
        "type": "array",
        "maxItems": 3,
        "description": "Optional, rare: a preference this organisation clearly taught you, to remember. "
        "Keys: learned_preferences.favorite_topics (a short topic), learned_preferences."
        "communication_style_notes (<= 200 chars), dynamic_traits.humor_frequency or "
        "dynamic_traits.verbosity (0..1), custom_rules (one rule, <= 100 chars), "
        "context_overrides.announcement.formality (casual|formal|mixed) or .emoji_usage (true|false). "
        "Your core (name, tone, sentence endings, rules) cannot be changed: such keys are refused.",
        "items": {
            "type": "object",
            "properties": {
                "key": {"type": "string", "maxLength": 100},
                "value": {"description": "A string, a number 0..1, a boolean or a list of strings."},
                "reasoning": {
                    "type": "string",
                    "maxLength": 300,
                    "description": "What the user said that taught it.",
                },
            },
            "required": ["key", "value"],
        },
    }
