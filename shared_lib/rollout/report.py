"""The shadow report: agreement, mismatches, latency and cost deltas, and a promotion verdict.

``build_report(comparisons, criteria=...)`` is pure over comparison records
(``shared_lib.rollout.comparison``); ``load_comparisons(store, since=..., org=...)``
reads them. Rates are ``agree / total`` over candidates that ran (failures are counted
apart); the authorization rate is over turns where both arms reached the gate.

>>> parse_duration("36h")
datetime.timedelta(days=1, seconds=43200)
"""

from __future__ import annotations

import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from shared_lib.errors import ArgumentError
from shared_lib.ports import Op, Store
from shared_lib.rollout.comparison import AGREEMENT_FIELDS, COMPARISONS

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_duration(text: str) -> timedelta:
    """``90s``, ``30m``, ``24h``, ``7d``, ``2w`` to a timedelta; ``ArgumentError`` otherwise."""
    m = _DURATION.match(text)
    if not m:
        raise ArgumentError(f"not a duration: {text!r} (use e.g. 30m, 24h, 7d)")
    value = timedelta(**{_UNITS[m.group(2)]: float(m.group(1))})
    if value <= timedelta(0):
        raise ArgumentError(f"duration must be positive: {text!r}")
    return value


class PromotionCriteria(BaseModel):
    """When the candidate may be promoted (the next rollout step). ``None`` disables a check."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    min_samples: int = Field(default=200, ge=1)
    min_tool_agreement: float = Field(default=0.95, ge=0, le=1)
    min_intent_agreement: float | None = Field(default=0.90, ge=0, le=1)
    min_parameter_agreement: float | None = Field(default=None, ge=0, le=1)
    max_authorization_disagreements: int = Field(default=0, ge=0)
    max_candidate_failure_rate: float = Field(default=0.02, ge=0, le=1)
    max_latency_delta_ms: float | None = None
    max_cost_delta_usd: float | None = None  # mean per turn, candidate minus served


def _as_datetime(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


def load_comparisons(
    store: Store,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    org: str | None = None,
    latest: int | None = None,
) -> list[dict[str, Any]]:
    """Comparison records of one organisation (or all, as a collection-group read), oldest first.

    The time filter runs here rather than in the query, so no composite or collection-group
    index is needed. ``latest`` reads only the newest that many since ``since`` (one range and
    order on ``at``: a single-field index), so a view that refreshes reads a bounded number.
    """
    coll, group = (f"orgs/{org}/{COMPARISONS}", False) if org else (COMPARISONS, True)
    if latest is not None:
        where: list[tuple[str, Op, Any]] = [("at", ">=", since)] if since is not None else []
        rows = store.query(coll, where=where, order_by="at", descending=True, limit=latest, group=group)
    else:
        rows = store.query(coll, group=group)
    out = []
    for _, doc in rows:
        at = _as_datetime(doc.get("at"))
        if since is not None and (at is None or at < since):
            continue
        if until is not None and at is not None and at > until:
            continue
        out.append(doc)
    return sorted(
        out,
        key=lambda d: (_as_datetime(d.get("at")) or datetime.min.replace(tzinfo=UTC), str(d.get("turn_id"))),
    )


def _rate(agree: int, total: int) -> dict[str, Any]:
    return {"agree": agree, "total": total, "rate": round(agree / total, 4) if total else None}


def _agreement(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out = {}
    for name in AGREEMENT_FIELDS:
        values = [r["agree"].get(name) for r in rows]
        known = [v for v in values if v is not None]
        out[name] = _rate(sum(1 for v in known if v), len(known))
    out["all"] = _rate(sum(1 for r in rows if r.get("all_agree")), len(rows))
    return out


def _dist(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"mean": None, "p50": None, "p95": None}
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "mean": round(statistics.fmean(values), 3),
        "p50": round(statistics.median(values), 3),
        "p95": round(p95, 3),
    }


def _side_sums(rows: list[dict[str, Any]], field: str) -> dict[str, Any]:
    served = [float(r["served"].get(field) or 0) for r in rows]
    cand = [float(r["candidate"].get(field) or 0) for r in rows]
    n = len(rows)
    return {
        "served_total": round(sum(served), 6),
        "candidate_total": round(sum(cand), 6),
        "served_mean": round(sum(served) / n, 6) if n else None,
        "candidate_mean": round(sum(cand) / n, 6) if n else None,
        "delta": _dist([c - s for s, c in zip(served, cand, strict=True)]),
    }


def _mismatch(row: dict[str, Any]) -> dict[str, Any]:
    s, c = row["served"], row["candidate"]
    return {
        "turn_id": row["turn_id"],
        "org_id": row["org_id"],
        "fields": row["mismatches"],
        "served": {
            "intent": s["intent"],
            "tools": s["tools"],
            "guardian": s["guardian_action"],
            "authorization": s["auth_result"],
        },
        "candidate": {
            "intent": c["intent"],
            "tools": c["tools"],
            "guardian": c["guardian_action"],
            "authorization": c["auth_result"],
        },
        "links": row.get("links", {}),
    }


def _check(name: str, ok: bool, actual: Any, required: str) -> dict[str, Any]:
    return {"name": name, "ok": ok, "actual": actual, "required": required}


def verdict(report: dict[str, Any], criteria: PromotionCriteria) -> dict[str, Any]:
    ran = report["samples"] - report["candidate_failures"]
    agreement = report["agreement"]
    checks = [_check("samples", ran >= criteria.min_samples, ran, f">= {criteria.min_samples}")]

    def rate_check(name: str, key: str, minimum: float | None) -> None:
        if minimum is None:
            return
        rate = agreement[key]["rate"]
        checks.append(_check(name, rate is not None and rate >= minimum, rate, f">= {minimum}"))

    rate_check("tool_agreement", "tool", criteria.min_tool_agreement)
    rate_check("intent_agreement", "intent", criteria.min_intent_agreement)
    rate_check("parameter_agreement", "parameters", criteria.min_parameter_agreement)
    auth = report["authorization_disagreements"]
    checks.append(
        _check(
            "authorization_disagreements",
            auth <= criteria.max_authorization_disagreements,
            auth,
            f"<= {criteria.max_authorization_disagreements}",
        )
    )
    failure_rate = report["candidate_failure_rate"]
    checks.append(
        _check(
            "candidate_failure_rate",
            failure_rate is not None and failure_rate <= criteria.max_candidate_failure_rate,
            failure_rate,
            f"<= {criteria.max_candidate_failure_rate}",
        )
    )
    if criteria.max_latency_delta_ms is not None:
        mean = report["latency_ms"]["delta"]["mean"]
        checks.append(
            _check(
                "latency_delta_ms",
                mean is not None and mean <= criteria.max_latency_delta_ms,
                mean,
                f"<= {criteria.max_latency_delta_ms}",
            )
        )
    if criteria.max_cost_delta_usd is not None:
        mean = report["cost_usd"]["delta"]["mean"]
        checks.append(
            _check(
                "cost_delta_usd",
                mean is not None and mean <= criteria.max_cost_delta_usd,
                mean,
                f"<= {criteria.max_cost_delta_usd}",
            )
        )
    promote = all(c["ok"] for c in checks)
    return {
        "promote": promote,
        "verdict": "PROMOTE" if promote else "HOLD",
        "failed_checks": [c["name"] for c in checks if not c["ok"]],
        "checks": checks,
        "criteria": criteria.model_dump(),
    }


def build_report(
    comparisons: Iterable[dict[str, Any]],
    *,
    criteria: PromotionCriteria | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    org: str | None = None,
    mismatch_limit: int = 50,
) -> dict[str, Any]:
    """The report as a JSON-ready dict (the ``--json`` output)."""
    rows = list(comparisons)
    ran = [r for r in rows if not r.get("candidate_failed")]
    failures = len(rows) - len(ran)
    by_intent: dict[str, list[dict[str, Any]]] = defaultdict(list)
    by_tool: dict[str, list[dict[str, Any]]] = defaultdict(list)
    confusion: Counter[str] = Counter()
    for r in ran:
        by_intent[r["served"]["intent"]].append(r)
        served_tools = ",".join(r["served"]["tools"]) or "(none)"
        by_tool[served_tools].append(r)
        if not r["agree"]["tool"]:
            confusion[f"{served_tools} -> {','.join(r['candidate']['tools']) or '(none)'}"] += 1
    mismatched = [r for r in ran if r["mismatches"]]
    report: dict[str, Any] = {
        "window": {
            "since": since.isoformat() if since else None,
            "until": until.isoformat() if until else None,
            "org": org,
        },
        "samples": len(rows),
        "candidate_failures": failures,
        "candidate_failure_rate": round(failures / len(rows), 4) if rows else None,
        "agreement": _agreement(ran),
        "by_intent": {
            k: {"samples": len(v), **{f: a["rate"] for f, a in _agreement(v).items()}}
            for k, v in sorted(by_intent.items())
        },
        "by_tool": {
            k: {"samples": len(v), **{f: a["rate"] for f, a in _agreement(v).items()}}
            for k, v in sorted(by_tool.items())
        },
        "tool_confusion": dict(confusion.most_common()),
        "authorization_disagreements": sum(1 for r in ran if r["agree"].get("authorization") is False),
        "latency_ms": _side_sums(ran, "latency_ms"),
        "llm_ms": _side_sums(ran, "llm_ms"),
        "tokens": _side_sums(ran, "tokens"),
        "cost_usd": _side_sums(ran, "cost_usd"),
        "mismatch_count": len(mismatched),
        "mismatches": [_mismatch(r) for r in mismatched[:mismatch_limit]],
        "failures": [
            {
                "turn_id": r["turn_id"],
                "org_id": r["org_id"],
                "failure": r["candidate"].get("failure"),
                "links": r.get("links", {}),
            }
            for r in rows
            if r.get("candidate_failed")
        ][:mismatch_limit],
    }
    report["verdict"] = verdict(report, criteria or PromotionCriteria())
    return report


def plain(value: Any) -> str:
    """A value as an operator reads it: ``n/a`` for none, yes/no, lists joined, numbers rounded."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return str(round(value, 6))
    if isinstance(value, list | tuple):
        return ", ".join(plain(v) for v in value) or "-"
    if isinstance(value, dict):
        return ", ".join(f"{k} {plain(v)}" for k, v in value.items()) or "-"
    return str(value)


