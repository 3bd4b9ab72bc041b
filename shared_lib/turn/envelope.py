"""The ``Turn`` envelope: one versioned model that travels through the chain.

Each layer reads what it needs and fills only its own section (``LAYER_SECTIONS``; a
test enforces it). Shared bookkeeping (``timings``, ``trail``, ``errors``, ``usage``) is
appended by every layer through the helpers here.

On Pub/Sub the JSON body is the message data; the attributes carry ``turn_id``,
``layer`` (the producer), ``schema_version``, ``step`` and the W3C trace context of the
publishing span (``traceparent``, put there by the OpenTelemetry propagator: ``shared_lib.tracing``;
``Turn.traceparent`` is the turn's trace, from its ingress) (and ``smoke`` on a smoke turn). A body over ``MAX_INLINE_BYTES`` is stored in the store and the message
carries a reference.

A smoke turn (``smoke``) comes from a signed smoke webhook at the candidate ingress and
travels the smoke twins of the topics (``shared_lib.delivery.topology``), so only candidate
revisions handle it; each layer's trail entry names the revision that ran it.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shared_lib import collections, tracing
from shared_lib.errors import BrainError, EnvelopeError, EnvelopeTooLarge
from shared_lib.ids import new_turn_id, utc_now
from shared_lib.persona.ext import PersonaSection
from shared_lib.turn.agent_record import AgentSection
from shared_lib.turn.budgets import BudgetSection
from shared_lib.turn.decisions import AuthDecision, Verdict
from shared_lib.turn.inbound import ChannelName, InboundMessage
from shared_lib.turn.proposal import Proposal
from shared_lib.turn.steps import StepRecord as StepRecord  # the step models are part of the envelope
from shared_lib.turn.steps import ToolResult as ToolResult
from shared_lib.turn.steps import Usage as Usage
from shared_lib.turn.steps import WorkerOutput as WorkerOutput

if TYPE_CHECKING:
    from shared_lib.ports import Store

SCHEMA_VERSION = 1
MAX_INLINE_BYTES = 256 * 1024
MAX_BYTES = 8 * 1024 * 1024  # Pub/Sub's own limit is 10 MB per message


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
    # seed 001 §7.3: how the debounce settled the turn (state.debounce.Settled.section): role
    # alone|absorbed|leader, merged_into, the batch's turn_ids and message_ids, waited_ms
    debounce: dict[str, Any] = Field(default_factory=dict)
    degraded: list[str] = Field(default_factory=list)
    rendered: str = ""
    token_estimate: int = 0


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


class Turn(BaseModel):
    """One user turn through the chain. ``step`` counts multi-step loops (0-based)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    turn_id: str = Field(default_factory=new_turn_id)
    conversation_key: str
    org_id: str
    user_id: str
    room_id: str
    channel: ChannelName
    step: int = Field(default=0, ge=0, le=20)
    created_at: datetime = Field(default_factory=utc_now)
    shadow: bool = False  # True on the candidate copy of shadow mode: dry-run everywhere
    smoke: bool = False  # True on a smoke turn: published to the smoke topics (candidate revisions)
    ingress_revision: str = ""  # the revision of the ingress that accepted the webhook
    traceparent: str = ""
    # An absolute bound (a delegated job's ``ends_at``; an older ingress stamped one); the
    # processing budget is ``budget``, which counts work, not waiting (``shared_lib.turn.budgets``).
    deadline: datetime | None = None
    budget: BudgetSection = Field(default_factory=BudgetSection)

    inbound: InboundMessage
    flags: FlagsSection = Field(default_factory=FlagsSection)
    context: ContextSection = Field(default_factory=ContextSection)
    route: RouteSection = Field(default_factory=RouteSection)
    proposal: ProposalSection = Field(default_factory=ProposalSection)
    guardian: Verdict | None = None
    authorization: AuthDecision | None = None
    execution: ExecutionSection = Field(default_factory=ExecutionSection)
    response: ResponseSection = Field(default_factory=ResponseSection)
    loop: LoopSection = Field(default_factory=LoopSection)
    agent: AgentSection = Field(default_factory=AgentSection)  # seed 004: the agent state after the turn
    persona: PersonaSection = Field(default_factory=PersonaSection)  # seed 001 §16: taught, refused
    job: JobSection | None = None  # a delegated job's turn (seed 001 §15): its job and limits

    timings: dict[str, LayerTiming] = Field(default_factory=dict)
    usage: Usage = Field(default_factory=Usage)
    errors: list[BrainError] = Field(default_factory=list)
    trail: list[TrailEntry] = Field(default_factory=list)

    @classmethod
    def from_inbound(
        cls, inbound: InboundMessage, *, traceparent: str = "", deadline: datetime | None = None
    ) -> Turn:
        return cls(
            conversation_key=inbound.conversation_key,
            org_id=inbound.org_id,
            user_id=inbound.user_id,
            room_id=inbound.room_id,
            channel=inbound.channel,
            inbound=inbound,
            traceparent=traceparent,
            deadline=deadline,
        )

    def current_step(self, worker: WorkerOutput | None = None) -> StepRecord:
        """The step in the sections, as ``loop.steps`` keeps it once it is finished."""
        sec = self.proposal
        return StepRecord(
            step=len(self.loop.steps) + 1,
            turn_id=self.turn_id,
            arm=sec.arm,
            model=sec.model,
            route=self.route.route,
            proposal=sec.proposal,
            guardian=self.guardian,
            authorization=self.authorization,
            results=list(self.execution.results),
            worker=worker or WorkerOutput(),
            usage=sec.usage or Usage(),
        )

    def brain_text(self) -> str:
        """What the brain answers: the input after its leading commands (the input when none,
        or when nothing follows them)."""
        rest = self.route.text
        return rest if rest is not None and rest.strip() else self.inbound.text

    # -- bookkeeping every layer may do -------------------------------------------------
    def record(
        self,
        layer: str,
        outcome: str,
        *,
        reason_code: str = "",
        started: datetime,
        duration_ms: float,
        detail: str = "",
        revision: str = "",
        step: int | None = None,
    ) -> None:
        step = self.step if step is None else step
        key = layer if step == 0 else f"{layer}#{step}"
        self.timings[key] = LayerTiming(started_at=started, duration_ms=round(duration_ms, 3))
        self.trail.append(
            TrailEntry(
                layer=key,
                outcome=outcome,
                reason_code=reason_code,
                duration_ms=round(duration_ms, 3),
                detail=detail[:500],
                revision=revision,
            )
        )

    def add_error(self, error: BrainError) -> None:
        self.errors.append(error)

    # -- Pub/Sub serialisation ----------------------------------------------------------
    def attributes(self, layer: str) -> dict[str, str]:
        attrs = {
            "turn_id": self.turn_id,
            "org_id": self.org_id,  # the consumer's span names the organisation before it decodes
            "layer": layer,
            "schema_version": str(self.schema_version),
            "step": str(self.step),
            "shadow": "1" if self.shadow else "0",
        }
        # the publisher's current span is the next hop's parent; outside any, the turn's own
        tracing.inject(attrs)
        if "traceparent" not in attrs and self.traceparent:
            attrs["traceparent"] = self.traceparent
        if self.smoke:
            attrs["smoke"] = "1"
        return attrs

    def to_message(
        self, layer: str, store: Store | None = None, *, blob_ttl_days: int = 7
    ) -> tuple[bytes, dict[str, str]]:
        """Serialise for the bus; a body over MAX_INLINE_BYTES goes to ``store`` by reference."""
        data = self.model_dump_json().encode()
        attrs = self.attributes(layer)
        if len(data) > MAX_BYTES:
            raise EnvelopeTooLarge(f"turn {self.turn_id} is {len(data)} bytes (max {MAX_BYTES})")
        if len(data) > MAX_INLINE_BYTES:
            if store is None:
                raise EnvelopeTooLarge(f"turn {self.turn_id} is {len(data)} bytes and no store to offload to")
            path = blob_path(self, layer)
            store.set(path, {"body": data.decode(), "expires_at": utc_now() + timedelta(days=blob_ttl_days)})
            data = json.dumps({"$ref": path}).encode()
            attrs["body_ref"] = path
        return data, attrs

    @classmethod
    def from_message(
        cls, data: bytes, attributes: dict[str, str] | None = None, store: Store | None = None
    ) -> Turn:
        """Decode a bus message; raises ``EnvelopeError`` (never a bare pydantic error)."""
        attributes = attributes or {}
        version = attributes.get("schema_version", str(SCHEMA_VERSION))
        if version != str(SCHEMA_VERSION):
            raise EnvelopeError(f"unsupported schema_version {version!r}")
        try:
            raw = json.loads(data)
        except (ValueError, UnicodeDecodeError) as exc:
            raise EnvelopeError(f"message data is not JSON: {exc}") from exc
        if isinstance(raw, dict) and set(raw) == {"$ref"}:
            if store is None:
                raise EnvelopeError("message references a stored body but no store is configured")
            doc = store.get(str(raw["$ref"]))
            if doc is None:
                raise EnvelopeError(f"referenced body {raw['$ref']} not found")
            raw = json.loads(doc["body"])
        try:
            return cls.model_validate(raw)
        except ValidationError as exc:
            raise EnvelopeError(f"invalid turn: {exc.error_count()} error(s): {exc.errors()[:3]}") from exc


def blob_path(turn: Turn, layer: str) -> str:
    return collections.path("blobs", org=turn.org_id, id=f"{turn.turn_id}-{layer}-{turn.step}")


# Which top-level fields each layer may change (besides the shared bookkeeping).
SHARED_FIELDS = frozenset({"timings", "trail", "errors", "usage", "budget"})
LAYER_SECTIONS: dict[str, frozenset[str]] = {
    "context": frozenset({"context", "flags", "route", "inbound"}),  # inbound: a debounced batch's texts
    "brain": frozenset({"proposal", "loop"}),  # loop: only when 「はい」 resumes a paused turn
    "guardian": frozenset({"guardian"}),
    "authorizer": frozenset({"authorization"}),
    "executor": frozenset({"execution"}),
    "responder": frozenset(
        {"response", "loop", "step", "deadline", "agent", "persona"}
    ),  # the loop controller
}
