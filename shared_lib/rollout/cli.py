"""``charter flags ...``, ``charter shadow ...`` and ``charter guard ...``.

The live store is the operator runtime's (``--store``/``--project``, the settings, or what
``charter local up`` / ``charter demo`` left in ``.charter/``: see
``shared_lib.composition.operator_runtime``). With no store configured, ``flags`` commands
fall back to the repository's flags file and say so on stderr; ``shadow`` and ``guard``
exit 2. Tests hand a store in through the
parsed arguments (``args.store``) instead.

Exit codes: 0 ok, 1 a check failed (invalid live document, verdict HOLD with
``--fail-on-hold``), 2 bad input (an invalid flags file, a bad argument).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from shared_lib.errors import ConfigError
from shared_lib.flags import (
    REPO_FLAGS_FILE,
    FlagsDocument,
    FlagsOverride,
    FlagsProvider,
    bucket_fine,
    evaluate,
    load_flags_file,
    seed_flags,
)
from shared_lib.ids import utc_now
from shared_lib.ops.cli import store_options
from shared_lib.ports import Store
from shared_lib.rollout.overrides import audit_entries, clear_override, write_override
from shared_lib.rollout.report import (
    PromotionCriteria,
    build_report,
    load_comparisons,
    parse_duration,
    render_text,
)

Handler = Callable[[argparse.Namespace], int]


def _json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, default=_default, sort_keys=False)


def _default(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else str(value)


NO_STORE = "no store configured (charter local up, charter demo, or --store/--project)"


def _err(message: str) -> None:
    print(message, file=sys.stderr)


def live_store(args: argparse.Namespace) -> Store | None:
    """``args.store`` when a caller handed one in, else the runtime's store; None when none is configured."""
    if getattr(args, "store", None) is not None:
        store: Store = args.store
        return store
    from shared_lib.composition import operator_runtime

    try:
        rt = operator_runtime(
            store=getattr(args, "store_choice", None), project=getattr(args, "project", None)
        )
    except ConfigError:
        return None
    return rt.store


# --------------------------------------------------------------------------- flags


def _validate(args: argparse.Namespace) -> int:
    path = Path(args.file)
    try:
        doc = load_flags_file(path)
    except ConfigError as exc:
        _err(str(exc))
        return 2
    print(
        f"{path}: ok (version {doc.version}, brain_mode {doc.brain_mode}, canary {doc.canary_percent:g} %, "
        f"kill_switch {'on' if doc.kill_switch else 'off'})"
    )
    return 0


def _explanation(
    doc: FlagsDocument | None, override: FlagsOverride | None, org: str, user: str, now: datetime
) -> dict[str, Any]:
    section = evaluate(doc, org, user, override=override, now=now)
    return {
        "arm": section.arm,
        "reason": section.reason,
        "bucket": bucket_fine(doc.bucket_salt, org, user) if doc is not None else None,
        "flags_version": section.flags_version,
    }


def _flags_source(args: argparse.Namespace) -> tuple[FlagsDocument | None, FlagsOverride | None, str] | int:
    """(document, override, error) from ``--flags FILE``, the live store, or the repo file."""
    if args.flags:
        try:
            return load_flags_file(args.flags), None, ""
        except ConfigError as exc:
            _err(str(exc))
            return 2
    store = live_store(args)
    if store is None:
        _err(
            f"no flags store configured (set FIRESTORE_EMULATOR_HOST and CHARTER_PROJECT, or run in the cloud): "
            f"evaluating the repository file {REPO_FLAGS_FILE}"
        )
        try:
            return load_flags_file(REPO_FLAGS_FILE), None, ""
        except ConfigError as exc:
            _err(str(exc))
            return 2
    snap = FlagsProvider(store, ttl_seconds=0, on_error=lambda code, message: None).snapshot()
    if snap.error:
        _err(f"live flags unusable, the runtime serves legacy: {snap.error}")
    return snap.doc, snap.override, snap.error


