"""Promotion gates: the evidence a flags promotion needs, read from the environment's store.

===========  ==================  ================================================================
gate         before              reads, and judges by
===========  ==================  ================================================================
shadow       canary 10           the shadow comparisons of the window: the shadow report's
                                 verdict (``report.PromotionCriteria``: ≥ 200 samples, tool
                                 agreement ≥ 95 %, intent agreement ≥ 90 %, no authorization
                                 disagreement, candidate failures ≤ 2 %)
canary       canary 50, llm      the served records of the window, the LLM arm
                                 (``flags_arm == "llm"``) against the legacy arm:
                                 ``CanaryCriteria`` below
===========  ==================  ================================================================

``CanaryCriteria`` (the one place these numbers live; ``docs/ROLLOUT.md`` quotes them):

==================  ====================================================  =========  ==============
check               figure                                                bar        from
==================  ====================================================  =========  ==============
samples             served turns of each arm                              ≥ 20 each  [1]
error_rate          LLM-arm turns that failed [2] / its turns              ≤ 5 %      seed §15.1
error_rate_delta    that rate minus the legacy arm's                      ≤ 2 points ROLLOUT.md
latency_p95_ms      p95 of the LLM arm's response time (receipt to reply) ≤ 10 s     seed §15.1
cost_delta_usd      mean cost per LLM-arm turn minus per legacy turn      ≤ 0.21 USD [3]
==================  ====================================================  =========  ==============

[1] the rollback guard's minimum before a rate counts (``RollbackGuardConfig.min_turns``).
[2] answered with an error, or recorded a system, external or LLM error (a user's bad input
or a rule doing its job is not a failure).
[3] the seed's daily alert (§15.1, ¥5,000 ≈ 35 USD) spread over its volume (§14.1, 5,000
conversations a month ≈ 167 a day).

The thresholds are code, not part of the flags file: the file is what a gate lets through,
so it must not carry its own bar.

Every gate answers ``pass`` (exit 0), ``fail`` (1: which check, with the figures) or
``no_data`` (2: nothing in the window to judge; a gate never passes, nor silently holds,
without evidence). ``promotion_gate`` picks the gate a committed flags file needs against
the live document (``charter gate promotion``, the pipeline's step).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from shared_lib.flags import FLAGS_DOC, FlagsDocument, parse_store_doc
from shared_lib.flags.stages import LADDER, GateName, Stage, off_ladder, stage_of
from shared_lib.observability.records import ObservabilityRecord
from shared_lib.ports import Store
from shared_lib.rollout.report import PromotionCriteria, build_report, load_comparisons

Outcome = Literal["pass", "fail", "no_data"]
EXIT_CODES: dict[Outcome, int] = {"pass": 0, "fail": 1, "no_data": 2}
# The shadow report's usual week; a day of canary traffic (docs/ROLLOUT.md "watch for a day").
DEFAULT_WINDOWS: dict[GateName, str] = {"shadow": "7d", "canary": "24h"}
RECORDS = "observability"
TIME_FIELD = "occurred_at"
FAILURE_CATEGORIES = ("system_error", "external_error", "llm_error")


class CanaryCriteria(BaseModel):
    """When the LLM arm may serve more people (the table in the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    min_turns_per_arm: int = Field(default=20, ge=1)
    max_error_rate: float = Field(default=0.05, ge=0, le=1)
    max_error_rate_delta: float = Field(default=0.02, ge=0, le=1)
    max_latency_p95_ms: float = Field(default=10_000, gt=0)
    max_cost_delta_usd: float = Field(default=0.21, ge=0)


@dataclass(frozen=True)
class GateResult:
    """What a gate found: its outcome, each check with its figure and bar, and a one-line message."""

    gate: str
    outcome: Outcome
    message: str
    since: datetime | None = None
    until: datetime | None = None
    org: str | None = None
    checks: list[dict[str, Any]] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.outcome]

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [c for c in self.checks if not c["ok"]]

    def as_dict(self) -> dict[str, Any]:
        return {
            "gate": self.gate,
            "outcome": self.outcome,
            "message": self.message,
            "since": self.since.isoformat() if self.since else None,
            "until": self.until.isoformat() if self.until else None,
            "org": self.org,
            "checks": self.checks,
            "figures": self.figures,
        }


