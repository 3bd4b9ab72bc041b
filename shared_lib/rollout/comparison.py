"""Shadow comparisons: the served turn against its dry-run candidate, one record per turn.

The observer calls two hooks, in any order and any number of times:

* ``on_served_turn(rt, turn)`` when a served turn's observability record is written;
* ``on_shadow_candidate(rt, candidate_turn)`` when a candidate arrives on ``turns.shadow``.

Each stores its side (``orgs/{org}/shadow_sides/{turn_id}-served|candidate``: the facts
compared, not the whole record) and then tries ``store_comparison``; whichever comes
second finds both sides and writes ``orgs/{org}/shadow_comparisons/{turn_id}`` with
``create``, so a redelivery or a race never writes it twice. A side is written before the
other is read, so one of two concurrent hooks always sees both.

What is compared (``decision_facts``), over every step of each arm: what it did to the world
(its effectful calls, all steps together; reads are kept per step in ``steps`` and compared with
nothing, so search-then-act agrees with acting at once) and the decisive step's decision (its
first step with an effect, else its last):

intent        the decisive step's ``output_type`` (tool_call / text_response / clarification_needed)
tool          the effectful tool names (as a sorted list); an arm without an effect: its last
              step's tools
parameters    the same calls with parameters normalised (NFKC, trimmed, case-folded, empty dropped)
guardian      the decisive step's action and reason code
authorization ``allowed`` vs ``denied``: a disagreement is only counted when both arms
              reached the gate (``not_applicable`` follows from the tool or guardian choice)
reply, cost   reply length; decision latency (brain + guardian + authorizer, every step), LLM
              latency, tokens and cost, as deltas candidate minus served

A candidate that crashed or timed out (an error from ``brain_shadow``) is a *failure*: it
is recorded with the comparison but carries no agreement.
"""

from __future__ import annotations

import functools
import json
import unicodedata
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from shared_lib.observability.records import observability_record
from shared_lib.ports import Store
from shared_lib.tools.catalog import read_catalogue

if TYPE_CHECKING:
    from shared_lib.turn.envelope import Turn


class Runtime(Protocol):
    """What the comparison uses of the runtime."""

    store: Store

    @property
    def clock(self) -> Callable[[], datetime]: ...


SIDES = "shadow_sides"
COMPARISONS = "shadow_comparisons"
SHADOW_LAYER = "brain_shadow"
DECISION_LAYERS = ("brain", "guardian", "authorizer")
AGREEMENT_FIELDS = ("intent", "tool", "parameters", "guardian_action", "guardian_reason", "authorization")
GATE_RESULTS = ("allowed", "denied")
RETENTION = timedelta(days=90)


# --------------------------------------------------------------------------- pure comparison


def normalise_value(value: Any) -> Any:
    """Strings NFKC-normalised, whitespace collapsed and case-folded; containers recursively."""
    if isinstance(value, str):
        return " ".join(unicodedata.normalize("NFKC", value).split()).casefold()
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, dict):
        return {str(k): normalise_value(v) for k, v in sorted(value.items()) if not _empty(v)}
    if isinstance(value, list | tuple):
        return [normalise_value(v) for v in value]
    return str(value)


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, str | list | dict) and not value)


def _num(value: Any) -> float:
    try:
        return float(value or 0)
    except (TypeError, ValueError):
        return 0.0


@functools.cache
def read_tools() -> frozenset[str]:
    """The catalogue's tools without an effect (``effect: read``). A name it does not know (an
    organisation's skill) counts as an effect: it is compared, never skipped."""
    return frozenset(e.name for e in read_catalogue().tools if e.effect == "read")


