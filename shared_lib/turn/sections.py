"""The sections of the ``Turn`` envelope (``shared_lib.turn.envelope``): what each layer fills.

Each is a strict model (unknown fields are refused); the envelope re-exports them, so
``shared_lib.turn.envelope`` stays the one import for the turn and its parts.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from shared_lib.ids import utc_now
from shared_lib.turn.proposal import Proposal
from shared_lib.turn.steps import StepRecord, ToolResult, Usage, WorkerOutput


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FlagsSection(_Section):
    arm: Literal["legacy", "llm"] = "legacy"
    reason: str = "DEFAULT"
    bucket: int | None = None
    flags_version: str = ""
    kill_switch: bool = False
    shadow_candidate_arm: Literal["legacy", "llm"] | None = None
    model: str | None = None


class UserInfo(_Section):
    user_id: str
    name: str | None = None
    level: int | None = None
    department_id: str | None = None


class ContextSection(_Section):
    user: UserInfo | None = None
    session: dict[str, Any] = Field(default_factory=dict)
    pending_action: dict[str, Any] | None = None
    # the auto-approve chat command's outcome (layers.auto_approval: scope own/org for an OFF, on for an ON)
    auto_off: dict[str, Any] | None = None
    # seed 004 §5: the conversation's agent state as the context layer read it (the fixed five
    # goal, why_now, constraints, plan_brief, open_questions; step, status, decision_log, last_delta)
    agent_state: dict[str, Any] = Field(default_factory=dict)
    persona_ext: dict[str, Any] = Field(default_factory=dict)  # the organisation's learned persona (masked)
    recent_messages: list[dict[str, Any]] = Field(default_factory=list)
    summary: str = ""
    persons: list[dict[str, Any]] = Field(default_factory=list)
    tasks: list[dict[str, Any]] = Field(default_factory=list)
    goals: list[dict[str, Any]] = Field(default_factory=list)
    teachings: list[dict[str, Any]] = Field(default_factory=list)
    preferences: dict[str, Any] = Field(default_factory=dict)
    knowledge: list[dict[str, Any]] = Field(default_factory=list)
    episodes: list[dict[str, Any]] = Field(default_factory=list)  # seed 001 §22: recalled, with when
    # seed 001 §7.3: how the debounce settled the turn (state.debounce.Settled.section): role
    # alone|absorbed|leader, merged_into, the batch's turn_ids and message_ids, waited_ms
    debounce: dict[str, Any] = Field(default_factory=dict)
    degraded: list[str] = Field(default_factory=list)
    rendered: str = ""
    token_estimate: int = 0
    # seed 001 §19 (issue 39): the estimated tokens of the conversation's summary and of every message
    # in its window as this context read them, this turn's words not yet among them; None when it did
    # not see the whole window (its recent read filled its limit, or a source did not answer). The
    # memory stage decides from it whether compaction can be due before reading the conversation.
    window_tokens: int | None = None


class RouteSection(_Section):
    """The router's decision on this input (seed 003), set by the context layer.

    ``route`` is a ``shared_lib.routing.Route`` value; ``source`` is empty when no router ran
    (an envelope of an earlier version). ``local_only`` is the conversation's state after this
    input (``/local`` sets it, ``/cloud`` clears it): while it holds no cloud LLM is called.
    ``text`` is the input after its leading commands (``None``: it had none); the brain reads
    it (``Turn.brain_text``) so command words never reach a model as instructions.
    ``classifier_*`` say what the classifier answered when it was asked (at most once per
    input); ``previous_route`` is the route of the conversation's previous reply (the
    session's ``last_route``; ``None``: none), against which a route change is announced.
    ``peers`` names the LLM peers that answered the turn's calls, in order (a local-only turn:
    only local ones). ``forced`` says the channel fixed the input to CHAT (``line_forced_chat``,
    seed 002 §2.6): another route only through the DELEGATE protocol.
    """

    route: str = "CHAT"
    source: str = ""
    confidence: float = 0.0
    reason: str = ""
    rule_id: str | None = None
    local_only: bool = False
    refused: str | None = None
    guidance: str | None = None
    commands: list[str] = Field(default_factory=list)
    text: str | None = None
    classifier_called: bool = False
    classifier_route: str | None = None
    classifier_confidence: float | None = None
    classifier_error: str | None = None
    previous_route: str | None = None
    peers: list[str] = Field(default_factory=list)  # the LLM peers that answered this turn's calls
    forced: str | None = None


class ConstitutionViolation(_Section):
    article: str
    code: str
    detail: str
    action: Literal["block", "suggest", "retry"]


class ProposalSection(_Section):
    arm: Literal["legacy", "llm", "state", "fast_path", "kill_switch"] = "llm"
    model: str | None = None
    proposal: Proposal | None = None
    attempts: int = 0
    violations: list[ConstitutionViolation] = Field(default_factory=list)
    approval: dict[str, Any] | None = None  # set when the user answered a pending confirmation
    duration_ms: float = 0.0
    self_critique: dict[str, Any] | None = None
    # parameters the tools do not declare, dropped from the LLM's answer (``tool.parameter``)
    dropped_parameters: list[str] = Field(default_factory=list)
    usage: Usage | None = None  # this step's brain calls (the loop shows cache figures per step)


class ExecutionSection(_Section):
    results: list[ToolResult] = Field(default_factory=list)
    dry_run: bool = False
    skipped_reason: str | None = None


class ResponseSection(_Section):
    kind: Literal["reply", "confirm", "block", "deny", "clarify", "error", "ignored"] = "reply"
    text: str = ""
    sent: bool = False
    send_receipt: str | None = None
    duplicate_send: bool = False
    # Best-of-N phrased the reply (features.best_of_n): difficulty, N, the chosen candidate, regenerated
    best_of_n: dict[str, Any] | None = None


class LayerTiming(_Section):
    started_at: datetime
    duration_ms: float


class TrailEntry(_Section):
    layer: str
    outcome: str
    reason_code: str = ""
    duration_ms: float = 0.0
    at: datetime = Field(default_factory=utc_now)
    detail: str = ""
    revision: str = ""  # the revision that ran the layer (settings CHARTER_REVISION / K_REVISION)


class LoopSection(_Section):
    """The loop controller's state (seed 002 §3): the finished steps and why the loop stopped.

    ``started_at`` is when the first step began (the ``max_millis`` budget); a turn that resumes
    a paused one after 「はい」 (``resumed_from``) carries its steps and numbering, and gets a
    fresh budget."""

    steps: list[StepRecord] = Field(default_factory=list)
    stop_reason: str | None = None
    stop_detail: str = ""
    worker: WorkerOutput | None = None  # the last step's hand-over (the earlier ones: each step's)
    started_at: datetime | None = None
    resumed_from: str | None = None
    request: str = ""  # a resumed loop: the paused turn's request, masked (the brain's user message)
    reroute_used: bool = False
    reroute_refused: str | None = None  # ``ROUTE: why`` of a re-route the controller refused
    events: list[dict[str, Any]] = Field(default_factory=list)


class JobSection(_Section):
    """A delegated job's turn (seed 001 §15, 002 §4.4): a sub-agent runs as a turn of its own
    through the same chain, as its requester (``Turn.user_id``: the guardian and the gate judge
    every step as for that person, never more), inside the job's own limits; the watchdog
    (``shared_lib.features.jobs.state``) stops it at ``max_steps``, ``max_cost_usd`` or ``ends_at``.
    Its result is reported into the parent's room."""

    job_id: str
    parent_turn_id: str
    task: str = ""  # masked: what the sub-agent was asked to do
    max_steps: int = Field(default=6, ge=1, le=20)
    max_cost_usd: float = Field(default=0.5, ge=0)
    ends_at: datetime | None = None
    depth: int = Field(default=1, ge=1, le=1)  # a sub-agent never delegates again