def _check(name: str, ok: bool, actual: Any, required: str) -> dict[str, Any]:
    return {"name": name, "ok": ok, "actual": actual, "required": required}


def _judged(gate: str, checks: list[dict[str, Any]], **kw: Any) -> GateResult:
    failed = [c for c in checks if not c["ok"]]
    if failed:
        why = "; ".join(f"{c['name']} {c['actual']} (required {c['required']})" for c in failed)
        return GateResult(gate, "fail", f"{gate} gate FAILED: {why}", checks=checks, **kw)
    return GateResult(gate, "pass", f"{gate} gate passed: {len(checks)} checks", checks=checks, **kw)


def _scope(since: datetime, org: str | None) -> str:
    return f"since {since.isoformat()}{' in org ' + org if org else ''}"


# --------------------------------------------------------------------------- the shadow gate


def shadow_gate(
    store: Store,
    *,
    since: datetime,
    until: datetime,
    org: str | None = None,
    criteria: PromotionCriteria | None = None,
) -> GateResult:
    """The shadow report's verdict over the window's comparisons; ``no_data`` when there are none."""
    criteria = criteria or PromotionCriteria()
    rows = load_comparisons(store, since=since, until=until, org=org)
    window: dict[str, Any] = {"since": since, "until": until, "org": org}
    if not rows:
        return GateResult(
            "shadow",
            "no_data",
            f"no shadow comparisons {_scope(since, org)}: the gate cannot pass without data",
            **window,
        )
    report = build_report(rows, criteria=criteria, since=since, until=until, org=org, mismatch_limit=0)
    figures = {
        "samples": report["samples"],
        "candidate_failures": report["candidate_failures"],
        "agreement": {k: v["rate"] for k, v in report["agreement"].items()},
        "authorization_disagreements": report["authorization_disagreements"],
        "latency_delta_ms_mean": report["latency_ms"]["delta"]["mean"],
        "cost_delta_usd_mean": report["cost_usd"]["delta"]["mean"],
        "criteria": criteria.model_dump(),
    }
    return _judged("shadow", list(report["verdict"]["checks"]), figures=figures, **window)


# --------------------------------------------------------------------------- the canary gate


def turn_failed(record: ObservabilityRecord) -> bool:
    """The turn answered with an error or recorded a failure of ours (footnote [2])."""
    return record.response_kind == "error" or any(e.category in FAILURE_CATEGORIES for e in record.errors)


