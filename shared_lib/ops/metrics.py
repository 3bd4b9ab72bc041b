"""The seed 000 §15.1 metrics over a time window, from observability records (pure).

======================  ==========================================  ===================
metric                  definition                                  seed threshold
======================  ==========================================  ===================
``llm_latency_ms_p95``  p95 over turns of LLM time per call          > 10 s  (warning)
``tool_error_rate``     failed / executed tool calls                 > 5 %   (warning)
``confirmation_rate``   guardian CONFIRM of a tool call / turns      > 30 %  (info)
``block_rate``          guardian BLOCK / turns                       > 10 %  (warning)
``cost_usd``            LLM cost of served turns and candidates      > budget (warning)
======================  ==========================================  ===================

A CONFIRM counts only on a turn that proposed a tool call: a text reply (or a
clarification) the guardian marks CONFIRM asks the user nothing (the responder sends
the text), so counting it would inflate the rate with confirmations nobody saw.

Rates need a minimum number of samples before they count (``Thresholds.min_*``), so one
unlucky turn at night does not page anyone.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from shared_lib.observability.records import ObservabilityRecord
from shared_lib.state import rollups

PROPOSING_ARMS = rollups.PROPOSING_ARMS


class Thresholds(BaseModel):
    """Seed §15.1 thresholds. The shared ones follow the flags document's ``rollback_guard``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    llm_latency_ms: float = Field(default=10_000, gt=0)
    tool_error_rate: float = Field(default=0.05, ge=0, le=1)
    confirmation_rate: float = Field(default=0.30, ge=0, le=1)
    block_rate: float = Field(default=0.10, ge=0, le=1)
    daily_cost_usd: float = Field(default=35.0, gt=0)
    timezone: str = "Asia/Tokyo"
    min_turns: int = Field(default=20, ge=1)
    min_tool_calls: int = Field(default=20, ge=1)
    min_llm_calls: int = Field(default=10, ge=1)


@dataclass(frozen=True)
class WindowStats:
    start: datetime
    end: datetime
    turns: int
    llm_turns: int
    llm_calls: int
    llm_latency_ms_mean: float | None
    llm_latency_ms_p95: float | None
    tool_calls: int
    tool_errors: int
    tool_error_rate: float | None
    confirmations: int
    confirmation_rate: float | None
    blocks: int
    block_rate: float | None
    denials: int
    errors: int
    mean_confidence: float | None
    avg_response_ms: float | None
    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    cache_hit_ratio: float | None
    cost_usd: float
    shadow_cost_usd: float

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["start"], out["end"] = self.start.isoformat(), self.end.isoformat()
        return out


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in 0..100)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def _ratio(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 3) if values else None


def window_stats(
    records: Iterable[ObservabilityRecord],
    start: datetime,
    end: datetime,
    shadow: Iterable[ObservabilityRecord] = (),
) -> WindowStats:
    """Statistics of the served records with ``start <= timestamp < end`` (candidates add cost only)."""
    rows = [r for r in records if start <= r.timestamp < end and not r.shadow]
    llm = [r for r in rows if r.usage.llm_calls > 0]
    per_call = [r.usage.llm_duration_ms / r.usage.llm_calls for r in llm]
    calls = sum(r.usage.llm_calls for r in llm)
    tool_calls = sum(r.tool_calls_executed for r in rows)
    tool_errors = sum(r.tool_errors for r in rows)
    confirms = sum(1 for r in rows if r.guardian_action == "confirm" and r.output_type == "tool_call")
    blocks = sum(1 for r in rows if r.guardian_action == "block")
    proposing = [r.llm_confidence for r in rows if r.arm in PROPOSING_ARMS and r.output_type]
    tokens_in = sum(r.usage.input_tokens for r in rows)
    cache_read = sum(r.usage.cache_read_input_tokens for r in rows)
    cache_write = sum(r.usage.cache_creation_input_tokens for r in rows)
    shadow_cost = sum(r.cost_usd for r in shadow if start <= r.timestamp < end)
    return WindowStats(
        start=start,
        end=end,
        turns=len(rows),
        llm_turns=len(llm),
        llm_calls=calls,
        llm_latency_ms_mean=round(sum(r.usage.llm_duration_ms for r in llm) / calls, 3) if calls else None,
        llm_latency_ms_p95=percentile(per_call, 95),
        tool_calls=tool_calls,
        tool_errors=tool_errors,
        tool_error_rate=_ratio(tool_errors, tool_calls),
        confirmations=confirms,
        confirmation_rate=_ratio(confirms, len(rows)),
        blocks=blocks,
        block_rate=_ratio(blocks, len(rows)),
        denials=sum(1 for r in rows if r.auth_result == "denied"),
        errors=sum(1 for r in rows if r.errors),
        mean_confidence=_mean(proposing),
        avg_response_ms=_mean([r.total_duration_ms for r in rows]),
        input_tokens=tokens_in,
        output_tokens=sum(r.usage.output_tokens for r in rows),
        cache_read_input_tokens=cache_read,
        cache_creation_input_tokens=cache_write,
        cache_hit_ratio=_ratio(cache_read, tokens_in + cache_read + cache_write),
        cost_usd=round(sum(r.cost_usd for r in rows) + shadow_cost, 6),
        shadow_cost_usd=round(shadow_cost, 6),
    )


