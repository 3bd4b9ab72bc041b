"""The rollback guard's window: what was counted per organisation, each check, the decision.

Pure reading and arithmetic over the guard's event documents (``shared_lib.rollout.guard``
writes them); ``window_status`` is what the guard evaluates and what ``charter guard
status`` / ``charter guard explain`` print.

Each organisation is judged on its own window (from its last trip, or the last global
trip, when later than the window's start). Organisations with fewer than ``min_turns``
turns that do not trip alone are also judged together, as a pool, so that a regression
spread over many small tenants still trips (a pooled trip cannot be pinned on one
tenant, so it is global). The decision:

* ``global`` when the day's cost is over budget, the pool tripped, or the organisations
  tripped within the window (earlier trips and the ones tripping now) reach
  ``global_trip_orgs`` or ``global_trip_share`` of the organisations active in it;
* ``org`` when some organisations trip, fewer than that;
* ``none`` otherwise.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from shared_lib.flags import RollbackGuardConfig
from shared_lib.ports import Store
from shared_lib.rollout.causes import SIGNALS

STATE = "rollout_guard/state"
EVENTS = f"{STATE}/events"
DAYS = f"{STATE}/days"
TRIPS = f"{STATE}/trips"
POOL = "(small organisations)"
UNKNOWN_ORG = "(unknown)"
COUNTERS = (*SIGNALS, "comparisons", "disagreements")
EXCLUDED = ("user_blocks", "system_blocks", "denials", "user_tool_errors", "infra_waits")
# The signal each rate check counts (the pool asks which organisations it came from).
NUMERATORS = {
    "llm_error_rate": "llm_errors",
    "constitution_violation_rate": "constitution_violations",
    "block_rate": "blocks",
    "tool_error_rate": "tool_errors",
    "shadow_disagreement_rate": "disagreements",
}


def as_datetime(value: Any, default: datetime) -> datetime:
    if isinstance(value, datetime):
        return value
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            return default
    return default


def cost_day(now: datetime, config: RollbackGuardConfig) -> str:
    return now.astimezone(ZoneInfo(config.cost_day_timezone)).date().isoformat()


def p95(values: list[float]) -> float | None:
    """Nearest-rank 95th percentile (``None`` for no values)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def _check(
    name: str, value: float | None, limit: float | None, enough: bool, shown: str, limit_shown: str
) -> dict[str, Any]:
    """One check; a ``limit`` of ``None`` is reported but never trips (a signal switched off)."""
    return {
        "name": name,
        "value": value,
        "limit": limit,
        "enough_samples": enough,
        "tripped": enough and value is not None and limit is not None and value > limit,
        "reason": f"{name} {shown if value is not None else 'n/a'} > {limit_shown}",
    }


def _rate(
    name: str, part: float, whole: float, limit: float | None, minimum: int, unit: str = ""
) -> dict[str, Any]:
    value = part / whole if whole else None
    shown_limit = "off" if limit is None else f"{limit:g}"
    return _check(
        name, value, limit, whole >= minimum, f"{value or 0:.3f} ({part:.0f}/{whole:.0f}{unit})", shown_limit
    )


def org_checks(t: dict[str, float], latencies: list[float], c: RollbackGuardConfig) -> list[dict[str, Any]]:
    """The brain-caused checks of one organisation's (or the pool's) window."""
    latency = p95(latencies)
    return [
        _rate("llm_error_rate", t["llm_errors"], t["turns"], c.llm_error_rate_max, c.min_turns),
        _rate(
            "constitution_violation_rate",
            t["constitution_violations"],
            t["turns"],
            c.constitution_violation_rate_max,
            c.min_turns,
        ),
        _rate("block_rate", t["blocks"], t["turns"], c.block_rate_max, c.min_turns),
        _rate("tool_error_rate", t["tool_errors"], t["tool_calls"], c.tool_error_rate_max, c.min_tool_calls),
        _check(
            "llm_latency_p95_ms",
            latency,
            c.llm_latency_ms_max,
            t["llm_calls"] >= c.min_llm_calls,
            f"{latency or 0:.0f} (p95 of {len(latencies)} turns, {t['llm_calls']:.0f} calls)",
            f"{c.llm_latency_ms_max:g}",
        ),
        _rate(
            "shadow_disagreement_rate",
            t["disagreements"],
            t["comparisons"],
            c.shadow_disagreement_rate_max,
            c.min_comparisons,
        ),
    ]


def _group(
    tally: dict[str, float], latencies: list[float], start: datetime, c: RollbackGuardConfig
) -> dict[str, Any]:
    checks = org_checks(tally, latencies, c)
    return {
        "window_start": start.isoformat(),
        "totals": tally,
        "excluded": {name: tally[name] for name in EXCLUDED},
        "checks": checks,
        "tripped": [x["reason"] for x in checks if x["tripped"]],
    }


def _later(a: datetime, b: datetime | None) -> datetime:
    return b if b is not None and b > a else a