def _p95(values: list[float]) -> float | None:
    """Nearest-rank 95th percentile."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, -(-95 * len(ordered) // 100) - 1)]


def arm_figures(records: list[ObservabilityRecord]) -> dict[str, Any]:
    """Turns, failed turns, error rate, p95 response time and mean cost per turn of one arm."""
    n = len(records)
    failed = sum(1 for r in records if turn_failed(r))
    return {
        "turns": n,
        "failed_turns": failed,
        "error_rate": round(failed / n, 4) if n else None,
        "latency_p95_ms": _p95([r.total_duration_ms for r in records]),
        "cost_per_turn_usd": round(sum(r.cost_usd for r in records) / n, 6) if n else None,
    }


def served_records(
    store: Store, *, since: datetime, until: datetime, org: str | None = None
) -> list[ObservabilityRecord]:
    """Served-turn records with ``since <= occurred_at < until`` (one organisation or all)."""
    collection, group = (f"orgs/{org}/{RECORDS}", False) if org else (RECORDS, True)
    rows = store.query(
        collection,
        where=[(TIME_FIELD, ">=", since), (TIME_FIELD, "<", until)],
        order_by=TIME_FIELD,
        group=group,
    )
    return [r for r in (ObservabilityRecord.from_doc(doc) for _, doc in rows) if not r.shadow]


def canary_gate(
    store: Store,
    *,
    since: datetime,
    until: datetime,
    org: str | None = None,
    criteria: CanaryCriteria | None = None,
) -> GateResult:
    """The LLM arm against the legacy arm over the window; ``no_data`` when either arm has no turn."""
    c = criteria or CanaryCriteria()
    records = served_records(store, since=since, until=until, org=org)
    arms = {arm: [r for r in records if r.flags_arm == arm] for arm in ("llm", "legacy")}
    window: dict[str, Any] = {"since": since, "until": until, "org": org}
    for arm, what in (
        ("llm", "the canary has served no one"),
        ("legacy", "nothing to compare the LLM arm with"),
    ):
        if not arms[arm]:
            return GateResult(
                "canary",
                "no_data",
                f"no {arm}-arm turns {_scope(since, org)} ({what}): the gate cannot pass without data",
                **window,
            )
    llm, legacy = arm_figures(arms["llm"]), arm_figures(arms["legacy"])
    fewest = min(llm["turns"], legacy["turns"])
    error_delta = round(llm["error_rate"] - legacy["error_rate"], 4)
    cost_delta = round(llm["cost_per_turn_usd"] - legacy["cost_per_turn_usd"], 6)
    checks = [
        _check(
            "samples",
            fewest >= c.min_turns_per_arm,
            {"llm": llm["turns"], "legacy": legacy["turns"]},
            f">= {c.min_turns_per_arm} turns per arm",
        ),
        _check(
            "error_rate", llm["error_rate"] <= c.max_error_rate, llm["error_rate"], f"<= {c.max_error_rate}"
        ),
        _check(
            "error_rate_delta",
            error_delta <= c.max_error_rate_delta,
            error_delta,
            f"<= {c.max_error_rate_delta}",
        ),
        _check(
            "latency_p95_ms",
            llm["latency_p95_ms"] <= c.max_latency_p95_ms,
            llm["latency_p95_ms"],
            f"<= {c.max_latency_p95_ms:g}",
        ),
        _check(
            "cost_delta_usd", cost_delta <= c.max_cost_delta_usd, cost_delta, f"<= {c.max_cost_delta_usd}"
        ),
    ]
    figures = {"llm": llm, "legacy": legacy, "criteria": c.model_dump()}
    return _judged("canary", checks, figures=figures, **window)


# --------------------------------------------------------------------------- which gate a promotion needs

Gate = Callable[..., GateResult]
GATES: dict[GateName, Gate] = {"shadow": shadow_gate, "canary": canary_gate}


@dataclass(frozen=True)
class PromotionStep:
    """The live stage, the committed stage, and the gate the step between them needs (None: none)."""

    live: Stage | None
    committed: Stage
    gate: GateName | None
    refused: str = ""
    reason: str = ""


def live_document(store: Store) -> FlagsDocument | None:
    """The environment's live ``config/flags``; None when none was ever written."""
    raw = store.get(FLAGS_DOC)
    return parse_store_doc(raw) if raw is not None else None


def promotion_step(env: str, committed: FlagsDocument, live: FlagsDocument | None) -> PromotionStep:
    """What applying ``committed`` over ``live`` is: no promotion, a gated step, or refused.

    A missing live document counts as legacy (nothing served the LLM arm yet). Moving down
    or staying is never gated (a rollback must not wait for evidence); moving up is one
    stage at a time, through that stage's gate.
    """
    target = stage_of(committed)
    if target is None:
        return PromotionStep(None, LADDER[0], None, refused=off_ladder(env, committed))
    here = LADDER[0] if live is None else stage_of(live)
    if here is None:
        assert live is not None
        return PromotionStep(None, target, None, refused=f"the live document {off_ladder(env, live)}")
    if target.rank <= here.rank:
        return PromotionStep(here, target, None, reason=f"no promotion ({here.name} -> {target.name})")
    if target.rank > here.rank + 1:
        skipped = ", ".join(s.name for s in LADDER[here.rank + 1 : target.rank])
        return PromotionStep(
            here, target, None, refused=f"{here.name} -> {target.name} skips {skipped} (one stage at a time)"
        )
    reason = f"promotion {here.name} -> {target.name}"
    return PromotionStep(here, target, target.gate, reason=reason)
