"""Expected against observed: one case's checks, and a brain's figures over a run.

A case passes when every check it asks for holds (and its turns completed). The figures:
accuracy by category and by group (``tool``, ``guardian``, ``dates`` …), route, output type,
tool and parameter accuracy (parameters counted per expected key), verdict, authorization and
clarification agreement, reply agreement (the reply labels: what the reply must and must not
say, and whether it answers rather than falls back), cost and tokens from the turns' accounting, latency of the
evaluated turn (median and p95, nearest rank), and ``leaks``: mask placeholders found in any
reply the user was sent.

Cases with a fixed proposal (group ``deciding``) measure the deciding layers, not the brain:
they are left out of a brain's figures and summed apart under ``deciding`` (the same figures,
without cost and latency, which belong to the brain).

>>> from datetime import datetime, UTC
>>> now = datetime(2026, 11, 18, 1, 0, tzinfo=UTC)
>>> value_matches("2026-11-19", "明日", now), value_matches(Contains(contains="見積"), "見積書を作成", now)
(True, True)
"""

from __future__ import annotations

import json
import math
import re
import statistics
import unicodedata
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from shared_lib.dates import read
from shared_lib.errors import ConfigError
from shared_lib.evals.dataset import DECIDING, FALLBACKS, Case, Contains, Expected, ParamValue
from shared_lib.evals.runner import Observed
from shared_lib.persona.catalogue import load_persona

_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TRIM = " \u3000\t\n、。，．,.!！?？「」『』\"'"
MAX_FAILURES_SHOWN = 40
MAX_LEAKS_SHOWN = 10
MAX_REPLY_SHOWN = 200


def _norm(value: Any) -> str:
    return unicodedata.normalize("NFKC", str(value)).strip(_TRIM).lower()


def _as_date(value: Any, now: datetime) -> date | None:
    text = str(value).strip()
    if _ISO_DATE.match(text):
        return date.fromisoformat(text)
    reading = read(text, now, whole=True)
    return reading.date if reading is not None else None


def value_matches(expected: ParamValue, observed: Any, now: datetime) -> bool:
    """Whether a proposed parameter value is what the case expects (see ``dataset``)."""
    if observed is None:
        return False
    if isinstance(expected, Contains):
        return _norm(expected.contains) in _norm(observed)
    if isinstance(expected, bool) or isinstance(observed, bool):
        return expected is observed
    if isinstance(expected, int):
        return _norm(observed) == str(expected)
    if isinstance(expected, list):
        seen = observed if isinstance(observed, list) else [observed]
        return sorted(map(_norm, expected)) == sorted(map(_norm, seen))
    if _ISO_DATE.match(expected):
        return _as_date(observed, now) == date.fromisoformat(expected)
    return _norm(expected) == _norm(observed)


