"""The heartbeat's due tasks (seed 001 §17), run by ``POST /tasks/heartbeat`` (Cloud Scheduler,
every 5 minutes) after the liveness check (``monitoring.heartbeat``).

Once per tick: the tick's claim (``heartbeat_ticks/{slot}``, ``idempotency.Claims``) is taken
first, so a retried or doubled scheduler call for the same slot finds it held or completed and
does nothing. Then, outside the quiet hours of the organisation's timezone:

* a reminder of each confirmation still waiting past ``remind_after`` (``state.due``), once per
  job, unless the chat already reminded the person (the session's ``reminded``); after it the
  session counts the job as reminded (seed 000 §5.1.7: reminded once);
* a check-in of each active goal whose deadline is near or whose progress is stale, once per
  goal per day of the organisation;
* the periodic tasks people gave it (``Hooks.heartbeat_tasks``, ``features.heartbeat_tasks``),
  each come due run once per due slot as a turn of its creator; one due in the quiet hours runs
  at the first tick after.

Each is one send through the conversation's channel, in the persona's Japanese (dates as
「11月25日（水）」), behind its own claim (``orgs/{org}/heartbeat_sends/{key}``) taken before and
completed after the send, under one idempotency key: a doubled call or a later tick sends
nothing twice, and a process killed mid-send sends again under the same key (the channels'
receivers drop it). Stored texts are masked: a placeholder reaches the person as words.

Waiting jobs and active goals of every organisation are read a page at a time
(``state.paging``, ``HeartbeatConfig.page_size``), at most ``pages_per_tick`` pages each per
tick, the rest from the same place at the next tick (``ops_state/heartbeat-scan-{name}``).

Then, every tick, quiet or not, the self-checks of §17.3 (``self_checks``: peer health,
configuration changes, a page of the memory index; the daily curation outside the quiet hours),
whose results go in the tick's record (its claim's result and the ``heartbeat_due`` log line).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from shared_lib import collections
from shared_lib.dates import display_date, display_time
from shared_lib.delivery.idempotency import Claims, ClaimState
from shared_lib.observability.logs import log_event
from shared_lib.ops import queries, self_checks
from shared_lib.ports import OutboundReply
from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.state import due, paging, session
from shared_lib.state.due import HeartbeatConfig

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime

SEND_LEASE = timedelta(minutes=2)
CLAIM_TTL = timedelta(days=3)
SCAN_CURSOR = "ops_state/heartbeat-scan-{name}"  # where a scan that a tick did not finish resumes


def run(rt: Runtime, cfg: HeartbeatConfig | None = None) -> dict[str, Any]:
    """The due tasks of the current tick; what it did, or why it did nothing."""
    cfg = cfg or HeartbeatConfig()
    now = rt.clock()
    tick = due.tick_of(now, cfg)
    claims = Claims(rt.store, ttl=CLAIM_TTL)
    path = collections.path("heartbeat_ticks", id=tick)
    claim = claims.claim(path, now=now, lease=timedelta(minutes=cfg.tick_minutes))
    if claim.state is not ClaimState.ACQUIRED:
        return {"tick": tick, "skipped": "done" if claim.state is ClaimState.COMPLETED else "running"}
    tz = queries.thresholds(rt.store).timezone
    result: dict[str, Any] = {"tick": tick, "timezone": tz}
    quiet = due.quiet(now, tz, cfg)
    if quiet:
        result["quiet"] = True
    else:
        result["reminders"] = _reminders(rt, claims, now, tz, cfg)
        result["checkins"] = _checkins(rt, claims, now, tz, cfg)
        if rt.hooks.heartbeat_tasks is not None:  # the periodic tasks people gave it
            result["tasks"] = rt.hooks.heartbeat_tasks(rt)
    result["checks"] = self_checks.run(rt, now, quiet=quiet)  # §17.3: alerts, never messages to people
    done = {k: v for k, v in result.items() if k != "timezone"}
    claims.complete(path, now=rt.clock(), result={"done": True, **done}, holder=claim.holder)
    log_event("heartbeat_due", layer="admin", **done)
    return result


def _reminders(rt: Runtime, claims: Claims, now: datetime, tz: str, cfg: HeartbeatConfig) -> dict[str, int]:
    counts: dict[str, int] = {}
    # the jobs that can still be answered: a pending job past its deadline stays "pending" in the
    # store until someone acts on it, so status alone would read every stale job of the retention
    rows = _paged(rt, "approval_jobs", where=[("decide_by", ">", now)], order_by="decide_by", cfg=cfg)
    for _, job in rows:
        if not due.due_reminder(job, now, cfg) or _reminded_in_chat(rt, job, now):
            continue
        org, job_id = str(job.get("org_id")), str(job.get("job_id"))
        until = job["decide_by"].astimezone(ZoneInfo(tz))
        text = rt.persona.message(
            "heartbeat_reminder",
            summary=_shown(job.get("summary")),
            until=display_time(until.time()),
            approval_id=job_id,
        )
        outcome = _send(rt, claims, job, f"reminder-{job_id}", text, now)
        if outcome == "sent" and job.get("conversation_key"):
            session.mark_reminded(rt.store, org, str(job["conversation_key"]), job_id, now)
        counts[outcome] = counts.get(outcome, 0) + 1
    return counts


def _paged(
    rt: Runtime, name: str, *, where: list[tuple[str, Any, Any]], order_by: str, cfg: HeartbeatConfig
) -> list[tuple[str, dict[str, Any]]]:
    """Every organisation's ``name`` documents a page at a time (``state.paging``): at most
    ``cfg.pages_per_tick`` pages this tick, from where the last tick stopped; the next tick goes
    on from here, and after the last page starts again from the first."""
    path = SCAN_CURSOR.format(name=name)
    saved = rt.store.get(path)
    cursor = paging.Cursor.from_doc(saved)
    if cursor.done:
        cursor = paging.Cursor.start()
    rows: list[tuple[str, dict[str, Any]]] = []
    for _ in range(cfg.pages_per_tick):
        got, cursor = paging.page(
            rt.store, name, where=where, order_by=order_by, size=cfg.page_size, cursor=cursor, group=True
        )
        rows.extend(got)
        if cursor.done:
            break
    if cursor.as_doc() != saved:  # a scan that fits one tick writes nothing after its first
        rt.store.set(path, cursor.as_doc())
    return rows


def _reminded_in_chat(rt: Runtime, job: dict[str, Any], now: datetime) -> bool:
    key = job.get("conversation_key")
    if not key:
        return False
    doc = session.load_session(rt.store, str(job.get("org_id")), str(key), now)
    return any(
        isinstance(p, dict) and p.get("approval_id") == job.get("job_id") and p.get("reminded")
        for p in doc.get("pending_actions") or []
    )


def _checkins(rt: Runtime, claims: Claims, now: datetime, tz: str, cfg: HeartbeatConfig) -> dict[str, int]:
    counts: dict[str, int] = {}
    today = now.astimezone(ZoneInfo(tz)).date()
    rows = _paged(rt, "goals", where=[("status", "==", "active")], order_by="created_at", cfg=cfg)
    for goal_id, goal in rows:
        reason = due.checkin_reason(goal, today, now, cfg)
        if reason is None:
            continue
        deadline = due.goal_deadline(goal)
        text = rt.persona.message(
            f"heartbeat_checkin_{reason}",
            title=_shown(goal.get("title")),
            deadline=display_date(deadline, today=today) if deadline else "",
            progress=int(goal.get("progress") or 0),
            days=due.days_since_progress(goal, now),
        )
        outcome = _send(rt, claims, goal, f"checkin-{goal_id}-{today:%Y%m%d}", text, now)
        counts[outcome] = counts.get(outcome, 0) + 1
    return counts


def _shown(value: object) -> str:
    """A stored (masked) text as a person may read it: any placeholder in words."""
    return Sanitizer.default().present(str(value or ""), own="")


def _send(rt: Runtime, claims: Claims, doc: dict[str, Any], key: str, text: str, now: datetime) -> str:
    """One send to the conversation ``doc`` names (its org, channel, room, person), once."""
    org, channel, room, user = (str(doc.get(k) or "") for k in ("org_id", "channel", "room_id", "user_id"))
    adapter = rt.channels.get(channel)
    if not (org and room and user) or adapter is None:
        return "unreachable"  # written before it kept its conversation's channel
    path = collections.path("heartbeat_sends", org=org, id=key)
    claim = claims.claim(path, now=now, lease=SEND_LEASE, fields={"at": now})
    if claim.state is not ClaimState.ACQUIRED:
        return "already"
    reply = OutboundReply(
        channel=channel, org_id=org, room_id=room, user_id=user, text=text, idempotency_key=f"heartbeat-{key}"
    )
    result = adapter.send(reply)
    if not result.ok:
        claims.release(path, holder=claim.holder)
        log_event("heartbeat_send_failed", layer="admin", severity="WARNING", key=key, error=result.error)
        return "failed"
    claims.complete(path, now=rt.clock(), result={"sent": True}, holder=claim.holder)
    return "sent"
