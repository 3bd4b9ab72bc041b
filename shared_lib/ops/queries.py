"""Reading what the observer wrote: records, LLM calls, comparisons, windows and days.

The same functions serve the ``charter`` commands and the admin dashboard. Without an
organisation they use collection-group queries (``observability`` across every
``orgs/{org}``); with one they read that organisation's collection only. Filters that
Firestore would need a composite index for (arm, outcome) are applied here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from shared_lib import collections
from shared_lib.errors import ArgumentError
from shared_lib.observability.records import ObservabilityRecord
from shared_lib.ops.metrics import Thresholds
from shared_lib.ports import Doc, Op, Store

RECORDS = "observability"
CANDIDATES = "shadow_candidates"
LLM_CALLS = "llm_calls"
EVALUATIONS = "evaluations"
COMPARISONS = "shadow_comparisons"
_DURATION = re.compile(r"^(\d+)\s*([smhd])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
TIME_FIELD = "occurred_at"  # = the record's seed ``timestamp``; the field the Firestore indexes name
SCAN_LIMIT = 5000  # rows read when a filter is applied here rather than in the query


def record_path(org_id: str, turn_id: str) -> str:
    return collections.path(RECORDS, org=org_id, id=turn_id)


def candidate_path(org_id: str, turn_id: str, step: int) -> str:
    return collections.path(CANDIDATES, org=org_id, id=f"{turn_id}-{step}")


def parse_since(value: str, now: datetime) -> datetime:
    """``30m``, ``24h``, ``7d`` (ago) or an ISO date/time (UTC when no zone is given)."""
    m = _DURATION.match(value.strip())
    if m:
        return now - timedelta(**{_UNITS[m.group(2)]: int(m.group(1))})
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError as exc:
        raise ArgumentError(f"--since wants 30m, 24h, 7d or an ISO date/time, got {value!r}") from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _collection(org: str | None, name: str) -> tuple[str, bool]:
    return (f"orgs/{org}/{name}", False) if org else (name, True)


def _records(
    store: Store,
    name: str,
    where: Sequence[tuple[str, Op, Any]],
    *,
    org: str | None,
    limit: int | None,
    descending: bool = True,
) -> list[ObservabilityRecord]:
    coll, group = _collection(org, name)
    rows = store.query(
        coll, where=where, order_by=TIME_FIELD, descending=descending, limit=limit, group=group
    )
    return [ObservabilityRecord.from_doc(doc) for _, doc in rows]


def records_between(
    store: Store, start: datetime, end: datetime, *, org: str | None = None, shadow: bool = False
) -> list[ObservabilityRecord]:
    """Records (or shadow candidates) with ``start <= timestamp < end``, oldest first."""
    return _records(
        store,
        CANDIDATES if shadow else RECORDS,
        [(TIME_FIELD, ">=", start), (TIME_FIELD, "<", end)],
        org=org,
        limit=None,
        descending=False,
    )


def list_records(
    store: Store,
    *,
    since: datetime | None = None,
    org: str | None = None,
    arm: str | None = None,
    outcome: str | None = None,
    limit: int = 50,
) -> list[ObservabilityRecord]:
    """Newest first. ``outcome`` matches the reply kind or the guardian action."""
    where: list[tuple[str, Op, Any]] = [(TIME_FIELD, ">=", since)] if since else []
    filtering = arm is not None or outcome is not None
    rows = _records(store, RECORDS, where, org=org, limit=SCAN_LIMIT if filtering else limit)
    if arm:
        rows = [r for r in rows if arm in (r.arm, r.flags_arm)]
    if outcome:
        rows = [r for r in rows if outcome in (r.response_kind, r.guardian_action, r.auth_result)]
    return rows[:limit]


def find_record(
    store: Store, turn_id: str, *, org: str | None = None, shadow: bool = False
) -> ObservabilityRecord | None:
    """The record of a turn (the last step's candidate with ``shadow``)."""
    if org and not shadow:
        doc = store.get(record_path(org, turn_id))
        return ObservabilityRecord.from_doc(doc) if doc else None
    coll, group = _collection(org, CANDIDATES if shadow else RECORDS)
    rows = store.query(coll, where=[("turn_id", "==", turn_id)], group=group)
    if not rows:
        return None
    return ObservabilityRecord.from_doc(max((doc for _, doc in rows), key=lambda d: int(d.get("step", 0))))


def llm_calls_for(store: Store, org_id: str, turn_id: str) -> list[Doc]:
    """The turn's LLM call log entries (``shared_lib.telemetry.llm_calls``), oldest first."""
    rows = store.query(f"orgs/{org_id}/{LLM_CALLS}", where=[("turn_id", "==", turn_id)])
    return sorted((doc for _, doc in rows), key=lambda d: str(d.get("at")))


def recent_llm_calls(store: Store, *, org: str | None = None, limit: int = 50) -> list[Doc]:
    coll, group = _collection(org, LLM_CALLS)
    return [doc for _, doc in store.query(coll, order_by="at", descending=True, limit=limit, group=group)]


def recent_evaluations(store: Store, *, org: str | None = None, limit: int = 50) -> dict[str, Any]:
    """The newest Best-of-N runs (``features.best_of_n``: seed 001 §20.4's evaluator monitor) and
    the judge's average spread over them (seed 001 §4.2: a judge that discriminates spreads)."""
    coll, group = _collection(org, EVALUATIONS)
    runs = [doc for _, doc in store.query(coll, order_by="at", descending=True, limit=limit, group=group)]
    judged = [float(r["judge_spread"]) for r in runs if r.get("judge_spread") is not None]
    return {
        "evaluations": runs,
        "judge_spread_mean": round(sum(judged) / len(judged), 4) if judged else None,
        "regenerated": sum(1 for r in runs if r.get("regenerated")),
        "fallbacks": sum(1 for r in runs if r.get("fallback")),
    }


def evaluations_for(store: Store, org_id: str, turn_id: str, steps: int) -> list[Doc]:
    """The Best-of-N runs of one turn, by step (``orgs/{org}/evaluations/{turn}-{step}``)."""
    found = (store.get(f"orgs/{org_id}/{EVALUATIONS}/{turn_id}-{step}") for step in range(max(1, steps)))
    return [doc for doc in found if doc is not None]


def comparison_for(store: Store, org_id: str, turn_id: str) -> Doc | None:
    return store.get(f"orgs/{org_id}/{COMPARISONS}/{turn_id}")


# --------------------------------------------------------------------------- days and thresholds


def thresholds(store: Store) -> Thresholds:
    """Seed §15.1 thresholds; the shared ones come from the live flags document's ``rollback_guard``."""
    from shared_lib.flags import FLAGS_DOC, REPO_FLAGS_FILE, load_flags_file, parse_store_doc

    try:
        raw = store.get(FLAGS_DOC)
        doc = parse_store_doc(raw) if raw else load_flags_file(REPO_FLAGS_FILE)
    except Exception:  # thresholds must not fail closed into silence: fall back to the seed values
        return Thresholds()
    g = doc.rollback_guard
    return Thresholds(
        llm_latency_ms=g.llm_latency_ms_max,
        tool_error_rate=g.tool_error_rate_max,
        block_rate=g.block_rate_max,
        daily_cost_usd=g.daily_cost_budget_usd,
        timezone=g.cost_day_timezone,
        min_turns=g.min_turns,
        min_tool_calls=g.min_tool_calls,
        min_llm_calls=g.min_llm_calls,
    )


def day_bounds(day: date, tz: str) -> tuple[datetime, datetime]:
    """[start, end) of a calendar day in ``tz``, in UTC."""
    zone = ZoneInfo(tz)
    start = datetime(day.year, day.month, day.day, tzinfo=zone)
    return start.astimezone(UTC), (start + timedelta(days=1)).astimezone(UTC)


def local_day(now: datetime, tz: str) -> date:
    return now.astimezone(ZoneInfo(tz)).date()


def month_start(day: date) -> date:
    return day.replace(day=1)


def days_in_month(day: date) -> int:
    nxt = (day.replace(day=28) + timedelta(days=4)).replace(day=1)
    return (nxt - timedelta(days=1)).day
