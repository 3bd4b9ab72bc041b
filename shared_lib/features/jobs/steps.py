"""A delegated job's turn through the chain (seed 001 §15, 002 §4.4, §6).

A job (``shared_lib.features.jobs.state``) runs as a turn of its own, published to
``turns.received`` with the turn id its job names (a second publish is the same turn, claimed
once by the layers), as its requester (``Turn.user_id``): the guardian and the gate judge every
step as for that person, never more. Here, what only a job's turn does:

* ``begin`` (context): the job is ``running``; a job already over (cancelled while queued) ends
  its turn at once;
* ``boundary`` (responder's loop controller): at each step the job's progress is written in one
  transaction and the watchdog decides whether it may take another step;
* ``conclude`` (responder): the result in the worker output contract, the final status, and the
  report into the parent's room, sent once per job (``report_once``, also used by the sweep and
  the operator's cancel) with the parent's reply handle, kept on the job when it delegated
  (``publish_delegated``); a report not sent stays due and the sweep sends it (``sweep``).

A job cannot ask anyone mid-run: a CONFIRM or a deny ends it.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from shared_lib import collections
from shared_lib.delivery.idempotency import Claims, ClaimState
from shared_lib.delivery.topology import TOPOLOGY
from shared_lib.features.jobs import state as agent_jobs
from shared_lib.loop.controller import LoopDecision
from shared_lib.observability.logs import log_event
from shared_lib.ports import OutboundReply
from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.turn.decisions import Outcome
from shared_lib.turn.envelope import JobSection, Turn
from shared_lib.turn.inbound import InboundMessage

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime

REPORT_TTL = timedelta(days=30)
# what the brain reads before a job's task: the task is work handed over, not a person's words
JOB_MARKER = "【任された仕事】"
TASK_SHOWN = 40  # characters of the task a report line names
# the persona's message for each way a job ends without its answer
STOPPED = {
    "step_limit": "job_stopped_step_limit",
    "cost_limit": "job_stopped_cost_limit",
    "deadline": "job_timed_out",
    "no_heartbeat": "job_timed_out",
    "operator": "job_cancelled_operator",
}


def job_turn(job: dict[str, Any], now: datetime) -> Turn:
    """The job's turn, from its document: the task (masked) is its message, the parent's room
    and channel are where it reports, the requester is whom it runs as."""
    job_id = str(job["job_id"])
    inbound = InboundMessage(
        channel=job["channel"],
        org_id=job["org_id"],
        room_id=job["room_id"],
        user_id=job["user_id"],
        text=JOB_MARKER + str(job.get("task") or ""),
        message_id=job_id,
        event_id=job_id,
        received_at=now,
    )
    turn = Turn.from_inbound(inbound, created_at=now)
    turn.turn_id = str(job.get("turn_id") or agent_jobs.turn_id_for(job_id))
    turn.conversation_key = str(job.get("conversation_key") or inbound.conversation_key)
    ends = job.get("ends_at")
    turn.job = JobSection(
        job_id=job_id,
        parent_turn_id=str(job.get("parent_turn_id") or ""),
        task=str(job.get("task") or ""),
        max_steps=int(job.get("max_steps") or 1),
        max_cost_usd=float(job.get("max_cost_usd") or 0.0),
        ends_at=ends if isinstance(ends, datetime) else None,
    )
    turn.deadline = ends if isinstance(ends, datetime) else None
    return turn


def publish(rt: Runtime, job: dict[str, Any]) -> str:
    """Publish the job's turn to ``turns.received``; the same job always names the same turn."""
    turn = job_turn(job, rt.clock())
    data, attrs = turn.to_message("jobs", rt.store, blob_ttl_days=rt.settings.blob_ttl_days)
    rt.bus.publish(TOPOLOGY.route("received", smoke=False), data, attrs, ordering_key=turn.conversation_key)
    log_event("job.started", turn=turn, layer="jobs", job_id=turn.job_id or "")
    return turn.turn_id


def started_reply(turn: Turn, rt: Runtime) -> str | None:
    """The parent's reply when its step delegated a job: started, and where the report comes."""
    for r in turn.execution.results:
        if r.ok and r.tool_name == agent_jobs.DELEGATE_TOOL and r.result.get("job_id"):
            return rt.persona.message("job_started", task=task_words(r.result))
    return None


def publish_delegated(turn: Turn, rt: Runtime) -> None:
    """After the executor's effects: publish the turn of each job this step delegated (a
    redelivered step publishes the same turn again, which the layers' claims absorb)."""
    for r in turn.execution.results:
        if r.ok and r.tool_name == agent_jobs.DELEGATE_TOOL and not r.dry_run and r.result.get("job_id"):
            job = agent_jobs.get(rt.store, turn.org_id, str(r.result["job_id"]))
            if job is not None and job.get("status") == "queued":
                if "reply_handle" not in job:  # the report goes where this reply goes (its thread)
                    kept = agent_jobs.keep_handle(turn.inbound.reply_handle, rt.cipher(turn.org_id))
                    kept |= {"thread_id": turn.inbound.thread_id} if turn.inbound.thread_id else {}
                    job |= kept
                    rt.store.set(agent_jobs.job_path(turn.org_id, job["job_id"]), kept, merge=True)
                publish(rt, job)