def window_status(
    store: Store, config: RollbackGuardConfig, now: datetime, state: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Per organisation: its window, the counts (brain-caused and excluded), each check; the pool,
    the day's cost, and the decision the guard would take now."""
    state = state or {}
    window_start = now - timedelta(minutes=config.window_minutes)
    last_global = state.get("last_trip_at") if isinstance(state.get("last_trip_at"), datetime) else None
    org_trips: dict[str, Any] = state.get("orgs") or {}
    starts: dict[str, datetime] = {}
    tallies: dict[str, dict[str, float]] = {}
    latencies: dict[str, list[float]] = {}
    active: set[str] = set()
    for _, doc in store.query(EVENTS, where=[("at", ">=", window_start)]):
        at = as_datetime(doc.get("at"), now)
        if at > now:
            continue
        org = str(doc.get("org") or UNKNOWN_ORG)
        if org not in starts:
            trip = (org_trips.get(org) or {}).get("last_trip_at")
            starts[org] = _later(
                _later(window_start, last_global), trip if isinstance(trip, datetime) else None
            )
        if doc.get("served") or doc.get("kind") == "comparison":
            active.add(org)
        # What was counted up to a trip's instant belongs to the tripped window.
        if starts[org] > window_start and at <= starts[org]:
            continue
        tally = tallies.setdefault(org, dict.fromkeys(COUNTERS, 0.0))
        latency = latencies.setdefault(org, [])
        if doc.get("kind") == "comparison":
            tally["comparisons"] += float(doc.get("comparisons") or 0)
            tally["disagreements"] += float(doc.get("disagreements") or 0)
            continue
        if not doc.get("served"):
            continue  # a shadow candidate counts toward the day's cost only
        for name in SIGNALS:
            tally[name] += float(doc.get(name) or 0)
        calls = float(doc.get("llm_calls") or 0)
        if calls:
            latency.append(float(doc.get("llm_ms") or 0) / calls)
    orgs = {org: _group(tallies[org], latencies[org], starts[org], config) for org in sorted(tallies)}
    # Organisations rolled back alone within the window (and since the last global trip).
    since = _later(window_start, last_global)
    earlier = sorted(
        org
        for org, trip in org_trips.items()
        if isinstance((trip or {}).get("last_trip_at"), datetime) and trip["last_trip_at"] >= since
    )
    active_orgs = sorted(active | set(earlier))
    pool = _pool(orgs, latencies, window_start, len(active_orgs), config)
    day = cost_day(now, config)
    day_cost = sum(float(d.get("cost_usd") or 0) for _, d in store.query(DAYS, where=[("day", "==", day)]))
    cost = _check(
        "daily_cost_usd",
        day_cost,
        config.daily_cost_budget_usd,
        True,
        f"{day_cost:.2f}",
        f"{config.daily_cost_budget_usd:g}",
    )
    totals = dict.fromkeys(COUNTERS, 0.0)
    for group in orgs.values():
        for name in COUNTERS:
            totals[name] += group["totals"][name]
    status = {
        "window_start": window_start.isoformat(),
        "window_minutes": config.window_minutes,
        "now": now.isoformat(),
        "orgs": orgs,
        "pool": pool,
        "totals": totals,
        "day": day,
        "day_cost_usd": round(day_cost, 6),
        "cost_check": cost,
        "active_orgs": active_orgs,
        "tripped_earlier": earlier,
    }
    status["decision"] = decide(status, config)
    return status


def _spread(count: int, active: int, config: RollbackGuardConfig) -> bool:
    """Whether ``count`` organisations of ``active`` are enough for a global rollback."""
    return count >= config.global_trip_orgs or count / max(active, 1) >= config.global_trip_share


def _pool(
    orgs: dict[str, dict[str, Any]],
    latencies: dict[str, list[float]],
    start: datetime,
    active: int,
    config: RollbackGuardConfig,
) -> dict[str, Any]:
    """The organisations too small to judge alone (and not tripping alone), judged together.

    A pooled check trips only when what crosses it comes from enough organisations (as many
    as a global rollback needs): otherwise one tenant still growing toward ``min_turns``
    would trip everyone through the pool before it could be judged alone.
    """
    small = [
        o for o, group in orgs.items() if group["totals"]["turns"] < config.min_turns and not group["tripped"]
    ]
    tally = dict.fromkeys(COUNTERS, 0.0)
    for org in small:
        for name in COUNTERS:
            tally[name] += orgs[org]["totals"][name]
    pool = {"orgs": small, **_group(tally, [v for o in small for v in latencies[o]], start, config)}
    pool["tripped"] = []
    for check in pool["checks"]:
        if check["name"] == "llm_latency_p95_ms":
            sources = [o for o in small if any(v > config.llm_latency_ms_max for v in latencies[o])]
        else:
            sources = [o for o in small if orgs[o]["totals"][NUMERATORS[check["name"]]] > 0]
        check["from_orgs"] = sources
        check["tripped"] = check["tripped"] and _spread(len(sources), active, config)
        if check["tripped"]:
            pool["tripped"].append(f"{check['reason']} (from {len(sources)} organisations)")
    return pool


def decide(status: dict[str, Any], config: RollbackGuardConfig) -> dict[str, Any]:
    """``{"action": "none"|"org"|"global", "orgs": [...], "reasons": [...], "why": ...}``."""
    tripping = [org for org, group in status["orgs"].items() if group["tripped"]]
    reasons = [f"{org}: {reason}" for org in tripping for reason in status["orgs"][org]["tripped"]]
    involved = sorted(set(tripping) | set(status["tripped_earlier"]))
    active = len(status["active_orgs"])
    pool = status["pool"]
    if status["cost_check"]["tripped"]:
        why, action = "the day's LLM cost is over the budget", "global"
        reasons = [status["cost_check"]["reason"], *reasons]
    elif pool["tripped"]:
        why, action = f"the organisations with fewer than {config.min_turns} turns tripped together", "global"
        reasons = [f"{POOL}: {reason}" for reason in pool["tripped"]] + reasons
        involved = sorted(set(involved) | set(pool["orgs"]))
    elif not tripping:
        return {"action": "none", "orgs": [], "reasons": [], "why": "no threshold crossed"}
    else:
        why = (
            f"{len(involved)} of {active} active organisations tripped within the window "
            f"(global at {config.global_trip_orgs} or {config.global_trip_share:.0%})"
        )
        action = "global" if _spread(len(involved), active, config) else "org"
    return {
        "action": action,
        "orgs": involved if action == "global" else tripping,
        "reasons": reasons,
        "why": why,
    }