def _explain(args: argparse.Namespace) -> int:
    source = _flags_source(args)
    if isinstance(source, int):
        return source
    doc, override, error = source
    now = utc_now()
    if args.stdin:
        bad = 0
        for n, line in enumerate(sys.stdin, 1):
            if not line.strip():
                continue
            parts = [p.strip() for p in line.split(",")]
            if len(parts) != 2 or not all(parts):
                _err(f"stdin line {n}: expected 'org,user', got {line.strip()!r}")
                bad += 1
                continue
            print(_json(_explanation(doc, override, parts[0], parts[1], now)))
        return 2 if bad else (1 if error else 0)
    if not args.org or not args.user:
        _err("flags explain: --org and --user are required (or --stdin)")
        return 2
    result = _explanation(doc, override, args.org, args.user, now)
    if args.json:
        print(_json(result))
    else:
        bucket = "n/a" if result["bucket"] is None else f"{result['bucket']:.2f}"
        print(
            f"{args.org}/{args.user}: arm {result['arm']}  reason {result['reason']}  bucket {bucket}  "
            f"flags {result['flags_version'] or '(none)'}"
        )
    return 1 if error else 0


def _show(args: argparse.Namespace) -> int:
    store = live_store(args)
    if store is None:
        _err("no flags store configured: showing the repository file")
        doc = load_flags_file(REPO_FLAGS_FILE)
        print(_json({"source": f"file:{REPO_FLAGS_FILE}", "flags": doc.model_dump(), "override": None}))
        return 0
    snap = FlagsProvider(store, ttl_seconds=0, on_error=lambda code, message: None).snapshot()
    now = utc_now()
    out = {
        "source": snap.source,
        "error": snap.error or None,
        "flags": snap.doc.model_dump() if snap.doc else None,
        "override": (
            {**snap.override.model_dump(), "active": snap.override.active(now)} if snap.override else None
        ),
        "audit": audit_entries(store, limit=args.audit),
    }
    print(_json(out))
    return 1 if snap.error else 0


def _seed(args: argparse.Namespace) -> int:
    store = live_store(args)
    if store is None:
        _err("no flags store configured: nothing to seed (set FIRESTORE_EMULATOR_HOST and CHARTER_PROJECT)")
        return 2
    try:
        doc = seed_flags(store, args.file, updated_by=args.author)
    except ConfigError as exc:
        _err(str(exc))
        return 2
    print(f"seeded config/flags from {args.file}: version {doc.version}")
    return 0


def _on_off(text: str) -> bool:
    value = text.strip().lower()
    if value in ("on", "true", "1", "yes"):
        return True
    if value in ("off", "false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected on or off, got {text!r}")


def _duration(text: str) -> Any:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _override(args: argparse.Namespace) -> int:
    store = live_store(args)
    if store is None:
        _err("no flags store configured: an override needs the live store")
        return 2
    try:
        written = write_override(
            store,
            brain_mode=args.brain_mode,
            kill_switch=args.kill_switch,
            ttl=args.ttl,
            author=args.author,
            reason=args.reason,
        )
    except ConfigError as exc:
        _err(str(exc))
        return 2
    print(_json(written.model_dump() if written else None))
    return 0


def _clear(args: argparse.Namespace) -> int:
    store = live_store(args)
    if store is None:
        _err("no flags store configured: an override needs the live store")
        return 2
    cleared = clear_override(store, args.author, args.reason)
    print("override cleared" if cleared else "no override was set")
    return 0


# --------------------------------------------------------------------------- shadow and guard


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
        _err(f"criteria: {exc}")
        return 2
    store = live_store(args)
    if store is None:
        _err(f"error: {NO_STORE}: a report over no records would say nothing")
        return 2
    rows = load_comparisons(store, since=utc_now() - args.since, org=args.org)
    report = build_report(
        rows, criteria=criteria, since=utc_now() - args.since, org=args.org, mismatch_limit=args.mismatches
    )
    print(_json(report) if args.json else render_text(report))
    gate = args.fail_on_hold or args.min_agreement is not None
    return 1 if gate and not report["verdict"]["promote"] else 0