@lru_cache(maxsize=4)
def fallback_texts(path: str = str(FALLBACKS)) -> tuple[str, ...]:
    """The generic fallbacks (``fallbacks.json``: persona messages by key, and phrases), normalised."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        persona = load_persona()
        texts = [persona.messages[key] for key in data["persona_messages"]] + list(data["phrases"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"eval fallbacks {path}: {exc!r}") from exc
    return tuple(_norm(t) for t in texts)


def is_fallback(reply: str) -> bool:
    """Whether ``reply`` is (or holds) one of the generic fallbacks."""
    said = _norm(reply)
    return any(text in said for text in fallback_texts())


def reply_checks(exp: Expected, replies: list[str]) -> dict[str, bool]:
    """The reply labels of ``exp`` against what the user was told in answer to the utterance."""
    said = _norm("\n".join(replies))
    checks: dict[str, bool] = {}
    if exp.reply_contains:
        checks["reply_contains"] = bool(replies) and all(
            any(_norm(alt) in said for alt in ([item] if isinstance(item, str) else item))
            for item in exp.reply_contains
        )
    if exp.reply_not_contains:
        checks["reply_not_contains"] = not any(_norm(bad) in said for bad in exp.reply_not_contains)
    if exp.answers_question is not None:
        answered = bool(replies) and not any(is_fallback(r) for r in replies)
        checks["answers_question"] = answered == exp.answers_question
    return checks


@dataclass
class CaseScore:
    case: Case
    observed: Observed
    checks: dict[str, bool] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.observed.error is None and all(self.checks.values())


def score_case(case: Case, seen: Observed) -> CaseScore:
    exp = case.expected
    checks: dict[str, bool] = {}
    if exp.route is not None:
        checks["route"] = seen.route == exp.route.value
    if exp.output_type is not None:
        checks["output_type"] = seen.output_type == exp.output_type
    if exp.tool is not None:
        checks["tool"] = seen.tool == exp.tool
    for key, value in exp.parameters.items():
        checks[f"param:{key}"] = seen.tool == exp.tool and value_matches(
            value, seen.parameters.get(key), case.now
        )
    if exp.verdict is not None:
        checks["verdict"] = (
            seen.verdict_action == exp.verdict.action
            and exp.verdict.reason in (None, seen.verdict_reason)
            and set(exp.verdict.covers) <= set(seen.verdict_covers)
        )
    if exp.authorization is not None:
        auth = exp.authorization
        checks["authorization"] = seen.auth_result == auth.result and auth.reason in (None, seen.auth_reason)
    if exp.clarification is not None:
        checks["clarification"] = seen.clarification == exp.clarification
    if exp.executed is not None:
        checks["executed"] = seen.executed == exp.executed
    checks.update(reply_checks(exp, seen.last_replies))
    return CaseScore(case, seen, checks)


def _rate(results: Iterable[bool]) -> dict[str, Any]:
    values = list(results)
    correct = sum(values)
    return {
        "correct": correct,
        "total": len(values),
        "rate": round(correct / len(values), 4) if values else None,
    }


def _checks(scores: list[CaseScore], pick: Callable[[str], bool]) -> dict[str, Any]:
    return _rate(ok for s in scores for name, ok in s.checks.items() if pick(name))


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100) of a non-empty list."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


DECIDING_NOTE = (
    "cases with a fixed proposal: the same for every brain, they measure the deciding layers "
    "(constitution, guardian, gate, executor, responder) and are not in the brain's figures"
)


def summarize(
    brain: str,
    scores: list[CaseScore],
    *,
    model: str | None = None,
    internal: Iterable[str] = (),
    peer: str | None = None,
) -> dict[str, Any]:
    """One brain's figures over a run (the JSON the command prints per brain): its own cases,
    and the ``deciding`` cases apart (``None`` when the run had none).

    ``internal``: names the user must never see (tools, parameters); ``hygiene`` counts the
    cases whose replies showed one, or an ISO date, next to ``leaks``.
    """
    names = list(internal)
    fixed = [s for s in scores if s.case.group == DECIDING]
    own = _figures(brain, [s for s in scores if s.case.group != DECIDING], model, names)
    deciding = _figures(DECIDING, fixed, None, names) if fixed else None
    if deciding is not None:
        for brain_only in ("brain", "model", "cost", "latency_ms"):
            deciding.pop(brain_only)
        deciding["note"] = DECIDING_NOTE
    return {**own, "peer": peer, "deciding": deciding}


def _figures(brain: str, scores: list[CaseScore], model: str | None, names: list[str]) -> dict[str, Any]:
    by_category: dict[str, list[bool]] = defaultdict(list)
    by_group: dict[str, list[bool]] = defaultdict(list)
    for s in scores:
        by_category[s.case.category].append(s.passed)
        by_group[s.case.group].append(s.passed)
    latencies = [s.observed.latency_ms for s in scores if s.observed.error is None]
    leaks = [(s.case.id, leak) for s in scores for leak in s.observed.leaks()]
    cost = sum(s.observed.cost_usd for s in scores)
    return {
        "brain": brain,
        "model": model,
        "cases": len(scores),
        "passed": sum(s.passed for s in scores),
        "accuracy": _rate(s.passed for s in scores)["rate"],
        "errors": sum(s.observed.error is not None for s in scores),
        "route_accuracy": _checks(scores, lambda n: n == "route"),
        "output_type_accuracy": _checks(scores, lambda n: n == "output_type"),
        "tool_accuracy": _checks(scores, lambda n: n == "tool"),
        "parameter_accuracy": _checks(scores, lambda n: n.startswith("param:")),
        "verdict_agreement": _checks(scores, lambda n: n == "verdict"),
        "authorization_agreement": _checks(scores, lambda n: n == "authorization"),
        "clarification_agreement": _checks(scores, lambda n: n == "clarification"),
        "execution_agreement": _checks(scores, lambda n: n == "executed"),
        "reply_agreement": _checks(scores, lambda n: n.startswith("reply_") or n == "answers_question"),
        "answers_question": _checks(scores, lambda n: n == "answers_question"),
        "by_group": {k: _rate(v) for k, v in sorted(by_group.items())},
        "by_category": {k: _rate(v) for k, v in sorted(by_category.items())},
        "cost": {
            "total_usd": round(cost, 6),
            "per_case_usd": round(cost / len(scores), 6) if scores else 0.0,
            "input_tokens": sum(s.observed.input_tokens for s in scores),
            "output_tokens": sum(s.observed.output_tokens for s in scores),
            "llm_calls": sum(s.observed.llm_calls for s in scores),
        },
        "latency_ms": {
            "median": round(statistics.median(latencies), 3) if latencies else None,
            "p95": round(percentile(latencies, 95), 3) if latencies else None,
        },
        "leaks": len(leaks),
        "leak_examples": [{"case": cid, "placeholder": leak} for cid, leak in leaks[:MAX_LEAKS_SHOWN]],
        "hygiene": _hygiene(scores, names),
        "failures": [_failure(s) for s in scores if not s.passed][:MAX_FAILURES_SHOWN],
    }


def _hygiene(scores: list[CaseScore], names: list[str]) -> dict[str, Any]:
    dated = [(s.case.id, s.observed.iso_dates()) for s in scores]
    named = [(s.case.id, s.observed.internal_names(names)) for s in scores]
    return {
        "iso_date_cases": sum(bool(found) for _, found in dated),
        "internal_name_cases": sum(bool(found) for _, found in named),
        "examples": [{"case": cid, "found": found} for cid, found in [*dated, *named] if found][
            :MAX_LEAKS_SHOWN
        ],
    }


def _failure(s: CaseScore) -> dict[str, Any]:
    seen = s.observed
    return {
        "id": s.case.id,
        "category": s.case.category,
        "failed": [name for name, ok in s.checks.items() if not ok] + (["error"] if seen.error else []),
        "observed": {
            "route": seen.route,
            "output_type": seen.output_type,
            "tool": seen.tool,
            "parameters": seen.parameters,
            "verdict": f"{seen.verdict_action}/{seen.verdict_reason}",
            "authorization": f"{seen.auth_result}/{seen.auth_reason}",
            "response_kind": seen.response_kind,
            "reply": "\n".join(seen.last_replies)[:MAX_REPLY_SHOWN],
            "error": seen.error,
        },
    }
