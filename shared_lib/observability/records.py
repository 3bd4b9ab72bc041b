"""The observability record of a turn: seed 000 §9.1.1 fields plus runtime facts.

One pydantic model is the single definition of the Firestore record
(``orgs/{org}/observability/{turn_id}``), of the row the record becomes in BigQuery
(published on ``turns.events``; the Pub/Sub BigQuery subscription writes it) and of the
table schema (``shared_lib.ops.schema.bigquery_schema``). Every text field is masked.

The first fields (``EventHeader``) are shared by every event on ``turns.events`` so that
alerts and records land in one table: ``event_id``, ``kind``, ``code``, ``layer``,
``occurred_at``, ``org_id`` and ``turn_id``.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from shared_lib import tracing
from shared_lib.observability.step_records import (
    AgentRow,
    LoopRow,
    SelectedTool,
    StepRow,
    agent_row,
    initial_route,
    loop_row,
    step_rows,
)
from shared_lib.observability.step_records import RecordRow as _Row
from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.turn.envelope import Turn

RECORD_SCHEMA_VERSION = 1
RecordKind = Literal["turn_record", "shadow_candidate"]


class EventHeader(_Row):
    event_id: str = Field(description="Unique id of the event (BigQuery rows are deduplicated on it).")
    kind: str = Field(description="Event kind: turn_record, shadow_candidate, alert, heartbeat, ...")
    code: str | None = Field(default=None, description="Stable machine code of the event (alerts).")
    layer: str | None = Field(default=None, description="Layer that emitted the event.")
    occurred_at: datetime | None = Field(default=None, description="When it happened (partition column).")
    org_id: str | None = Field(default=None, description="Organisation.")
    turn_id: str | None = Field(default=None, description="Turn the event belongs to.")


class UsageRow(_Row):
    input_tokens: int = Field(default=0, description="Uncached input tokens.")
    output_tokens: int = Field(default=0, description="Output tokens.")
    cache_creation_input_tokens: int = Field(default=0, description="Tokens written to the prompt cache.")
    cache_read_input_tokens: int = Field(default=0, description="Tokens read from the prompt cache (hits).")
    cost_usd: float = Field(default=0.0, description="Cost in USD.")
    llm_calls: int = Field(default=0, description="LLM calls.")
    llm_duration_ms: float = Field(default=0.0, description="Time in LLM calls.")
    cost_by_purpose: dict[str, float] = Field(
        default_factory=dict,
        description="Cost in USD by purpose of call (proposal, phrasing, evaluation, ...).",
    )


class TrailRow(_Row):
    layer: str = Field(description="Layer (with #step for later steps).")
    outcome: str = Field(description="Outcome word of the layer.")
    reason_code: str = Field(default="", description="Stable reason code of the outcome.")
    duration_ms: float = Field(default=0.0, description="Time spent in the layer.")
    at: datetime = Field(description="When the layer finished.")
    detail: str = Field(default="", description="Short detail (masked).")
    revision: str = Field(default="", description="Revision that ran the layer (its K_REVISION).")


class ErrorRow(_Row):
    code: str = Field(description="Catalogue code (seed 000 §6.7.3).")
    category: str = Field(description="Error category.")
    severity: str = Field(description="low, medium, high or critical.")
    layer: str = Field(description="Layer that recorded the error.")
    message: str = Field(description="Internal message (masked).")
    alert_admin: bool = Field(default=False, description="Whether the catalogue asks for an alert.")


class ViolationRow(_Row):
    article: str = Field(description="Constitution article.")
    code: str = Field(description="Violation code.")
    detail: str = Field(description="What was wrong (masked).")
    action: str = Field(description="block, suggest or retry.")


class RouteRow(_Row):
    initial_route: str = Field(description="Route the router decided for the input (seed 003).")
    source: str = Field(description="What decided it: command, rules, classifier or fallback.")
    confidence: float = Field(default=0.0, description="1.0 for a command or a rule, 0.0 for a fallback.")
    reason: str = Field(default="", description="Why (masked).")
    rule_id: str | None = Field(default=None, description="Rule of the dictionary that matched.")
    local_only: bool = Field(default=False, description="The turn was local-only (/local): no cloud LLM.")
    refused: str | None = Field(default=None, description="What the router refused (code_needs_cloud).")
    commands: list[str] = Field(default_factory=list, description="Leading commands of the input.")
    classifier_route: str | None = Field(default=None, description="What the classifier answered, if asked.")
    classifier_confidence: float | None = Field(default=None, description="The classifier's confidence.")
    classifier_error: str | None = Field(default=None, description="Why its answer was not used.")
    peers: list[str] = Field(default_factory=list, description="LLM peers that answered the turn's calls.")


class ObservabilityRecord(EventHeader):
    """One turn, recorded once. Field names follow seed 000 §9.1.1 where it names them."""

    kind: RecordKind = Field(
        default="turn_record",
        description="Event kind: turn_record or shadow_candidate here; alert, heartbeat, ... "
        "for the other events of turns.events.",
    )
    schema_version: int = Field(default=RECORD_SCHEMA_VERSION, description="Version of this record shape.")
    # identity
    record_id: str = Field(description="Record id (the turn id; seed record_id).")
    timestamp: datetime = Field(description="When the turn was received (seed timestamp).")
    recorded_at: datetime = Field(description="When the observer wrote the record.")
    user_id: str = Field(description="User.")
    organization_id: str = Field(description="Organisation (seed name of org_id).")
    room_id: str = Field(description="Room.")
    channel: str = Field(description="chatwork, line, slack or http.")
    conversation_key: str = Field(description="Ordering key: org/room/user.")
    trace_id: str | None = Field(default=None, description="W3C trace id carried across every hop.")
    # input
    input_message: str = Field(description="The user's message (masked).")
    context_summary: str = Field(default="", description="The context given to the brain (masked, clipped).")
    context_degraded: list[str] = Field(default_factory=list, description="Context sources that failed.")
    context_tokens: int = Field(default=0, description="Estimated tokens of the context.")
    # model
    llm_model: str = Field(description="Model that proposed, or the arm when no model was used.")
    arm: str = Field(
        description="Arm that produced the proposal: llm, legacy, state, fast_path, kill_switch."
    )
    flags_arm: str = Field(description="Arm the flags chose for the person.")
    flags_reason: str = Field(description="Why the flags chose it (reason code).")
    flags_version: str = Field(default="", description="Version of the flags document.")
    kill_switch: bool = Field(default=False, description="Kill switch was on for this turn.")
    bucket: int | None = Field(default=None, description="Sticky rollout bucket of the person.")
    llm_reasoning: str = Field(description="Chain of thought of the proposal (masked).")
    llm_confidence: float = Field(description="Overall confidence of the proposal.")
    output_type: str | None = Field(
        default=None, description="tool_call, text_response or clarification_needed."
    )
    proposal_attempts: int = Field(default=0, description="LLM attempts the proposal took.")
    selected_tools: list[SelectedTool] = Field(
        default_factory=list, description="Tools the proposal selected."
    )
    proposal: dict[str, Any] | None = Field(default=None, description="The whole proposal (masked; replay).")
    approval: dict[str, Any] | None = Field(default=None, description="Answer to a pending confirmation.")
    constitution_violations: list[ViolationRow] = Field(
        default_factory=list, description="Constitution checks the proposal failed."
    )
    dropped_parameters: list[str] = Field(
        default_factory=list, description="Parameters the tools do not declare, dropped (tool.parameter)."
    )
    # checks
    guardian_action: str = Field(description="allow, confirm, block, modify, or none when skipped.")
    guardian_reason: str = Field(default="", description="Guardian reason code.")
    guardian_priority: int | None = Field(default=None, description="Decision-tree priority that decided.")
    auth_result: str = Field(description="allowed, denied, not_applicable, or none when skipped.")
    auth_reason: str = Field(default="", description="Authorization reason code.")
    auth_user_level: int | None = Field(default=None, description="The user's level.")
    auth_required_level: int | None = Field(default=None, description="The level the tools need.")
    # execution
    execution_success: bool = Field(description="Every tool that ran succeeded (false when none ran).")
    execution_result: list[dict[str, Any]] = Field(default_factory=list, description="Tool results (masked).")
    execution_error: str | None = Field(default=None, description="Error code of the first failed tool.")
    execution_skipped_reason: str | None = Field(default=None, description="Why no tool ran.")
    tool_calls_executed: int = Field(default=0, description="Tool executions (dry runs included).")
    tool_errors: int = Field(default=0, description="Tool executions that failed.")
    # response
    final_response: str = Field(description="The reply sent to the user (masked).")
    response_kind: str = Field(
        description="Reply kind: reply, confirm, block, deny, clarify, error, ignored, merged (debounced into a later turn)."
    )
    response_sent: bool = Field(default=False, description="The reply was delivered.")
    # durations
    total_duration_ms: float = Field(description="From receipt to the end of the last layer (wall time).")
    processing_ms: float = Field(default=0.0, description="Sum of the layers' own times.")
    queued_ms: float = Field(default=0.0, description="Time the turn waited for its layers (queues).")
    backlogged: bool = Field(default=False, description="It waited longer than its admitted backlog.")
    llm_duration_ms: float = Field(description="Time in LLM calls.")
    tool_duration_ms: float = Field(description="Time in tool handlers.")
    timings: dict[str, float] = Field(default_factory=dict, description="Per-layer time in ms (layer#step).")
    # self-critique
    self_critique_executed: bool = Field(default=False, description="A self-critique ran.")
    self_critique_result: str | None = Field(default=None, description="Its result (masked JSON).")
    # runtime
    step: int = Field(default=0, description="Last step of the turn (0-based).")
    step_count: int = Field(default=1, description="Steps the turn took.")
    trail: list[TrailRow] = Field(default_factory=list, description="Decision trail, layer by layer.")
    usage: UsageRow = Field(default_factory=UsageRow, description="Tokens, cache hits and cost of the turn.")
    cache_hit_ratio: float = Field(default=0.0, description="Cache reads / all input tokens.")
    cost_usd: float = Field(default=0.0, description="Cost of the turn's LLM calls in USD.")
    errors: list[ErrorRow] = Field(default_factory=list, description="Errors recorded on the turn.")
    shadow: bool = Field(default=False, description="A shadow (dry-run) candidate, not the served turn.")
    smoke: bool = Field(
        default=False, description="A smoke turn run by the candidate revisions before promotion."
    )
    job_id: str | None = Field(default=None, description="Delegated job this turn runs (none: a person's).")
    parent_turn_id: str | None = Field(default=None, description="Turn that delegated the job.")
    revisions: dict[str, str] = Field(
        default_factory=dict,
        description="Layer => revision that handled the turn (ingress, trail layers, observer).",
    )
    route: RouteRow | None = Field(
        default=None, description="The router's decision (router.decision; none before the router)."
    )
    steps: list[StepRow] = Field(
        default_factory=list, description="One row per step of the turn, in order (seed 002 §3)."
    )
    loop: LoopRow = Field(
        default_factory=LoopRow, description="Why the loop stopped and its seed 002 §7.1 events."
    )
    agent: AgentRow = Field(
        default_factory=AgentRow, description="Seed 004 agent state after the turn and its transition."
    )

    @property
    def is_llm(self) -> bool:
        return self.arm == "llm"

    def store_doc(self) -> dict[str, Any]:
        """The Firestore shape (datetimes stay timestamps so range queries work)."""
        return self.model_dump(mode="python")

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> ObservabilityRecord:
        """Read a stored record, ignoring fields a newer writer may have added."""
        return cls.model_validate({k: v for k, v in doc.items() if k in cls.model_fields})


def _cache_ratio(turn: Turn) -> float:
    u = turn.usage
    total = u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens
    return round(u.cache_read_input_tokens / total, 4) if total else 0.0


def _total_ms(turn: Turn) -> float:
    """Receipt to the end of the last layer; never less than the layers' own time (clock skew
    between the instances that ran the hops can only make the wall-clock difference wrong)."""
    processing = sum(t.duration_ms for t in turn.timings.values())
    ends = [t.started_at.timestamp() * 1000 + t.duration_ms for t in turn.timings.values()]
    wall = max(ends) - turn.created_at.timestamp() * 1000 if ends else 0.0
    return round(max(wall, processing), 3)


def _revisions(turn: Turn, observer_revision: str) -> dict[str, str]:
    """Which revision ran each layer: the ingress's, each trail entry's, the recording observer's."""
    found = {"ingress": turn.ingress_revision, **{e.layer: e.revision for e in turn.trail}}
    found["observer"] = observer_revision
    return {layer: revision for layer, revision in found.items() if revision}


