"""The steps and the loop of a turn in its observability record (seed 002 §3, §7.1-7.2).

A turn of several steps keeps its finished steps in ``turn.loop.steps`` and its last step in
the usual sections (``proposal``, ``guardian``, ``authorization``, ``execution``). The record
has one ``StepRow`` per step in order (a single-step turn has one) and one ``LoopRow``: why
the loop stopped and the §7.1 events with their §7.2 fields. The loop controller writes the
``worker.*``, ``route.override``, ``loop.stop`` and ``final.route`` events; the record adds the
router's own, ``router.decision`` (every turn a router decided) and ``classifier.error``,
from ``turn.route``. ``AgentRow`` is the seed 004 agent state after the turn, with the transition
taken and the refused ones (``turn.agent``). A step row keeps the seed 004 §7 checks the step
gave (``goal_consistency``, ``constraint_check``, ``next_step``, ``prompt_pattern``). Every text is
masked.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.turn.envelope import StepRecord, Turn


class RecordRow(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SelectedTool(RecordRow):
    tool_name: str = Field(description="Tool the proposal selected.")
    parameters: dict[str, Any] = Field(default_factory=dict, description="Candidate parameters (masked).")


class StepRow(RecordRow):
    step: int = Field(description="The step's number in the loop (1-based).")
    turn_id: str = Field(description="Turn that ran the step (a resumed loop carries the paused turn's).")
    arm: str = Field(default="", description="Arm that proposed the step.")
    model: str | None = Field(default=None, description="Model that proposed the step.")
    route: str = Field(default="CHAT", description="Route the step ran on.")
    output_type: str | None = Field(
        default=None, description="tool_call, text_response or clarification_needed."
    )
    tools: list[str] = Field(default_factory=list, description="Names of the tools the step proposed.")
    tool_calls: list[SelectedTool] = Field(
        default_factory=list, description="The step's tool calls with their parameters (masked)."
    )
    proposal: dict[str, Any] | None = Field(
        default=None, description="The step's whole proposal (masked; charter replay judges each step)."
    )
    verdict: str = Field(default="none", description="Guardian action on the step, none when skipped.")
    verdict_reason: str = Field(default="", description="Guardian reason code.")
    authorization: str = Field(default="none", description="Authorization result, none when skipped.")
    authorization_reason: str = Field(default="", description="Authorization reason code.")
    ok: bool = Field(default=True, description="Every tool result of the step is ok (true when none ran).")
    error_code: str | None = Field(default=None, description="Error code of the step's first failed tool.")
    results: list[dict[str, Any]] = Field(
        default_factory=list, description="The step's tool results (masked)."
    )
    needs_next_loop: bool = Field(default=False, description="The step's hand-over asked for another step.")
    risk: str = Field(default="low", description="Risk the step's hand-over declared.")
    fit: bool | None = Field(default=None, description="Whether the step judged its route fit.")
    confidence: float = Field(default=0.0, description="Overall confidence of the step's proposal.")
    why: str = Field(default="", description="Why the step asked for another (masked).")
    goal_consistency: str | None = Field(
        default=None, description="Seed 004 §7: does the step serve the goal, yes/no and why (masked)."
    )
    constraint_check: str | None = Field(
        default=None, description="Seed 004 §7: does it keep the constraints, yes/no and why (masked)."
    )
    next_step: str | None = Field(
        default=None,
        description="Seed 004 §7: what the step said follows: done, pending_user, defer, continue.",
    )
    prompt_pattern: str | None = Field(
        default=None,
        description="Seed 004 §7: the prompt pattern it asked for (base_main, base_main_specialized).",
    )
    input_tokens: int = Field(default=0, description="Uncached input tokens of the step's brain calls.")
    output_tokens: int = Field(default=0, description="Output tokens of the step's brain calls.")
    cache_read_input_tokens: int = Field(default=0, description="Prompt-cache reads of the step.")
    cache_creation_input_tokens: int = Field(default=0, description="Prompt-cache writes of the step.")


class EventRow(RecordRow):
    event: str = Field(description="Seed 002 §7.1 event: router.decision, worker.success, loop.stop, ...")
    step: int = Field(default=1, description="Step the event belongs to (1-based).")
    initial_route: str | None = Field(default=None, description="Route the router decided for the input.")
    final_route: str | None = Field(default=None, description="Route the turn ended on.")
    route: str | None = Field(default=None, description="Route of the step (worker events).")
    source: str | None = Field(default=None, description="What decided the route (router.decision).")
    confidence: float | None = Field(default=None, description="Confidence of the route or the step.")
    classifier_route: str | None = Field(default=None, description="Route the classifier proposed.")
    classifier_confidence: float | None = Field(default=None, description="The classifier's confidence.")
    worker_calls: int | None = Field(default=None, description="Steps of the turn that ran tools.")
    needs_next_loop: bool | None = Field(default=None, description="The step asked for another step.")
    risk: str | None = Field(default=None, description="Risk the step declared.")
    fit: bool | None = Field(default=None, description="Whether the step judged its route fit.")
    reroute_used: bool | None = Field(default=None, description="The turn took its one re-route.")
    stop_reason: str | None = Field(default=None, description="Why the loop stopped.")
    error_reason: str | None = Field(
        default=None, description="Why a worker or the classifier failed (masked)."
    )
    detail: str | None = Field(default=None, description="Short detail (masked).")
    job_id: str | None = Field(
        default=None, description="Approval job of an approval.* event (seed 002 §7.3)."
    )
    approval_status: str | None = Field(
        default=None, description="The job's status: pending, granted, denied, auto_approved, expired."
    )
    approval_requested_at: str | None = Field(default=None, description="When the approval was asked (ISO).")
    approval_decided_at: str | None = Field(default=None, description="When the job was decided (ISO).")
    approver: str | None = Field(default=None, description="User id of the person who answered the job.")
    coder_output: str | None = Field(default=None, description="Summary of what the job does (masked).")
    other: dict[str, Any] = Field(default_factory=dict, description="Further fields of the event (masked).")


class LoopRow(RecordRow):
    stop_reason: str | None = Field(default=None, description="Why the loop stopped (done, max_loops, ...).")
    stop_detail: str = Field(default="", description="Detail of the stop (masked).")
    resumed_from: str | None = Field(default=None, description="Paused turn this loop resumed after a yes.")
    reroute_used: bool = Field(default=False, description="The turn took its one re-route.")
    reroute_refused: str | None = Field(
        default=None, description="A re-route the step asked for and the controller refused, and why."
    )
    worker_calls: int = Field(default=0, description="Steps of the turn that ran tools.")
    events: list[EventRow] = Field(default_factory=list, description="The §7.1 events of the turn, in order.")


def _step_row(s: Sanitizer, r: StepRecord, worker: dict[str, Any]) -> StepRow:
    calls = r.proposal.tool_calls if r.proposal is not None else []
    g, a = r.guardian, r.authorization
    failed = next((x for x in r.results if not x.ok), None)
    return StepRow(
        **r.model_dump(include={"step", "turn_id", "arm", "model", "route"}),
        output_type=r.proposal.output_type if r.proposal is not None else None,
        tools=[c.tool_name for c in calls],
        tool_calls=[SelectedTool(tool_name=c.tool_name, parameters=s.mask_obj(c.parameters)) for c in calls],
        proposal=s.mask_obj(r.proposal.model_dump(mode="json")) if r.proposal is not None else None,
        verdict=g.action if g is not None else "none",
        verdict_reason=g.reason_code if g is not None else "",
        authorization=a.result if a is not None else "none",
        authorization_reason=a.reason_code if a is not None else "",
        ok=failed is None,
        error_code=failed.error_code if failed is not None else None,
        results=s.mask_obj([x.model_dump(mode="json") for x in r.results]),
        needs_next_loop=bool(worker.get("needs_next_loop")),
        risk=str(worker.get("risk") or "low"),
        fit=worker.get("fit"),
        confidence=float(worker.get("confidence") or 0.0),
        why=s.mask_text(str(worker.get("why") or "")),
        **_checks(s, r),
        **r.usage.model_dump(
            include={
                "input_tokens",
                "output_tokens",
                "cache_read_input_tokens",
                "cache_creation_input_tokens",
            }
        ),
    )


def _checks(s: Sanitizer, r: StepRecord) -> dict[str, Any]:
    """The step's seed 004 §7 fields as it gave them (already validated), the texts masked."""
    root = r.proposal.root if r.proposal is not None else None
    if root is None:
        return {}
    texts = {k: getattr(root, k) for k in ("goal_consistency", "constraint_check")}
    return {
        **{k: s.mask_text(v) if v is not None else None for k, v in texts.items()},
        "next_step": root.next_step,
        "prompt_pattern": root.prompt_pattern,
    }


