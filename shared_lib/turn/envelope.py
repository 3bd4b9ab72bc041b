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
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shared_lib import collections, tracing
from shared_lib.errors import BrainError, EnvelopeError, EnvelopeTooLarge
from shared_lib.ids import new_turn_id, utc_now
from shared_lib.persona.ext import PersonaSection
from shared_lib.turn.agent_record import AgentSection
from shared_lib.turn.budgets import BudgetSection
from shared_lib.turn.decisions import AuthDecision, Verdict
from shared_lib.turn.inbound import ChannelName, InboundMessage
from shared_lib.turn.sections import ConstitutionViolation as ConstitutionViolation
from shared_lib.turn.sections import ContextSection as ContextSection
from shared_lib.turn.sections import ExecutionSection as ExecutionSection
from shared_lib.turn.sections import FlagsSection as FlagsSection
from shared_lib.turn.sections import JobSection as JobSection
from shared_lib.turn.sections import LayerTiming as LayerTiming
from shared_lib.turn.sections import LoopSection as LoopSection
from shared_lib.turn.sections import ProposalSection as ProposalSection
from shared_lib.turn.sections import ResponseSection as ResponseSection
from shared_lib.turn.sections import RouteSection as RouteSection
from shared_lib.turn.sections import TrailEntry as TrailEntry
from shared_lib.turn.sections import UserInfo as UserInfo
from shared_lib.turn.steps import StepRecord as StepRecord  # the step models are part of the envelope
from shared_lib.turn.steps import ToolResult as ToolResult
from shared_lib.turn.steps import Usage as Usage
from shared_lib.turn.steps import WorkerOutput as WorkerOutput

if TYPE_CHECKING:
    from shared_lib.ports import Store

SCHEMA_VERSION = 1
MAX_INLINE_BYTES = 256 * 1024
MAX_BYTES = 8 * 1024 * 1024  # Pub/Sub's own limit is 10 MB per message


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
        cls,
        inbound: InboundMessage,
        *,
        traceparent: str = "",
        deadline: datetime | None = None,
        created_at: datetime | None = None,
    ) -> Turn:
        """A person's (or a job's, a heartbeat run's) turn; ``created_at``: the runtime's clock when
        the turn was accepted (what its record, its episode and its staging are dated by; the
        layers' timings read the same clock)."""
        return cls(
            created_at=created_at or utc_now(),
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

    # -- what kind of turn this is: asked here (and by the step runner and the shadow's stage),
    # never inline in a layer or a feature; they read what it means for them instead.
    @property
    def brain_arm(self) -> Literal["legacy", "llm"]:
        """The arm this turn's brain runs: the flags' arm, or the candidate's on a shadow turn."""
        return (self.flags.shadow_candidate_arm or self.flags.arm) if self.shadow else self.flags.arm

    @property
    def spends_extras(self) -> bool:
        """Whether the turn may pay for more than one proposal and one phrasing (self-critique,
        best-of-N): a shadow candidate's dry run never does (seed 000 §11, its cost is bounded)."""
        return not self.shadow

    @property
    def job_id(self) -> str | None:
        """The delegated job this turn is a step of (``None``: a person's turn)."""
        return self.job.job_id if self.job is not None else None

    @property
    def parent_turn_id(self) -> str | None:
        """The turn that delegated this turn's job (``None``: a person's turn)."""
        return self.job.parent_turn_id if self.job is not None else None

    def delegated(self) -> JobSection:
        """The job of a delegated job's turn (a step the table runs ``on_job="only"``)."""
        if self.job is None:
            raise ValueError(f"turn {self.turn_id} is not a delegated job's turn")
        return self.job

    def alert_label(self) -> str:
        """What an operator's alert about this turn starts with: a shadow candidate says so."""
        return "[shadow] " if self.shadow else ""

    def record_kind(self) -> Literal["shadow_candidate", "turn_record"]:
        """The observability record this turn makes."""
        return "shadow_candidate" if self.shadow else "turn_record"

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

    def candidate_expected(self) -> bool:
        """Whether the flags sampled this turn for a shadow candidate that can run (the arm is set,
        no kill switch, no pending confirmation the served arm answers from state, not local-only:
        a local-only turn has no LLM candidate, seed 003 /local)."""
        return (
            self.flags.shadow_candidate_arm is not None
            and not self.flags.kill_switch
            and not self.context.pending_action
            and not self.route.local_only
        )

    def wants_candidate(self) -> bool:
        """Whether the shadow arm runs a candidate of this turn as it stands: a served person's
        sampled first step (``layers.shadow.skip_reason``, the part the envelope decides)."""
        return not self.shadow and self.step == 0 and self.job is None and self.candidate_expected()

    # -- Pub/Sub serialisation ----------------------------------------------------------
    def attributes(self, layer: str) -> dict[str, str]:
        attrs = {
            "turn_id": self.turn_id,
            "org_id": self.org_id,  # the consumer's span names the organisation before it decodes
            "layer": layer,
            "schema_version": str(self.schema_version),
            "step": str(self.step),
            "shadow": "1" if self.shadow else "0",
            # brain-shadow-sub's filter: a turn that wants no candidate is never pushed to it
            "candidate": "1" if self.wants_candidate() else "0",
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
            data = json.dumps({"$ref": path}).encode()  # starts with REF_PREFIX
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
        if not data.startswith(REF_PREFIX):
            try:  # the envelope as published: parsed and validated in one pass (four times faster)
                return cls.model_validate_json(data)
            except ValidationError:
                pass  # not JSON, or not a turn: the steps below say which
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


REF_PREFIX = b'{"$ref"'  # how a body stored by reference starts (``to_message``)


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
