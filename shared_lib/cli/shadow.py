"""``charter shadow report / compare`` and ``charter guard status / explain``.

Exit codes: 0 ok, 1 verdict HOLD with ``--fail-on-hold`` (or ``--min-agreement``) or a
turn without records, 2 bad input or no store where one is needed.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from shared_lib.cli.console import NO_STORE, duration_arg, err, json_text, live_store
from shared_lib.cli.operations import store_options
from shared_lib.cli.runner import fail
from shared_lib.ids import utc_now
from shared_lib.rollout.report import (
    PromotionCriteria,
    build_report,
    load_comparisons,
    parse_duration,
    plain,
    render_text,
)


def _criteria(args: argparse.Namespace) -> PromotionCriteria:
    base = (
        PromotionCriteria.model_validate_json(Path(args.criteria).read_text())
        if args.criteria
        else (PromotionCriteria())
    )
    given = {
        k: getattr(args, k)
        for k in (
            "min_samples",
            "min_tool_agreement",
            "max_authorization_disagreements",
            "max_candidate_failure_rate",
        )
        if getattr(args, k) is not None
    }
    if args.min_agreement is not None:
        given["min_tool_agreement"] = args.min_agreement
    return base.model_copy(update=given) if given else base


def _report(args: argparse.Namespace) -> int:
    try:
        criteria = _criteria(args)
    except ValidationError as exc:
        where = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(file)'}: {e['msg']}" for e in exc.errors())
        return fail(f"criteria {args.criteria}: {where}", 2)
    except (OSError, ValueError) as exc:
        return fail(f"criteria: {exc}", 2)
    store = live_store(args)
    if store is None:
        return fail(f"{NO_STORE}: a report over no records would say nothing", 2)
    rows = load_comparisons(store, since=utc_now() - args.since, org=args.org)
    report = build_report(
        rows, criteria=criteria, since=utc_now() - args.since, org=args.org, mismatch_limit=args.mismatches
    )
    print(json_text(report) if args.json else render_text(report))
    gate = args.fail_on_hold or args.min_agreement is not None
    return 1 if gate and not report["verdict"]["promote"] else 0


def _compare(args: argparse.Namespace) -> int:
    from shared_lib.rollout.comparison import compare, comparison_path

    store = live_store(args)
    if store is None:
        return fail(f"{NO_STORE}", 2)
    stored = store.get(comparison_path(args.org, args.turn_id))
    if stored is None:
        served = store.get(f"orgs/{args.org}/observability/{args.turn_id}")
        candidate = store.get(f"orgs/{args.org}/shadow_candidates/{args.turn_id}-0")
        if served is None or candidate is None:
            err(
                f"turn {args.turn_id}: served record {'found' if served else 'missing'}, "
                f"candidate {'found' if candidate else 'missing'}"
            )
            return 1
        stored = {**compare(served, candidate), "stored": False}
    if args.json:
        print(json_text(stored))
        return 0
    print(
        f"turn {args.turn_id}: {'agree' if stored['all_agree'] else 'MISMATCH ' + ', '.join(stored['mismatches'])}"
    )
    for side in ("served", "candidate"):
        f = stored[side]
        print(
            f"  {side:<9} intent {plain(f['intent'])}  tools {plain(f['tools'])}  guardian "
            f"{plain(f['guardian_action'])}/{plain(f['guardian_reason'])}  auth {plain(f['auth_result'])}  "
            f"params {json_text(f['parameters'])}"
        )
        for st in f.get("steps") or []:  # every step; reads are shown, the acting step is compared
            print(
                f"    step {st['step']}{' *' if st['step'] == f.get('decisive_step') else '  '} "
                f"{plain(st['intent'])}  tools {plain(st['tools'])}  "
                f"{'effect' if st['effect'] else 'read'}  guardian {plain(st['guardian_action'])}  "
                f"auth {plain(st['auth_result'])}  {'ok' if st['ok'] else 'failed'}"
            )
    for name, link in stored["links"].items():
        print(f"  {name}: {link}")
    return 0


def _guard_view(args: argparse.Namespace) -> dict[str, Any] | None:
    """The guard's status from the live store (None when there is no store)."""
    from shared_lib.adapters.inproc_bus import InProcessBus
    from shared_lib.adapters.recording_channel import RecordingChannel
    from shared_lib.rollout.guard import guard_status
    from shared_lib.wiring.composition import build_runtime

    store = live_store(args)
    if store is None:
        fail(f"{NO_STORE}: the guard keeps its window in the live store")
        return None
    rt = build_runtime(store=store, llm=None, bus=InProcessBus(), channels={"http": RecordingChannel("http")})
    return guard_status(rt)