def step_rows(turn: Turn, s: Sanitizer) -> list[StepRow]:
    """One row per step: the finished ones of ``turn.loop.steps``, then the last one, which is in
    the turn's sections (``Turn.current_step``, what the loop controller moves into the steps)."""
    rows = [_step_row(s, r, r.worker.model_dump()) for r in turn.loop.steps]
    last = turn.current_step(turn.loop.worker)  # the controller's checked hand-over of the last step
    return [*rows, _step_row(s, last, last.worker.model_dump())]


def initial_route(turn: Turn) -> str:
    """The route the router decided for the input (a re-route moves ``turn.route.route``)."""
    override = next((e for e in turn.loop.events if e.get("event") == "route.override"), None)
    if override is not None and isinstance(override.get("initial_route"), str):
        return str(override["initial_route"])
    return turn.loop.steps[0].route if turn.loop.steps else turn.route.route


def _router_events(turn: Turn, first_step: int) -> list[dict[str, Any]]:
    r = turn.route
    if not r.source:  # no router ran (an envelope of an earlier version)
        return []
    classifier = {
        "classifier_route": getattr(r, "classifier_route", None),
        "classifier_confidence": getattr(r, "classifier_confidence", None),
    }
    events: list[dict[str, Any]] = [
        {
            "event": "router.decision",
            "step": first_step,
            "initial_route": initial_route(turn),
            "source": r.source,
            "confidence": r.confidence,
            **classifier,
            "detail": r.rule_id or r.reason,
        }
    ]
    if error := getattr(r, "classifier_error", None):
        events.append({"event": "classifier.error", "step": first_step, **classifier, "error_reason": error})
    return events


