"""Cost against the budget (seed 000 §14.3, §15.2): tokens, cache hits, cost today and this
month, and a projection for the month, from the observer's daily roll-ups
(``state.rollups``: one document per organisation and day, so at most 31 a month whatever
the number of turns).

Shadow candidates cost real money too: they are counted (and shown separately). The
month projection is the month-to-date cost divided by the days elapsed (today counted
in proportion to the hours gone) times the days of the month.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import date, datetime
from typing import Any

from shared_lib.ops import queries
from shared_lib.ops.metrics import Thresholds, bucket_stats
from shared_lib.ports import Doc, Store
from shared_lib.state import rollups


@dataclass(frozen=True)
class CostReport:
    day: date
    org_id: str | None
    timezone: str
    turns: int
    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    cache_hit_ratio: float | None
    cost_today_usd: float
    shadow_cost_today_usd: float
    cost_month_usd: float
    projected_month_usd: float
    daily_budget_usd: float
    monthly_budget_usd: float
    by_model: dict[str, float]
    by_purpose: dict[str, float]  # what each purpose of call cost today (proposal, phrasing, evaluation, ...)

    @property
    def over_daily_budget(self) -> bool:
        return self.cost_today_usd > self.daily_budget_usd

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["day"] = self.day.isoformat()
        out["over_daily_budget"] = self.over_daily_budget
        out["budget_used_ratio"] = round(self.cost_today_usd / self.daily_budget_usd, 4)
        return out


def cost_report(
    store: Store,
    *,
    now: datetime,
    day: date | None = None,
    org: str | None = None,
    th: Thresholds | None = None,
    month: list[Doc] | None = None,
) -> CostReport:
    """``month``: the roll-ups of the month up to ``day`` when the caller read them already."""
    th = th or queries.thresholds(store)
    today = queries.local_day(now, th.timezone)
    day = day or today
    start, end = queries.day_bounds(day, th.timezone)
    if month is None:
        month = rollups.read_days(store, queries.month_start(day), day, org=org)
    day_total = rollups.total(d["totals"] for d in month if d.get("day") == day.isoformat())
    stats = bucket_stats(day_total, start, end)
    month_total = rollups.total(d["totals"] for d in month if str(d.get("day")) <= day.isoformat())
    month_cost = month_total["cost_usd"] + month_total["shadow_cost_usd"]
    days = queries.days_in_month(day)
    elapsed = (day.day - 1) + (_fraction_of_day(now, start, end) if day == today else 1.0)
    return CostReport(
        day=day,
        org_id=org,
        timezone=th.timezone,
        turns=stats.turns,
        input_tokens=stats.input_tokens,
        output_tokens=stats.output_tokens,
        cache_read_input_tokens=stats.cache_read_input_tokens,
        cache_creation_input_tokens=stats.cache_creation_input_tokens,
        cache_hit_ratio=stats.cache_hit_ratio,
        cost_today_usd=stats.cost_usd,
        shadow_cost_today_usd=stats.shadow_cost_usd,
        cost_month_usd=round(month_cost, 6),
        projected_month_usd=round(month_cost / elapsed * days, 6) if elapsed > 0 else 0.0,
        daily_budget_usd=th.daily_cost_usd,
        monthly_budget_usd=round(th.daily_cost_usd * days, 2),
        by_model=dict(day_total["model_cost_usd"]),
        by_purpose=dict(day_total["purpose_cost_usd"]),
    )


def _fraction_of_day(now: datetime, start: datetime, end: datetime) -> float:
    span = (end - start).total_seconds()
    gone = (now - start).total_seconds()
    return min(1.0, max(1 / 24, gone / span))  # at least one hour, so a projection at 00:05 is not wild
