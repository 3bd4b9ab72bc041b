"""What the heartbeat finds due (seed 001 §17): reminders of confirmations still waiting and
check-ins on goals, and when it must keep quiet. Fixed logic over documents and a clock; the
heartbeat task (``shared_lib.ops.due_tasks``) reads the documents and sends.

* **Reminder**: an approval job still ``pending`` (``state.jobs.live``) that has waited at least
  ``remind_after`` and whose deadline has not passed. It is reminded once: the send's claim is
  keyed by the job, and the session's ``reminded`` (the chat's own reminder, seed 000 §5.1.7)
  counts as reminded already.
* **Check-in**: an ``active`` goal whose deadline is within ``checkin_before_days`` (and not
  past), or with no progress reported for ``stale_after_days``; one per goal per day of the
  organisation (the claim's key holds the day). A goal that is done or deleted never is.
* **Quiet hours** (§17.4): nothing is sent from ``quiet_start`` to ``quiet_end`` o'clock in the
  organisation's timezone (23:00–08:00 by default); what is due then is sent at the first tick
  after.
* **Tick**: the scheduled slot of ``tick_minutes`` (Cloud Scheduler's 5 minutes) a call
  belongs to; a retried or doubled call for the same slot finds its claim and does nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo

from shared_lib.features.approvals.store import live


@dataclass(frozen=True)
class HeartbeatConfig:
    """The heartbeat's knobs (constants here rather than a file: config/memory.json is the
    memory's; these are read only by the heartbeat task). Tests pass their own."""

    tick_minutes: int = 5  # Cloud Scheduler's interval (terraform/modules/scheduler)
    # a pending confirmation lives 10 minutes (policy confirmation.pending_ttl_minutes): a
    # reminder halfway leaves time to answer
    remind_after: timedelta = timedelta(minutes=5)
    checkin_before_days: int = 3
    stale_after_days: int = 7
    quiet_start: int = 23
    quiet_end: int = 8
    # every organisation's waiting jobs, goals and tasks are read a page at a time
    # (``state.paging``); a tick reads at most ``pages_per_tick`` pages of each and resumes after
    page_size: int = 200
    pages_per_tick: int = 25


CheckinReason = Literal["deadline", "stale"]


def tick_of(now: datetime, cfg: HeartbeatConfig) -> str:
    """The slot ``now`` falls in, as an id: ``20261125T1005`` for 10:05–10:09 UTC."""
    utc = now.astimezone(UTC)
    return utc.replace(minute=utc.minute - utc.minute % cfg.tick_minutes).strftime("%Y%m%dT%H%M")


def quiet(now: datetime, tz: str, cfg: HeartbeatConfig) -> bool:
    """Within the quiet hours of ``tz`` (a window over midnight when ``quiet_start > quiet_end``)."""
    hour = now.astimezone(ZoneInfo(tz)).hour
    if cfg.quiet_start > cfg.quiet_end:
        return hour >= cfg.quiet_start or hour < cfg.quiet_end
    return cfg.quiet_start <= hour < cfg.quiet_end


def due_reminder(job: dict[str, Any], now: datetime, cfg: HeartbeatConfig) -> bool:
    """The job still waits, long enough to remind, and can still be answered."""
    requested, deadline = job.get("requested_at"), job.get("decide_by")
    return (
        live(job, now)["status"] == "pending"
        and isinstance(requested, datetime)
        and isinstance(deadline, datetime)
        and now - requested >= cfg.remind_after
    )


def goal_deadline(goal: dict[str, Any]) -> date | None:
    try:
        return date.fromisoformat(str(goal.get("deadline") or ""))
    except ValueError:
        return None


def _last_progress(goal: dict[str, Any]) -> datetime | None:
    said = [r.get("at") for r in goal.get("reports") or [] if isinstance(r, dict)]
    times = [t for t in [*said, goal.get("updated_at"), goal.get("created_at")] if isinstance(t, datetime)]
    return max(times) if times else None


def checkin_reason(
    goal: dict[str, Any], today: date, now: datetime, cfg: HeartbeatConfig
) -> CheckinReason | None:
    """Why ``goal`` gets a check-in ``today`` (the organisation's day), or ``None``."""
    if goal.get("status") != "active":
        return None
    deadline = goal_deadline(goal)
    if deadline is not None and today <= deadline <= today + timedelta(days=cfg.checkin_before_days):
        return "deadline"
    last = _last_progress(goal)
    if last is not None and now - last >= timedelta(days=cfg.stale_after_days):
        return "stale"
    return None


def days_since_progress(goal: dict[str, Any], now: datetime) -> int:
    last = _last_progress(goal)
    return (now - last).days if last else 0
