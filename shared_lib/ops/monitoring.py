"""Monitoring jobs and the dashboard's numbers (seed 000 §15).

* ``today_panel`` — the §15.2 panel: conversations (distinct org/room/user, not turns),
  turns, average response time, mean
  confidence, confirmations and blocks (count and share), cost today, this month and the
  month's projection; ``chart_series`` — the §15.1 metrics hour by hour. Both read the
  observer's roll-ups (``state.rollups``), never the records: a dashboard refresh reads a
  number of documents independent of the number of turns. Views longer than the roll-ups'
  year, or across organisations by any other key, are BigQuery's (``turn_daily`` view,
  ``terraform/modules/bigquery``).
* ``check_thresholds`` — the §15.1 metrics over the last window, per organisation and
  overall; a crossed threshold raises one alert per metric, scope and window.
* ``cost_check`` — the §14.3 daily cost check (scheduler, just after midnight): alerts
  over the budget; over ``CHARTER_DAILY_HARD_LIMIT_USD`` it also stops the LLM (kill switch).
* ``heartbeat`` — publishes a synthetic event and checks the previous one reached the
  observer; delivers stored alerts nobody delivered yet; runs ``check_thresholds``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from shared_lib.delivery import intake
from shared_lib.observability.logs import log_event
from shared_lib.ops import controls, due_tasks, queries
from shared_lib.ops.cost import cost_report
from shared_lib.ops.metrics import Thresholds, WindowStats, breaches, bucket_stats, window_stats
from shared_lib.state import rollups
from shared_lib.telemetry import alerts

if TYPE_CHECKING:
    from datetime import datetime

    from shared_lib.runtime import Runtime

HEARTBEAT_DOC = "ops_state/heartbeat"


def today_panel(rt: Runtime, *, org: str | None = None) -> dict[str, Any]:
    """Today's §15.2 panel from the roll-ups of the month: one read of the thresholds and one
    query of at most 31 documents per organisation, whatever the number of turns."""
    now = rt.clock()
    th = queries.thresholds(rt.store)
    today = queries.local_day(now, th.timezone)
    start, end = queries.day_bounds(today, th.timezone)
    month = rollups.read_days(rt.store, queries.month_start(today), today, org=org)
    day_totals = rollups.total(d["totals"] for d in month if d.get("day") == today.isoformat())
    stats = bucket_stats(day_totals, start, end)
    cost = cost_report(rt.store, now=now, org=org, th=th, month=month)
    return {
        "day": cost.day.isoformat(),
        "timezone": th.timezone,
        # distinct conversations (org/room/user) with a served turn today; ``turns`` counts turns
        "conversations": day_totals["conversations"],
        "turns": stats.turns,
        "avg_response_ms": stats.avg_response_ms,
        "mean_confidence": stats.mean_confidence,
        "confirmations": stats.confirmations,
        "confirmation_rate": stats.confirmation_rate,
        "blocks": stats.blocks,
        "block_rate": stats.block_rate,
        "denials": stats.denials,
        "tool_error_rate": stats.tool_error_rate,
        "llm_latency_ms_p95": stats.llm_latency_ms_p95,
        "cost": cost.as_dict(),
        "thresholds": th.model_dump(),
    }


def chart_series(
    rt: Runtime,
    *,
    hours: int = 24,
    step_minutes: int = 60,
    org: str | None = None,
    th: Thresholds | None = None,
) -> list[WindowStats]:
    """Windows of ``step_minutes`` (rounded up to whole hours: the roll-ups are hourly) over the
    last ``hours``, up to the end of the current local hour, summed from the roll-ups' hourly
    buckets (one query: a document per organisation and day)."""
    th = th or queries.thresholds(rt.store)
    now = rt.clock()
    day, hour = rollups.slot(now, th.timezone)
    end = rollups.day_start(day, th.timezone) + timedelta(hours=hour + 1)
    start = end - timedelta(hours=hours)
    docs = rollups.read_days(rt.store, queries.local_day(start, th.timezone), day, org=org)
    buckets = rollups.hourly(docs)
    step = timedelta(hours=max(1, -(-step_minutes // 60)))
    out, cur = [], start
    while cur < end:
        nxt = min(cur + step, end)
        out.append(bucket_stats(rollups.total(b for at, b in buckets if cur <= at < nxt), cur, nxt))
        cur = nxt
    return out


def check_thresholds(
    rt: Runtime, *, window: timedelta = timedelta(hours=1), th: Thresholds | None = None
) -> list[dict[str, Any]]:
    """Alert on every §15.1 threshold the last ``window`` crosses; returns the breaches."""
    now = rt.clock()
    th = th or queries.thresholds(rt.store)
    start = now - window
    records = queries.records_between(rt.store, start, now)
    day_start, _ = queries.day_bounds(queries.local_day(now, th.timezone), th.timezone)
    day_cost = cost_report(rt.store, now=now, th=th).cost_today_usd
    scopes: dict[str | None, list[Any]] = {None: records}
    for r in records:
        scopes.setdefault(r.organization_id, []).append(r)
    slot = int(now.timestamp() // window.total_seconds())
    found = []
    for org, rows in scopes.items():
        stats = window_stats(rows, start, now)
        for b in breaches(stats, th, daily_cost=day_cost if org is None else None):
            scope = org or "all"
            key_slot = day_start.date().isoformat() if b.metric == "daily_cost" else str(slot)
            alerts.raise_alert(
                rt,
                f"metric.{b.metric}",
                f"{b.message} ({scope}, last {window})",
                alert_id=f"metric-{b.metric}-{scope}-{key_slot}",
                severity=b.severity,
                org_id=org,
                details={"value": b.value, "threshold": b.threshold, "window_start": start.isoformat()},
                dedupe=f"metric.{b.metric}|{scope}|{key_slot}",
            )
            found.append(
                {
                    "scope": scope,
                    "metric": b.metric,
                    "value": b.value,
                    "threshold": b.threshold,
                    "severity": b.severity,
                    "message": b.message,
                }
            )
    return found


def cost_check(rt: Runtime, *, hard_limit_usd: float | None = None) -> dict[str, Any]:
    """Yesterday's and today's cost against the budget (alerts; kill switch over the hard limit)."""
    now = rt.clock()
    th = queries.thresholds(rt.store)
    today = queries.local_day(now, th.timezone)
    limit = hard_limit_usd if hard_limit_usd is not None else rt.settings.daily_hard_limit_usd
    out: dict[str, Any] = {
        "budget_usd": th.daily_cost_usd,
        "hard_limit_usd": limit,
        "days": [],
        "stopped": False,
    }
    for day in (today - timedelta(days=1), today):
        rep = cost_report(rt.store, now=now, day=day, th=th)
        out["days"].append(
            {"day": day.isoformat(), "cost_usd": rep.cost_today_usd, "over": rep.over_daily_budget}
        )
        if rep.over_daily_budget:
            alerts.raise_alert(
                rt,
                "metric.daily_cost",
                f"LLM cost {day.isoformat()}: {rep.cost_today_usd:.2f} USD "
                f"> budget {th.daily_cost_usd:.2f} USD",
                alert_id=f"metric-daily_cost-all-{day.isoformat()}",
                severity="warning",
                dedupe=f"metric.daily_cost|all|{day.isoformat()}",
                details={"cost_usd": rep.cost_today_usd, "budget_usd": th.daily_cost_usd},
            )
        if day == today and limit is not None and rep.cost_today_usd > limit:
            state = controls.apply(
                rt,
                "stop",
                author="cost-check",
                reason=f"daily LLM cost {rep.cost_today_usd:.2f} USD over the hard limit {limit:.2f} USD",
            )
            out["stopped"] = state["changed"]
    return out


def heartbeat(rt: Runtime) -> dict[str, Any]:
    """Liveness of the event path, delivery of pending alerts, the threshold check, the
    tick's due tasks (``due_tasks``: reminders, goal check-ins, the memory count), and the held
    turns of a resumed intake that a release left behind."""
    previous = rt.store.get(HEARTBEAT_DOC)
    arrived = None
    if previous is not None:
        arrived = rt.store.get(f"orgs/default/events/{previous['event_id']}") is not None
        if not arrived:
            alerts.raise_alert(
                rt,
                "heartbeat_missing",
                f"heartbeat {previous['event_id']} sent at {previous.get('at')} never reached the observer",
                alert_id=f"heartbeat-missing-{previous['event_id']}",
                severity="critical",
            )
    event = rt.emit_event(None, "heartbeat", "heartbeat", {"message": "synthetic liveness event"})
    rt.store.set(HEARTBEAT_DOC, {"event_id": event["event_id"], "at": event["at"]})
    return {
        "previous_arrived": arrived,
        "sent": event["event_id"],
        "alerts": alerts.sweep(rt),
        "breaches": check_thresholds(rt),
        "due": _due(rt),
        "released": _release_held(rt),
    }


def _release_held(rt: Runtime) -> int | None:
    """A resumed intake whose release died part-way goes on here (``None``: nothing was held)."""
    if intake.read(rt.store)["state"] != "draining":
        return None
    try:
        return controls.release_held(rt).published
    except Exception as exc:
        log_event(
            "intake_release_failed", layer="admin", severity="ERROR", error=f"{type(exc).__name__}: {exc}"
        )
        return None


def _due(rt: Runtime) -> dict[str, Any]:
    """The due tasks of the tick (seed 001 §17); their failure never costs the liveness check."""
    try:
        return due_tasks.run(rt)
    except Exception as exc:
        log_event(
            "heartbeat_due_failed", layer="admin", severity="ERROR", error=f"{type(exc).__name__}: {exc}"
        )
        return {"error": type(exc).__name__}


def recent_alerts(rt: Runtime, *, since: datetime, limit: int = 50) -> list[dict[str, Any]]:
    return [{"alert_id": alert_id, **doc} for alert_id, doc in alerts.recent(rt, since=since, limit=limit)]
