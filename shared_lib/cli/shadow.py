"""``charter shadow report / compare`` and ``charter guard status``.

Exit codes: 0 ok, 1 verdict HOLD with ``--fail-on-hold`` (or ``--min-agreement``) or a
turn without records, 2 bad input or no store where one is needed.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from shared_lib.cli.console import NO_STORE, duration_arg, err, json_text, live_store
from shared_lib.cli.operations import store_options
from shared_lib.ids import utc_now
from shared_lib.rollout.report import (
    PromotionCriteria,
    build_report,
    load_comparisons,
    parse_duration,
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
    except (OSError, ValueError) as exc:
        err(f"criteria: {exc}")
        return 2
    store = live_store(args)
    if store is None:
        err(f"error: {NO_STORE}: a report over no records would say nothing")
        return 2
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
        err(f"error: {NO_STORE}")
        return 2
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
            f"  {side:<9} intent {f['intent']}  tools {f['tools']}  guardian {f['guardian_action']}"
            f"/{f['guardian_reason']}  auth {f['auth_result']}  params {f['parameters']}"
        )
    for name, link in stored["links"].items():
        print(f"  {name}: {link}")
    return 0


def _guard_status(args: argparse.Namespace) -> int:
    from shared_lib.adapters.inproc_bus import InProcessBus
    from shared_lib.adapters.recording_channel import RecordingChannel
    from shared_lib.composition import build_runtime
    from shared_lib.rollout.guard import guard_status

    store = live_store(args)
    if store is None:
        err(f"error: {NO_STORE}: the guard keeps its window in the live store")
        return 2
    rt = build_runtime(store=store, llm=None, bus=InProcessBus(), channels={"http": RecordingChannel("http")})
    status = guard_status(rt)
    if args.json:
        print(json_text(status))
    else:
        for c in status["checks"]:
            state = "TRIPPED" if c["tripped"] else ("ok" if c["enough_samples"] else "few samples")
            print(f"{c['name']:<16} {state:<12} {c['reason']}")
        print(f"window since {status['window_start']}; last trip: {status['last_trip'] or 'never'}")
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