def bucket_stats(b: dict[str, Any], start: datetime, end: datetime) -> WindowStats:
    """The statistics of a roll-up bucket (``state.rollups``): what ``window_stats`` gives for
    the records it counted, the p95 read from its latency histogram."""
    turns, calls, tokens_in = b["turns"], b["llm_calls"], b["input_tokens"]
    cache_read, cache_write = b["cache_read_input_tokens"], b["cache_creation_input_tokens"]
    n = b["confidence_n"]
    return WindowStats(
        start=start,
        end=end,
        turns=turns,
        llm_turns=b["llm_turns"],
        llm_calls=calls,
        llm_latency_ms_mean=round(b["llm_duration_ms"] / calls, 3) if calls else None,
        llm_latency_ms_p95=rollups.latency_p95(b["latency_hist"]),
        tool_calls=b["tool_calls"],
        tool_errors=b["tool_errors"],
        tool_error_rate=_ratio(b["tool_errors"], b["tool_calls"]),
        confirmations=b["confirmations"],
        confirmation_rate=_ratio(b["confirmations"], turns),
        blocks=b["blocks"],
        block_rate=_ratio(b["blocks"], turns),
        denials=b["denials"],
        errors=b["errors"],
        mean_confidence=round(b["confidence_sum"] / n, 3) if n else None,
        avg_response_ms=round(b["duration_ms_sum"] / turns, 3) if turns else None,
        input_tokens=tokens_in,
        output_tokens=b["output_tokens"],
        cache_read_input_tokens=cache_read,
        cache_creation_input_tokens=cache_write,
        cache_hit_ratio=_ratio(cache_read, tokens_in + cache_read + cache_write),
        cost_usd=round(b["cost_usd"] + b["shadow_cost_usd"], 6),
        shadow_cost_usd=round(b["shadow_cost_usd"], 6),
    )


def series(
    records: Sequence[ObservabilityRecord],
    start: datetime,
    end: datetime,
    step: timedelta,
    shadow: Sequence[ObservabilityRecord] = (),
) -> list[WindowStats]:
    """Consecutive windows of ``step`` from ``start`` to ``end`` (the last one may be shorter)."""
    out = []
    cur = start
    while cur < end:
        nxt = min(cur + step, end)
        out.append(window_stats(records, cur, nxt, shadow))
        cur = nxt
    return out


@dataclass(frozen=True)
class Breach:
    metric: str
    value: float
    threshold: float
    severity: str
    message: str


def breaches(stats: WindowStats, th: Thresholds, *, daily_cost: float | None = None) -> list[Breach]:
    """Thresholds ``stats`` crosses (rates only with enough samples)."""
    out: list[Breach] = []
    p95 = stats.llm_latency_ms_p95
    if p95 is not None and stats.llm_calls >= th.min_llm_calls and p95 > th.llm_latency_ms:
        out.append(
            Breach(
                "llm_latency",
                p95,
                th.llm_latency_ms,
                "warning",
                f"LLM latency p95 {p95 / 1000:.1f} s > {th.llm_latency_ms / 1000:.0f} s",
            )
        )
    rate = stats.tool_error_rate
    if rate is not None and stats.tool_calls >= th.min_tool_calls and rate > th.tool_error_rate:
        out.append(
            Breach(
                "tool_error_rate",
                rate,
                th.tool_error_rate,
                "warning",
                f"tool error rate {rate:.1%} > {th.tool_error_rate:.0%} ({stats.tool_errors}/{stats.tool_calls})",
            )
        )
    for name, value, limit, severity, count in (
        ("confirmation_rate", stats.confirmation_rate, th.confirmation_rate, "info", stats.confirmations),
        ("block_rate", stats.block_rate, th.block_rate, "warning", stats.blocks),
    ):
        if value is not None and stats.turns >= th.min_turns and value > limit:
            out.append(
                Breach(
                    name,
                    value,
                    limit,
                    severity,
                    f"{name.replace('_', ' ')} {value:.1%} > {limit:.0%} ({count}/{stats.turns})",
                )
            )
    if daily_cost is not None and daily_cost > th.daily_cost_usd:
        out.append(
            Breach(
                "daily_cost",
                daily_cost,
                th.daily_cost_usd,
                "warning",
                f"LLM cost today {daily_cost:.2f} USD > {th.daily_cost_usd:.2f} USD",
            )
        )
    return out
