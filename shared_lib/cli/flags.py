"""``charter flags validate / explain / show / seed / override / clear-override``.

With no store configured, ``explain`` and ``show`` fall back to the repository's flags
file and say so on stderr. Exit codes: 0 ok, 1 the live document is unusable, 2 bad
input (an invalid flags file, a bad argument, no store where one is needed).
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from shared_lib.cli.console import duration_arg, err, json_text, live_store
from shared_lib.cli.operations import store_options
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
from shared_lib.rollout.overrides import audit_entries, clear_override, write_override


def _validate(args: argparse.Namespace) -> int:
    path = Path(args.file)
    try:
        doc = load_flags_file(path)
    except ConfigError as exc:
        err(str(exc))
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
            err(str(exc))
            return 2
    store = live_store(args)
    if store is None:
        err(
            f"no flags store configured (set FIRESTORE_EMULATOR_HOST and CHARTER_PROJECT, or run in the cloud): "
            f"evaluating the repository file {REPO_FLAGS_FILE}"
        )
        try:
            return load_flags_file(REPO_FLAGS_FILE), None, ""
        except ConfigError as exc:
            err(str(exc))
            return 2
    snap = FlagsProvider(store, ttl_seconds=0, on_error=lambda code, message: None).snapshot()
    if snap.error:
        err(f"live flags unusable, the runtime serves legacy: {snap.error}")
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
                err(f"stdin line {n}: expected 'org,user', got {line.strip()!r}")
                bad += 1
                continue
            print(json_text(_explanation(doc, override, parts[0], parts[1], now)))
        return 2 if bad else (1 if error else 0)
    if not args.org or not args.user:
        err("flags explain: --org and --user are required (or --stdin)")
        return 2
    result = _explanation(doc, override, args.org, args.user, now)
    if args.json:
        print(json_text(result))
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
        err("no flags store configured: showing the repository file")
        doc = load_flags_file(REPO_FLAGS_FILE)
        print(json_text({"source": f"file:{REPO_FLAGS_FILE}", "flags": doc.model_dump(), "override": None}))
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
    print(json_text(out))
    return 1 if snap.error else 0


def _seed(args: argparse.Namespace) -> int:
    store = live_store(args)
    if store is None:
        err("no flags store configured: nothing to seed (set FIRESTORE_EMULATOR_HOST and CHARTER_PROJECT)")
        return 2
    try:
        doc = seed_flags(store, args.file, updated_by=args.author)
    except ConfigError as exc:
        err(str(exc))
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


def _override(args: argparse.Namespace) -> int:
    store = live_store(args)
    if store is None:
        err("no flags store configured: an override needs the live store")
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
        err(str(exc))
        return 2
    print(json_text(written.model_dump() if written else None))
    return 0


def _clear(args: argparse.Namespace) -> int:
    store = live_store(args)
    if store is None:
        err("no flags store configured: an override needs the live store")
        return 2
    cleared = clear_override(store, args.author, args.reason)
    print("override cleared" if cleared else "no override was set")
    return 0


def register(sub: Any) -> None:
    """The ``flags`` command and its actions."""
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
    p.add_argument("--ttl", type=duration_arg, required=True, help="e.g. 30m, 4h, 2d")
    p.add_argument("--author", required=True)
    p.add_argument("--reason", required=True)
    store_options(p)
    p.set_defaults(func=_override, store=None)

    p = fsub.add_parser("clear-override", help="remove the runtime override (audited)")
    p.add_argument("--author", required=True)
    p.add_argument("--reason", required=True)
    store_options(p)
    p.set_defaults(func=_clear, store=None)
