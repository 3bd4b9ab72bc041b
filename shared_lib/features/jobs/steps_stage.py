"""The delegated jobs' steps of the stages (``MANIFEST.steps``; the stage table orders them): a
job's turn begins, may never delegate again (the guardian's and the gate's rule), runs no effect
once its job stopped, takes its steps under its own limits and the watchdog, and ends with its
report in the parent's room; a person's step that delegated publishes the job and says it
started. Cost: one job read at the start and per step (the heartbeat), the job's final write and
one read for the report; none on a person's turn that delegates nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_lib import loop
from shared_lib.features.jobs import state as agent_jobs
from shared_lib.features.jobs import steps as job_turns
from shared_lib.layers import executor, guardian, responder
from shared_lib.turn.decisions import AuthDecision, Outcome, Verdict
from shared_lib.turn.envelope import Turn
from shared_lib.turn.stages import after, amend, answer

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime

# A job's loop runs within its own deadline (``ends_at``, the watchdog), not a person's turn budget.
JOB_MAX_MILLIS = agent_jobs.load_limits().max_seconds * 1000


def _delegates(turn: Turn) -> bool:
    p = turn.proposal.proposal
    return p is not None and agent_jobs.delegates(c.tool_name for c in p.tool_calls)


def no_nested_verdict(turn: Turn, rt: Runtime, outcome: Outcome) -> Outcome:
    """A job's turn may never delegate again (depth 1); a constitution block stays first."""
    g = turn.guardian
    if g is None or not _delegates(turn) or (g.blocked and g.reason_code.startswith("constitution.")):
        return outcome
    turn.guardian = Verdict.block(
        agent_jobs.NESTED, priority=1, message="任された仕事からさらに任せることはできません"
    )
    return guardian.verdict_outcome(turn.guardian)


def no_nested_gate(turn: Turn, rt: Runtime, outcome: Outcome) -> Outcome:
    """The gate denies a job's turn that delegates, whatever the guardian said."""
    if not _delegates(turn) or (turn.guardian is not None and turn.guardian.blocked):
        return outcome
    turn.authorization = AuthDecision.denied(agent_jobs.NESTED, message="deny")
    return Outcome("denied", reason_code=agent_jobs.NESTED)


def live(turn: Turn, rt: Runtime) -> Outcome | None:
    """A job cancelled or timed out between its steps runs no effect."""
    if agent_jobs.is_running(rt.store, turn.org_id, turn.delegated().job_id):
        return None
    return executor.skipped(turn, "job.not_running")


def publish_delegated(turn: Turn, rt: Runtime, outcome: Outcome) -> None:
    job_turns.publish_delegated(turn, rt)


def next_step(turn: Turn, rt: Runtime) -> Outcome | None:
    """A job's step: its own step limit and deadline, the watchdog at every step."""
    limits = loop.LoopLimits(max_loops=turn.delegated().max_steps, max_millis=JOB_MAX_MILLIS)
    return responder.take_or_stop(turn, rt, limits, boundary=job_turns.boundary)


def started(turn: Turn, rt: Runtime, outcome: Outcome) -> Outcome:
    """The parent's reply when its step delegated a job: started, and where the report comes."""
    if turn.response.kind == "reply" and not turn.response.text:
        turn.response.text = job_turns.started_reply(turn, rt) or ""
    return outcome


def conclude(turn: Turn, rt: Runtime, outcome: Outcome) -> Outcome:
    """The job's end: its status recorded; the reply becomes the report for the parent's room."""
    res = turn.response
    kind, res.text, status = job_turns.conclude(turn, rt, res.kind, res.text)
    res.kind = kind  # type: ignore[assignment]
    return Outcome("sent", reason_code=f"job.{status or 'unknown'}", detail=f"{len(res.text)} chars")


def report(turn: Turn, rt: Runtime, outcome: Outcome) -> None:
    """The report, once, into the parent's room (the job read once more: the after step's own)."""
    job = agent_jobs.get(rt.store, turn.org_id, turn.delegated().job_id) or {}
    turn.response.sent = job_turns.report_once(rt, job, turn.response.text) if job else False


STEPS = (
    answer("jobs.begin", job_turns.begin, on_job="only", effects=True),
    amend("jobs.no_nesting", no_nested_verdict, on_job="only"),
    amend("jobs.no_nesting_gate", no_nested_gate, on_job="only"),
    answer("jobs.live", live, on_job="only"),
    after("jobs.publish_delegated", publish_delegated),
    answer("jobs.next_step", next_step, on_job="only", effects=True),
    amend("jobs.started", started),
    amend("jobs.conclude", conclude, on_job="only", effects=True),
    after("jobs.report", report, on_job="only"),
)