def begin(turn: Turn, rt: Runtime) -> Outcome | None:
    """The context layer's first look at a job's turn: running now, or already over."""
    if turn.step:
        return None
    job = agent_jobs.heartbeat(
        rt.store, turn.org_id, turn.delegated().job_id, steps=0, cost_usd=0.0, now=rt.clock()
    )
    if job is not None and job.get("status") == "running":
        return None
    if job is not None:
        report_once(rt, job, stopped_text(rt, job))
    return Outcome("job_over", reason_code="job.not_running", next_topic="completed")


def boundary(turn: Turn, rt: Runtime, decision: LoopDecision) -> LoopDecision:
    """A step of a job's turn ended: write its progress and let the watchdog decide. The loop's
    own stop at ``max_loops`` (the job's ``max_steps``) is the step limit."""
    job_id, now = turn.delegated().job_id, rt.clock()
    steps, cost = len(turn.loop.steps) + 1, turn.usage.cost_usd
    job = agent_jobs.heartbeat(rt.store, turn.org_id, job_id, steps=steps, cost_usd=cost, now=now)
    log_event("job.step", turn=turn, layer="responder", job_id=job_id, steps=steps, cost_usd=round(cost, 6))
    if job is None or job.get("status") not in agent_jobs.LIVE:
        return LoopDecision("stop", "job_over", decision.worker, detail=str((job or {}).get("status")))
    if decision.action == "stop" and decision.reason != "max_loops":
        return decision
    stop = agent_jobs.step_stop(job, steps_done=steps, cost_usd=cost, now=now)
    if decision.reason == "max_loops" and stop is None:
        stop = agent_jobs.Stop("cancelled", "step_limit")
    if stop is None:
        return decision
    agent_jobs.finish(rt.store, turn.org_id, job_id, status=stop.status, reason=stop.reason, now=now)
    log_event(
        "job.cancelled", turn=turn, layer="responder", job_id=job_id, status=stop.status, reason=stop.reason
    )
    return LoopDecision("stop", f"job.{stop.reason}", decision.worker, detail=stop.status)


def _outcome(turn: Turn, kind: str) -> tuple[str, str]:
    """(status, reason) of a job whose turn ended with a reply of ``kind``."""
    g, reason = turn.guardian, turn.loop.stop_reason or ""
    if kind == "deny":
        return "denied", turn.authorization.reason_code if turn.authorization else "denied"
    if kind == "block":
        return "failed", g.reason_code if g else "blocked"
    if kind in ("confirm", "clarify") or reason == "need_user_confirmation":
        return "failed", f"needs_user:{g.reason_code if g and g.action == 'confirm' else reason}"
    if kind == "error" or reason == "worker_failure" or any(not r.ok for r in turn.execution.results):
        return "failed", reason or "error"
    return "succeeded", reason or "done"


def conclude(turn: Turn, rt: Runtime, kind: str, text: str) -> tuple[str, str, str]:
    """The job's end: its result recorded (worker output contract), its status, and the report
    text for the parent's room. ``(kind, text)`` of the report, and the job's final status."""
    job_id, now = turn.delegated().job_id, rt.clock()
    worker = turn.loop.worker
    result = (worker.model_dump(mode="json") if worker else {}) | {"result": text[:2000]}
    status, reason = _outcome(turn, kind)
    done = agent_jobs.finish(
        rt.store, turn.org_id, job_id, status=status, reason=reason, now=now, result=result
    )
    job = done or agent_jobs.get(rt.store, turn.org_id, job_id) or {}
    final = str(job.get("status") or status)
    log_event(
        "job.finished", turn=turn, layer="responder", job_id=job_id, status=final, reason=job.get("reason")
    )
    if final == "succeeded":
        return "reply", rt.persona.message("job_report", task=task_words(job), text=text), final
    return "block", stopped_text(rt, job), final


def report_text(rt: Runtime, job: dict[str, Any]) -> str:
    """A final job's report from its document (what the sweep sends when it is still due)."""
    if job.get("status") == "succeeded":
        answer = str((job.get("result") or {}).get("result") or "")
        return rt.persona.message("job_report", task=task_words(job), text=answer)
    return stopped_text(rt, job)


def stopped_text(rt: Runtime, job: dict[str, Any]) -> str:
    """What the requester reads of a job that ended without its answer."""
    status, reason = str(job.get("status")), str(job.get("reason") or "")
    key = STOPPED.get(reason) or {"denied": "job_denied"}.get(status) or "job_failed"
    if status == "failed" and reason.startswith("needs_user"):
        key = "job_needs_confirmation"
    return rt.persona.message(key, task=task_words(job))


def task_words(job: dict[str, Any]) -> str:
    """The task as a report line names it: short, placeholders in words."""
    task = Sanitizer.default().present(str(job.get("task") or ""), own="")
    return task if len(task) <= TASK_SHOWN else task[: TASK_SHOWN - 1] + "…"