def _compare(args: argparse.Namespace) -> int:
    from shared_lib.rollout.comparison import compare, comparison_path

    store = live_store(args)
    if store is None:
        _err(f"error: {NO_STORE}")
        return 2
    stored = store.get(comparison_path(args.org, args.turn_id))
    if stored is None:
        served = store.get(f"orgs/{args.org}/observability/{args.turn_id}")
        candidate = store.get(f"orgs/{args.org}/shadow_candidates/{args.turn_id}-0")
        if served is None or candidate is None:
            _err(
                f"turn {args.turn_id}: served record {'found' if served else 'missing'}, "
                f"candidate {'found' if candidate else 'missing'}"
            )
            return 1
        stored = {**compare(served, candidate), "stored": False}
    if args.json:
        print(_json(stored))
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
        _err(f"error: {NO_STORE}: the guard keeps its window in the live store")
        return 2
    rt = build_runtime(store=store, llm=None, bus=InProcessBus(), channels={"http": RecordingChannel("http")})
    status = guard_status(rt)
    if args.json:
        print(_json(status))
    else:
        for c in status["checks"]:
            state = "TRIPPED" if c["tripped"] else ("ok" if c["enough_samples"] else "few samples")
            print(f"{c['name']:<16} {state:<12} {c['reason']}")
        print(f"window since {status['window_start']}; last trip: {status['last_trip'] or 'never'}")
    return 0


# --------------------------------------------------------------------------- registration


def register(sub: Any) -> None:
    flags = sub.add_parser("flags", help="feature flags: validate, explain, show, seed, override")
    fsub = flags.add_subparsers(dest="flags_command", metavar="ACTION")

    p = fsub.add_parser("validate", help="validate a flags file (exit 2 naming the bad field)")
    p.add_argument("file", nargs="?", default=str(REPO_FLAGS_FILE))
    p.set_defaults(func=_validate)

    p = fsub.add_parser("explain", help="which arm a person gets, and why")
    p.add_argument("--org")
    p.add_argument("--user")
    p.add_argument("--json", action="store_true", help="print {arm, reason, bucket, flags_version}")
    p.add_argument(
        "--flags", metavar="FILE", help="evaluate a proposed flags file instead of the live document"
    )
    p.add_argument("--stdin", action="store_true", help="read 'org,user' lines; print one JSON line each")
    store_options(p)
    p.set_defaults(func=_explain, store=None)

    p = fsub.add_parser("show", help="the live document, the override and the latest audit entries")
    p.add_argument("--audit", type=int, default=10, help="how many audit entries (default 10)")
    store_options(p)
    p.set_defaults(func=_show, store=None)

    p = fsub.add_parser("seed", help="write a flags file to the live store as Terraform does (local stack)")
    p.add_argument("file", nargs="?", default=str(REPO_FLAGS_FILE))
    p.add_argument("--author", default="seed")
    store_options(p)
    p.set_defaults(func=_seed, store=None)

    p = fsub.add_parser("override", help="runtime override with an expiry (emergency stop, rollback)")
    p.add_argument("--brain-mode", choices=["legacy", "shadow", "canary", "llm"])
    p.add_argument("--kill-switch", type=_on_off, metavar="on|off")
    p.add_argument("--ttl", type=_duration, required=True, help="e.g. 30m, 4h, 2d")
    p.add_argument("--author", required=True)
    p.add_argument("--reason", required=True)
    store_options(p)
    p.set_defaults(func=_override, store=None)

    p = fsub.add_parser("clear-override", help="remove the runtime override (audited)")
    p.add_argument("--author", required=True)
    p.add_argument("--reason", required=True)
    store_options(p)
    p.set_defaults(func=_clear, store=None)

    shadow = sub.add_parser("shadow", help="shadow-mode comparisons and the promotion report")
    ssub = shadow.add_subparsers(dest="shadow_command", metavar="ACTION")
    p = ssub.add_parser("report", help="agreement, mismatches, latency and cost deltas, promotion verdict")
    p.add_argument(
        "--since", type=_duration, default=parse_duration("7d"), help="window, e.g. 24h, 7d (default 7d)"
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