def build_record(turn: Turn, *, recorded_at: datetime, revision: str = "") -> ObservabilityRecord:
    """The record of ``turn`` (masked): a shadow candidate's makes a shadow-candidate record;
    ``revision`` is the recording observer's."""
    s = Sanitizer.default()
    sec, p = turn.proposal, turn.proposal.proposal
    results = turn.execution.results
    failed = [r for r in results if not r.ok]
    g, a = turn.guardian, turn.authorization
    kind: RecordKind = turn.record_kind()
    steps = step_rows(turn, s)
    return ObservabilityRecord(
        event_id=f"{kind}-{turn.turn_id}-{turn.step}",
        kind=kind,
        layer="observer",
        occurred_at=turn.created_at,
        org_id=turn.org_id,
        turn_id=turn.turn_id,
        record_id=turn.turn_id,
        timestamp=turn.created_at,
        recorded_at=recorded_at,
        user_id=turn.user_id,
        organization_id=turn.org_id,
        room_id=turn.room_id,
        channel=turn.channel,
        conversation_key=turn.conversation_key,
        trace_id=tracing.trace_id_of(turn.traceparent) or None,
        input_message=s.mask_text(turn.inbound.text),
        context_summary=s.mask_text(turn.context.rendered[:2000]),
        context_degraded=list(turn.context.degraded),
        context_tokens=turn.context.token_estimate,
        llm_model=sec.model or sec.arm,
        arm=sec.arm,
        flags_arm=turn.flags.arm,
        flags_reason=turn.flags.reason,
        flags_version=turn.flags.flags_version,
        kill_switch=turn.flags.kill_switch,
        bucket=turn.flags.bucket,
        llm_reasoning=s.mask_text(p.root.reasoning_text()) if p else "",
        llm_confidence=p.confidence if p else 0.0,
        output_type=p.output_type if p else None,
        proposal_attempts=sec.attempts,
        selected_tools=[
            SelectedTool(tool_name=c.tool_name, parameters=s.mask_obj(c.parameters))
            for c in (p.tool_calls if p else [])
        ],
        proposal=s.mask_obj(p.model_dump(mode="json")) if p else None,
        approval=s.mask_obj(sec.approval) if sec.approval else None,
        constitution_violations=[
            ViolationRow(article=v.article, code=v.code, detail=s.mask_text(v.detail), action=v.action)
            for v in sec.violations
        ],
        dropped_parameters=list(sec.dropped_parameters),
        guardian_action=g.action if g else "none",
        guardian_reason=g.reason_code if g else "",
        guardian_priority=g.priority if g else None,
        auth_result=a.result if a else "none",
        auth_reason=a.reason_code if a else "",
        auth_user_level=a.user_level if a else None,
        auth_required_level=a.required_level if a else None,
        execution_success=bool(results) and not failed,
        execution_result=s.mask_obj([r.model_dump(mode="json") for r in results]),
        execution_error=failed[0].error_code if failed else None,
        execution_skipped_reason=turn.execution.skipped_reason,
        tool_calls_executed=len(results),
        tool_errors=len(failed),
        final_response=s.mask_text(turn.response.text),
        response_kind="merged" if turn.context.debounce.get("role") == "absorbed" else turn.response.kind,
        response_sent=turn.response.sent,
        total_duration_ms=_total_ms(turn),
        processing_ms=round(sum(t.duration_ms for t in turn.timings.values()), 3),
        queued_ms=round(turn.budget.queued_ms, 3),
        backlogged=turn.budget.backlogged,
        llm_duration_ms=round(turn.usage.llm_duration_ms, 3),
        tool_duration_ms=round(sum(r.duration_ms for r in results), 3),
        timings={k: v.duration_ms for k, v in turn.timings.items()},
        self_critique_executed=sec.self_critique is not None,
        self_critique_result=(
            json.dumps(s.mask_obj(sec.self_critique), ensure_ascii=False)
            if sec.self_critique is not None
            else None
        ),
        step=turn.step,
        step_count=turn.step + 1,
        trail=[
            TrailRow(
                layer=e.layer,
                outcome=e.outcome,
                reason_code=e.reason_code,
                duration_ms=e.duration_ms,
                at=e.at,
                detail=s.mask_text(e.detail),
                revision=e.revision,
            )
            for e in turn.trail
        ],
        usage=UsageRow.model_validate(turn.usage.model_dump()),
        cache_hit_ratio=_cache_ratio(turn),
        cost_usd=round(turn.usage.cost_usd, 8),
        errors=[
            ErrorRow(
                code=e.code,
                category=e.category,
                severity=e.severity,
                layer=e.layer,
                message=s.mask_text(e.message),
                alert_admin=e.alert_admin,
            )
            for e in turn.errors
        ],
        shadow=turn.shadow,
        smoke=turn.smoke,
        job_id=turn.job_id,
        parent_turn_id=turn.parent_turn_id,
        revisions=_revisions(turn, revision),
        route=_route(turn, s),
        steps=steps,
        loop=loop_row(turn, steps, s),
        agent=agent_row(turn, s),
    )


def _route(turn: Turn, s: Sanitizer) -> RouteRow | None:
    r = turn.route
    if not r.source:  # no router ran (an envelope of an earlier version)
        return None
    return RouteRow(
        initial_route=initial_route(turn),
        source=r.source,
        confidence=r.confidence,
        reason=s.mask_text(r.reason),
        rule_id=r.rule_id,
        local_only=r.local_only,
        refused=r.refused,
        commands=list(r.commands),
        classifier_route=r.classifier_route,
        classifier_confidence=r.classifier_confidence,
        classifier_error=r.classifier_error,
        peers=list(r.peers),
    )


def observability_record(turn: Turn) -> dict[str, Any]:
    """The stored shape of ``build_record`` (kept for callers of the first version)."""
    from shared_lib.ids import utc_now

    return build_record(turn, recorded_at=utc_now()).store_doc()