def _calls(tool_calls: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return sorted(
        (
            str(t.get("tool_name")),
            json.dumps(normalise_value(t.get("parameters") or {}), ensure_ascii=False, sort_keys=True),
        )
        for t in tool_calls
    )


def step_facts(record: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per step of the record (``steps``; a record without them is one step)."""
    rows = record.get("steps") or [
        {
            "step": 1,
            "output_type": record.get("output_type"),
            "tool_calls": record.get("selected_tools") or [],
            "verdict": record.get("guardian_action"),
            "verdict_reason": record.get("guardian_reason"),
            "authorization": record.get("auth_result"),
            "authorization_reason": record.get("auth_reason"),
            "ok": all(r.get("ok", True) for r in record.get("execution_result") or []),
        }
    ]
    reads = read_tools()
    out = []
    for i, row in enumerate(rows, 1):
        calls = _calls(row.get("tool_calls") or [])
        out.append(
            {
                "step": int(row.get("step") or i),
                "intent": row.get("output_type") or "none",
                "tools": [name for name, _ in calls],
                "calls": calls,
                "effect": any(name not in reads for name, _ in calls),
                "guardian_action": row.get("verdict") or "none",
                "guardian_reason": row.get("verdict_reason") or "",
                "auth_result": row.get("authorization") or "none",
                "auth_reason": row.get("authorization_reason") or "",
                "ok": bool(row.get("ok", True)),
            }
        )
    return out


def decision_facts(record: dict[str, Any]) -> dict[str, Any]:
    """The comparable facts of one observability record (served or candidate), over every step.

    What an arm did to the world is its effectful calls, all steps together; the decisive step is
    its first step with an effect (else its last): its intent, verdict and gate are compared. A
    step of reads only is kept in ``steps`` and compared with nothing, so a candidate that looks
    first (search, then act) agrees with an arm that acts at once on the same action. An arm
    without an effect is compared by the reads of its last step (what it answered from)."""
    steps = step_facts(record)
    effects = sorted(c for s in steps for c in s["calls"] if c[0] not in read_tools())
    decisive = next((s for s in steps if s["effect"]), steps[-1])
    calls = effects if effects else decisive["calls"]
    timings = record.get("timings") or {}
    usage = record.get("usage") or {}
    failures = [e for e in record.get("errors") or [] if e.get("layer") == SHADOW_LAYER]
    return {
        "arm": record.get("arm"),
        "intent": decisive["intent"],
        "tools": [name for name, _ in calls],
        "parameters": json.dumps(calls, ensure_ascii=False),
        "guardian_action": decisive["guardian_action"],
        "guardian_reason": decisive["guardian_reason"],
        "auth_result": decisive["auth_result"],
        "auth_reason": decisive["auth_reason"],
        "decisive_step": decisive["step"],
        "steps": [{k: v for k, v in s.items() if k != "calls"} for s in steps],
        "response_kind": record.get("response_kind"),
        "reply_length": len(str(record.get("final_response") or "")),
        "latency_ms": round(sum(_timing(timings, layer) for layer in DECISION_LAYERS), 3),
        "llm_ms": round(_num(record.get("llm_duration_ms")), 3),
        "tokens": int(_num(usage.get("input_tokens")) + _num(usage.get("output_tokens"))),
        "cost_usd": _num(record.get("cost_usd")),
        "failed": bool(failures),
        "failure": str(failures[0].get("message", ""))[:500] if failures else "",
    }


def _timing(timings: dict[str, Any], layer: str) -> float:
    """A layer's milliseconds over every step (a later step's are under ``layer#n``)."""
    return sum(_num(v) for k, v in timings.items() if k == layer or k.startswith(f"{layer}#"))


def compare_facts(served: dict[str, Any], candidate: dict[str, Any]) -> dict[str, Any]:
    """Agreement per field, mismatching fields, and deltas (candidate minus served)."""
    failed = bool(candidate.get("failed"))
    both_gated = served["auth_result"] in GATE_RESULTS and candidate["auth_result"] in GATE_RESULTS
    agree: dict[str, bool | None] = {
        "intent": served["intent"] == candidate["intent"],
        "tool": served["tools"] == candidate["tools"],
        "parameters": served["parameters"] == candidate["parameters"],
        "guardian_action": served["guardian_action"] == candidate["guardian_action"],
        "guardian_reason": served["guardian_reason"] == candidate["guardian_reason"],
        "authorization": served["auth_result"] == candidate["auth_result"] if both_gated else None,
    }
    if failed:
        agree = dict.fromkeys(AGREEMENT_FIELDS)
    mismatches = [name for name, ok in agree.items() if ok is False]
    delta = {
        name: round(_num(candidate.get(name)) - _num(served.get(name)), 6)
        for name in ("reply_length", "latency_ms", "llm_ms", "tokens", "cost_usd")
    }
    return {
        "agree": agree,
        "all_agree": None if failed else not mismatches,
        "mismatches": mismatches,
        "candidate_failed": failed,
        "delta": delta,
    }


def links(turn_id: str, org_id: str) -> dict[str, str]:
    """Where to read both decision trails."""
    return {
        "served": f"charter turns show {turn_id} --org {org_id}",
        "candidate": f"charter turns show {turn_id} --org {org_id} --shadow",
        "admin": f"/admin/orgs/{org_id}/turns/{turn_id}",
    }


def compare(served_record: dict[str, Any], candidate_record: dict[str, Any]) -> dict[str, Any]:
    """The comparison record of two observability records of the same turn (pure)."""
    turn_id = str(served_record.get("turn_id") or candidate_record.get("turn_id"))
    org_id = str(served_record.get("org_id") or candidate_record.get("org_id"))
    return _record(
        turn_id,
        org_id,
        served_record.get("timestamp"),
        decision_facts(served_record),
        decision_facts(candidate_record),
    )


def _record(
    turn_id: str, org_id: str, at: Any, served: dict[str, Any], candidate: dict[str, Any]
) -> dict[str, Any]:
    return {
        "turn_id": turn_id,
        "org_id": org_id,
        "at": at,
        "served_arm": served["arm"],
        "candidate_arm": candidate["arm"],
        "served": served,
        "candidate": candidate,
        **compare_facts(served, candidate),
        "links": links(turn_id, org_id),
    }


# --------------------------------------------------------------------------- storage and hooks


def side_path(org_id: str, turn_id: str, side: str) -> str:
    return f"orgs/{org_id}/{SIDES}/{turn_id}-{side}"


def comparison_path(org_id: str, turn_id: str) -> str:
    return f"orgs/{org_id}/{COMPARISONS}/{turn_id}"


def _store_side(rt: Runtime, turn: Turn, side: str) -> None:
    record = observability_record(turn)
    rt.store.set(
        side_path(turn.org_id, turn.turn_id, side),
        {
            "turn_id": turn.turn_id,
            "org_id": turn.org_id,
            "at": turn.created_at,
            "facts": decision_facts(record),
            "expires_at": rt.clock() + RETENTION,
        },
    )


def on_shadow_candidate(rt: Runtime, candidate_turn: Turn) -> dict[str, Any] | None:
    """Observer hook for ``turns.shadow``: store the candidate side; compare when the served side exists."""
    if not candidate_turn.shadow:  # one candidate per turn, published once after its last step
        return None
    _store_side(rt, candidate_turn, "candidate")
    return store_comparison(rt, candidate_turn.turn_id, candidate_turn.org_id)


def on_served_turn(rt: Runtime, turn: Turn) -> dict[str, Any] | None:
    """Observer hook for a recorded served turn: store the served side if a candidate is expected."""
    if turn.shadow or not turn.candidate_expected():
        return None
    _store_side(rt, turn, "served")
    return store_comparison(rt, turn.turn_id, turn.org_id)


def _facts(rt: Runtime, org_id: str, turn_id: str, side: str) -> tuple[dict[str, Any], Any] | None:
    doc = rt.store.get(side_path(org_id, turn_id, side))
    if doc is not None:
        return dict(doc["facts"]), doc.get("at")
    # Fall back to the observer's own records (e.g. recomputing with ``charter shadow compare``).
    fallback = (
        f"orgs/{org_id}/observability/{turn_id}"
        if side == "served"
        else f"orgs/{org_id}/shadow_candidates/{turn_id}-0"
    )
    record = rt.store.get(fallback)
    return (decision_facts(record), record.get("timestamp")) if record is not None else None


def store_comparison(rt: Runtime, turn_id: str, org_id: str) -> dict[str, Any] | None:
    """Write the comparison when both sides exist (idempotent ``create``); None while one is missing."""
    served = _facts(rt, org_id, turn_id, "served")
    candidate = _facts(rt, org_id, turn_id, "candidate")
    if served is None or candidate is None:
        return None
    record = _record(turn_id, org_id, served[1] or candidate[1], served[0], candidate[0])
    record["expires_at"] = rt.clock() + RETENTION
    if not rt.store.create(comparison_path(org_id, turn_id), record):
        return rt.store.get(comparison_path(org_id, turn_id))
    return record