def _guard_status(args: argparse.Namespace) -> int:
    status = _guard_view(args)
    if status is None:
        return 2
    if args.json:
        print(json_text(status))
        return 0
    for org, group in status["orgs"].items():
        for c in group["checks"]:
            state = "TRIPPED" if c["tripped"] else ("ok" if c["enough_samples"] else "few samples")
            print(f"{org:<20} {c['name']:<28} {state:<12} {c['reason']}")
    cost = status["cost_check"]
    print(f"{'(all)':<20} {cost['name']:<28} {'TRIPPED' if cost['tripped'] else 'ok':<12} {cost['reason']}")
    trip = status["last_trip"]
    print(
        f"window since {status['window_start']}; last trip: {trip.get('message') or trip.get('reason') or 'never'}"
    )
    return 0


# Each check of the guard and the field of ``RollbackGuardConfig`` that bounds it.
_LIMITS = (
    ("llm_error_rate", "llm_error_rate_max"),
    ("constitution_violation_rate", "constitution_violation_rate_max"),
    ("block_rate", "block_rate_max"),
    ("tool_error_rate", "tool_error_rate_max"),
    ("llm_latency_p95_ms", "llm_latency_ms_max"),
    ("shadow_disagreement_rate", "shadow_disagreement_rate_max"),
    ("daily_cost_usd", "daily_cost_budget_usd"),
)


def _explanation(status: dict[str, Any], org: str | None) -> dict[str, Any]:
    """What ``guard explain`` shows: the window, per organisation brain-caused and excluded
    counts with each check, the thresholds, the decision now, and the last trip."""
    orgs = status["orgs"] if org is None else {k: v for k, v in status["orgs"].items() if k == org}
    return {
        "window_start": status["window_start"],
        "window_minutes": status["window_minutes"],
        "now": status["now"],
        "orgs": {
            name: {
                "window_start": group["window_start"],
                "brain_caused": {k: v for k, v in group["totals"].items() if k not in group["excluded"]},
                "excluded": group["excluded"],
                "checks": group["checks"],
                "tripped": group["tripped"],
            }
            for name, group in orgs.items()
        },
        "pool": {k: status["pool"][k] for k in ("orgs", "totals", "tripped")},
        "daily_cost": status["cost_check"],
        "active_orgs": status["active_orgs"],
        "tripped_earlier": status["tripped_earlier"],
        "thresholds": status["config"],
        "decision_now": status["decision"],
        "last_trip": status["last_trip"],
    }