def report_once(rt: Runtime, job: dict[str, Any], text: str) -> bool:
    """Send a job's report into its parent's room, once per job whoever sends it (the job's
    turn, the sweep, a cancel noticed later). ``True`` when it is (or already was) sent."""
    org, job_id = str(job["org_id"]), str(job["job_id"])
    path = collections.path("send_receipts", org=org, id=f"{job_id}-report")
    receipts = Claims(rt.store, ttl=REPORT_TTL, in_progress="sending", completed="sent")
    claim = receipts.claim(
        path, now=rt.clock(), lease=timedelta(0), fields={"at": rt.clock(), "job_id": job_id}
    )
    if claim.state is ClaimState.COMPLETED:
        if job.get("report_pending"):  # sent, but not yet noted on the job
            rt.store.set(agent_jobs.job_path(org, job_id), {"report_pending": False}, merge=True)
        return True
    channel = rt.channels.get(str(job.get("channel")))
    handle = agent_jobs.reply_handle(job, rt.cipher(org))
    if channel is None or handle is None:  # still due: the sweep's process has both
        error = "no channel" if channel is None else "no vault key to open the reply handle"
        receipts.fail(path, error=error)
        log_event("job.report_failed", layer="jobs", severity="WARNING", job_id=job_id, error=error)
        return False
    shown = Sanitizer.default().present(text, own="")
    result = channel.send(
        OutboundReply(
            channel=job["channel"],
            org_id=org,
            room_id=str(job["room_id"]),
            thread_id=job.get("thread_id") or None,
            user_id=str(job["user_id"]),
            reply_handle=handle,
            text=shown,
            idempotency_key=f"{job_id}-report",
        )
    )
    if not result.ok:  # still due: the sweep sends it again, under the same key
        receipts.fail(path, error=result.error or f"status {result.status}")
        log_event("job.report_failed", layer="jobs", severity="WARNING", job_id=job_id, error=result.error)
        return False
    receipts.complete(path, now=rt.clock(), fields={"at": rt.clock(), "job_id": job_id})
    rt.store.set(
        agent_jobs.job_path(org, job_id), {"reported_at": rt.clock(), "report_pending": False}, merge=True
    )
    return True


def cancel(rt: Runtime, org_id: str, job_id: str, *, by: str) -> dict[str, Any]:
    """An operator's cancel (``charter jobs cancel``, the dashboard): the job is ``cancelled``
    (its turn runs nothing more) and the requester is told once. ``JobError``: unknown or over."""
    job = agent_jobs.cancel(rt.store, org_id, job_id, by=by, now=rt.clock())
    log_event(
        "job.cancelled", layer="jobs", job_id=job_id, org_id=org_id, status="cancelled", reason="operator"
    )
    report_once(rt, job, stopped_text(rt, job))
    return job


def sweep(rt: Runtime) -> dict[str, int]:
    """The minute's watchdog sweep (``POST /tasks/jobs/watchdog``), bounded and idempotent per
    job: a queued job whose turn never started is published again (the same turn), a live job
    past its deadline or without a heartbeat is ``timed_out`` and reported, and a report still
    due (its send failed, or its turn died) is sent (``report_once``: once, same key)."""
    limits, now = agent_jobs.load_limits(), rt.clock()
    rows = rt.store.query(
        "agent_jobs", where=[("status", "in", sorted(agent_jobs.LIVE))], group=True, limit=limits.sweep_limit
    )
    counts = {"seen": len(rows), "republished": 0, "timed_out": 0}
    for _, job in rows:
        action, reason = agent_jobs.sweep_action(job, now, limits)
        if action == "republish":
            publish(rt, job)
            counts["republished"] += 1
        elif action == "timed_out":
            done = agent_jobs.finish(
                rt.store, str(job["org_id"]), str(job["job_id"]), status="timed_out", reason=reason, now=now
            )
            if done is not None:
                log_event(
                    "job.cancelled", layer="jobs", job_id=done["job_id"], status="timed_out", reason=reason
                )
                report_once(rt, done, stopped_text(rt, done))
                counts["timed_out"] += 1
    return counts | _resend_reports(rt, limits.sweep_limit)


def _resend_reports(rt: Runtime, limit: int) -> dict[str, int]:
    now = rt.clock()
    due = rt.store.query("agent_jobs", where=[("report_pending", "==", True)], group=True, limit=limit)
    counts = {"reports_due": len(due), "reported": 0, "reports_given_up": 0}
    for _, job in due:
        action = agent_jobs.report_action(job, now)
        if action == "send" and report_once(rt, job, report_text(rt, job)):
            counts["reported"] += 1
        elif action == "give_up":
            path = agent_jobs.job_path(str(job["org_id"]), str(job["job_id"]))
            rt.store.set(path, {"report_pending": False, "report_given_up_at": now}, merge=True)
            log_event("job.report_given_up", layer="jobs", severity="WARNING", job_id=job["job_id"])
            counts["reports_given_up"] += 1
    return counts