def _pct(rate: Any) -> str:
    return "  n/a " if rate is None else f"{100 * rate:5.1f}%"


def render_text(report: dict[str, Any]) -> str:
    """A terminal rendering of ``build_report``'s output."""
    w = report["window"]
    lines = [
        f"Shadow report — since {w['since'] or 'the beginning'}{' — org ' + w['org'] if w['org'] else ''}",
        f"samples {report['samples']}  candidate failures {report['candidate_failures']}  "
        f"authorization disagreements {report['authorization_disagreements']}",
        "",
        "agreement:",
    ]
    for name, a in report["agreement"].items():
        lines.append(f"  {name:<16} {_pct(a['rate'])}  ({a['agree']}/{a['total']})")
    for title, key in (("by intent", "by_intent"), ("by tool", "by_tool")):
        lines += ["", f"{title}:"]
        for k, v in report[key].items():
            lines.append(
                f"  {k:<28} n={v['samples']:<5} intent {_pct(v['intent'])}  tool {_pct(v['tool'])}  "
                f"params {_pct(v['parameters'])}  all {_pct(v['all'])}"
            )
    lat, cost = report["latency_ms"], report["cost_usd"]
    lines += [
        "",
        f"decision latency ms: served {plain(lat['served_mean'])}  candidate {plain(lat['candidate_mean'])}  "
        f"delta mean {plain(lat['delta']['mean'])} p95 {plain(lat['delta']['p95'])}",
        f"LLM ms: delta mean {plain(report['llm_ms']['delta']['mean'])}",
        f"cost USD: served {plain(cost['served_total'])}  candidate {plain(cost['candidate_total'])}  "
        f"delta/turn {plain(cost['delta']['mean'])}",
    ]
    if report["mismatches"]:
        lines += ["", f"mismatches ({report['mismatch_count']}, first {len(report['mismatches'])}):"]
        for m in report["mismatches"]:
            lines.append(
                f"  {m['turn_id']} [{', '.join(m['fields'])}] "
                f"served {plain(m['served']['tools'] or m['served']['intent'])}"
                f" / candidate {plain(m['candidate']['tools'] or m['candidate']['intent'])}"
            )
            lines.append(f"      {m['links'].get('served', '')}  |  {m['links'].get('candidate', '')}")
    v = report["verdict"]
    lines += ["", f"verdict: {v['verdict']}"]
    for c in v["checks"]:
        lines.append(
            f"  [{'ok' if c['ok'] else 'NO'}] {c['name']}: {plain(c['actual'])} (required {plain(c['required'])})"
        )
    return "\n".join(lines)