def _guard_explain(args: argparse.Namespace) -> int:
    status = _guard_view(args)
    if status is None:
        return 2
    view = _explanation(status, args.org)
    if args.json:
        print(json_text(view))
        return 0
    print(f"window: {view['window_minutes']} min, {view['window_start']} .. {view['now']}")
    t = view["thresholds"]
    print(
        "thresholds: "
        + ", ".join(
            f"{name} > {t[field]:g}" if t[field] is not None else f"{name} off" for name, field in _LIMITS
        )
        + f"; min samples: turns {t['min_turns']}, tool calls {t['min_tool_calls']}, LLM calls "
        f"{t['min_llm_calls']}, comparisons {t['min_comparisons']}; global at {t['global_trip_orgs']} "
        f"organisations or {t['global_trip_share']:.0%} of the active ones"
    )
    if args.org and args.org not in view["orgs"]:
        print(f"{args.org}: nothing counted in the window")
    for name, group in view["orgs"].items():
        counts = ", ".join(f"{k} {v:g}" for k, v in group["brain_caused"].items())
        excluded = ", ".join(f"{k} {v:g}" for k, v in group["excluded"].items())
        print(f"{name} (since {group['window_start']})")
        print(f"  counted (brain-caused, with their bases): {counts}")
        print(f"  excluded (user- or system-caused): {excluded}")
        for c in group["checks"]:
            state = "TRIPPED" if c["tripped"] else ("ok" if c["enough_samples"] else "few samples")
            print(f"  {c['name']:<28} {state:<12} {c['reason']}")
    pool = view["pool"]
    if pool["orgs"]:
        print(
            f"pool of small organisations ({', '.join(pool['orgs'])}): {'; '.join(pool['tripped']) or 'ok'}"
        )
    cost = view["daily_cost"]
    print(f"daily cost: {'TRIPPED' if cost['tripped'] else 'ok'} {cost['reason']}")
    d = view["decision_now"]
    print(
        f"decision now: {' '.join([d['action'], *d['orgs']])} ({d['why']}){': ' if d['reasons'] else ''}"
        + "; ".join(d["reasons"])
    )
    trip = view["last_trip"]
    print(f"last trip: {trip.get('message') or trip.get('reason') or 'never'}")
    return 0


def register(sub: Any) -> None:
    """The ``shadow`` and ``guard`` commands and their actions."""
    shadow = sub.add_parser("shadow", help="shadow-mode comparisons and the promotion report")
    ssub = shadow.add_subparsers(dest="shadow_command", metavar="ACTION")
    p = ssub.add_parser("report", help="agreement, mismatches, latency and cost deltas, promotion verdict")
    p.add_argument(
        "--since", type=duration_arg, default=parse_duration("7d"), help="window, e.g. 24h, 7d (default 7d)"
    )
    p.add_argument("--org")
    p.add_argument("--json", action="store_true")
    p.add_argument("--criteria", metavar="FILE", help="promotion criteria JSON (PromotionCriteria fields)")
    p.add_argument("--min-samples", type=int)
    p.add_argument("--min-tool-agreement", type=float)
    p.add_argument("--max-authorization-disagreements", type=int)
    p.add_argument("--max-candidate-failure-rate", type=float)
    p.add_argument("--mismatches", type=int, default=50, help="how many mismatches to list (default 50)")
    p.add_argument("--fail-on-hold", action="store_true", help="exit 1 unless the verdict is PROMOTE")
    p.add_argument(
        "--min-agreement",
        type=float,
        metavar="RATE",
        help="CI gate: minimum tool agreement (0-1); implies --fail-on-hold",
    )
    store_options(p)
    p.set_defaults(func=_report, store=None)

    p = ssub.add_parser("compare", help="the comparison of one turn (recomputed from records if not stored)")
    p.add_argument("turn_id")
    p.add_argument("--org", required=True)
    p.add_argument("--json", action="store_true")
    store_options(p)
    p.set_defaults(func=_compare, store=None)

    guard = sub.add_parser("guard", help="the rollback guard")
    gsub = guard.add_subparsers(dest="guard_command", metavar="ACTION")
    p = gsub.add_parser("status", help="the guard's window, thresholds and last trip")
    p.add_argument("--json", action="store_true")
    store_options(p)
    p.set_defaults(func=_guard_status, store=None)
    p = gsub.add_parser(
        "explain",
        help="per organisation: what the guard counts (brain-caused) and leaves out (user-caused), "
        "the thresholds, the decision it would take now, and the last trip with its reasons",
    )
    p.add_argument("--org", help="only this organisation")
    p.add_argument("--json", action="store_true")
    store_options(p)
    p.set_defaults(func=_guard_explain, store=None)