def _event_row(event: dict[str, Any], s: Sanitizer) -> EventRow:
    masked = s.mask_obj(event)
    known = {k: v for k, v in masked.items() if k in EventRow.model_fields and k != "other"}
    other = {k: v for k, v in masked.items() if k not in known}
    try:
        return EventRow.model_validate({**known, "other": other})
    except ValidationError:  # a field of an unexpected type is kept, never lost nor fatal
        return EventRow(event=str(masked.get("event") or "unknown"), other=masked)


def loop_row(turn: Turn, steps: list[StepRow], s: Sanitizer) -> LoopRow:
    """The loop's stop and events: the router's first, then the controller's."""
    loop = turn.loop
    carried = sum(1 for row in steps if row.turn_id != turn.turn_id)  # a resumed loop's earlier steps
    events = [*_router_events(turn, carried + 1), *loop.events]
    final = next((e for e in reversed(loop.events) if e.get("event") == "final.route"), None)
    calls = final.get("worker_calls") if final is not None else None
    return LoopRow(
        stop_reason=loop.stop_reason,
        stop_detail=s.mask_text(loop.stop_detail),
        resumed_from=loop.resumed_from,
        reroute_used=loop.reroute_used,
        reroute_refused=loop.reroute_refused,
        worker_calls=calls if isinstance(calls, int) else sum(1 for row in steps if row.results),
        events=[_event_row(e, s) for e in events],
    )


class TransitionRow(RecordRow):
    from_step: str = Field(description="Step before the transition (seed 004 §4.1).")
    to_step: str = Field(description="Step the transition goes to.")
    by: str = Field(description="Who decided it: code (the charter) or llm (a proposed state_update).")
    reason: str = Field(default="", description="Its cause when taken; why it was refused otherwise.")


class AgentRow(RecordRow):
    goal: str = Field(default="", description="The conversation's goal after the turn (masked).")
    why_now: str = Field(default="", description="Why it is done now (masked).")
    constraints: list[str] = Field(default_factory=list, description="At most 2 constraints (masked).")
    plan_brief: list[str] = Field(default_factory=list, description="At most 3 moves of the plan (masked).")
    open_questions: list[str] = Field(default_factory=list, description="At most 2 open questions (masked).")
    step: str = Field(default="", description="Step after the turn: PLANNING, EXECUTION, REVIEW, ...")
    status: str = Field(default="", description="Status after the turn: IN_PROGRESS, SUCCESS, ERROR, ...")
    pending_gate: bool = Field(default=False, description="An approval is pending.")
    last_delta: str = Field(default="", description="What the turn changed, one line (masked).")
    transition: list[TransitionRow] = Field(
        default_factory=list,
        description="The step transitions the turn took (the LLM's at most one, the code's one per step).",
    )
    refused: list[TransitionRow] = Field(
        default_factory=list, description="Transitions refused (not in the table, a second one, ...)."
    )
    applied: bool = Field(default=False, description="The turn wrote the state (false: nothing to apply).")


def agent_row(turn: Turn, s: Sanitizer) -> AgentRow:
    """The agent state after the turn (seed 004), its transition and the refused ones, masked."""
    a = turn.agent
    keep = {k: v for k, v in a.state.items() if k in AgentRow.model_fields}
    return AgentRow(
        **s.mask_obj(keep),
        transition=[TransitionRow(**t.model_dump(mode="json")) for t in a.transition],
        refused=[TransitionRow(**t.model_dump(mode="json")) for t in a.refused],
        applied=a.applied,
    )
