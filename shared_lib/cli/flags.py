"""``charter flags validate / stage / promote / explain / show / seed / override / clear-override``.

``validate`` with no file checks every environment's file and the ladder between them;
``stage`` and ``promote`` read and move one environment's file on the ladder
(``shared_lib.flags.stages``): a promotion is a reviewed change to the file, which the
pipeline applies after its gate (``charter gate promotion``).

With no store configured, ``explain`` and ``show`` fall back to the development flags file
and say so on stderr. Exit codes: 0 ok, 1 the live document is unusable or a file is off
the ladder, 2 bad input (an invalid flags file, a bad argument, a refused step, no store
where one is needed).
"""

from __future__ import annotations

import argparse
import difflib
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from shared_lib.cli.console import duration_arg, err, json_text, live_store
from shared_lib.cli.operations import store_options
from shared_lib.cli.runner import fail
from shared_lib.errors import ArgumentError, ConfigError
from shared_lib.flags import (
    ENVIRONMENTS,
    REPO_FLAGS_FILE,
    STAGE_NAMES,
    FlagsDocument,
    FlagsOverride,
    FlagsProvider,
    bucket_fine,
    evaluate,
    load_flags_file,
    seed_flags,
)
from shared_lib.flags.stages import (
    FLAGS_DIR,
    RefusedStep,
    env_flags_file,
    ladder_findings,
    moved_text,
    plan_move,
    stage_of,
)
from shared_lib.ids import utc_now
from shared_lib.rollout.overrides import audit_entries, clear_override, write_override
from shared_lib.rollout.report import plain


def _validate(args: argparse.Namespace) -> int:
    """The files given, or every environment's file and the ladder between them."""
    paths = [Path(f) for f in args.files] or [env_flags_file(env, Path(args.dir)) for env in ENVIRONMENTS]
    docs: dict[str, FlagsDocument] = {}
    for path in paths:
        try:
            doc = load_flags_file(path)
        except ConfigError as exc:
            return fail(str(exc), 2)
        stage = stage_of(doc)
        docs[path.stem] = doc
        print(
            f"{path}: ok (version {doc.version}, stage {stage.name if stage else 'OFF THE LADDER'}, "
            f"brain_mode {doc.brain_mode}, canary {doc.canary_percent:g} %, "
            f"kill_switch {'on' if doc.kill_switch else 'off'})"
        )
    if args.files:
        return 0
    findings = ladder_findings(docs)
    for finding in findings:
        err(f"ladder: {finding}")
    return 1 if findings else 0


def _env_docs(directory: Path) -> dict[str, tuple[Path, str, FlagsDocument]]:
    """Each environment's committed file: (path, text, document); absent files are left out."""
    out = {}
    for env in ENVIRONMENTS:
        path = env_flags_file(env, directory)
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            out[env] = (path, text, load_flags_file(path))
    return out


def _stage(args: argparse.Namespace) -> int:
    try:
        doc = load_flags_file(env_flags_file(args.env, Path(args.dir)))
    except (ArgumentError, ConfigError) as exc:
        return fail(str(exc), 2)
    stage = stage_of(doc)
    if stage is None:
        err(
            f"{args.env}: off the ladder (brain_mode {doc.brain_mode}, canary_percent {doc.canary_percent:g})"
        )
        return 1
    print(stage.name)
    return 0


def _promote(args: argparse.Namespace) -> int:
    """Move one environment's file to the next stage (or ``--to``); print the diff."""
    try:
        found = _env_docs(Path(args.dir))
        if args.env not in found:
            raise ConfigError(f"{env_flags_file(args.env, Path(args.dir))}: no such file")
        path, text, doc = found[args.env]
        here, target = plan_move(args.env, doc, args.to, {env: d for env, (_, _, d) in found.items()})
        new = moved_text(text, target, utc_now().date(), source=str(path))
    except (ArgumentError, ConfigError, RefusedStep) as exc:
        return fail(f"refused: {exc}", 2)
    sys.stdout.writelines(
        difflib.unified_diff(
            text.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{path.name}", f"b/{path.name}"
        )
    )
    gate = f"the {target.gate} gate" if target.rank > here.rank and target.gate else "no gate"
    if args.dry_run:
        print(
            f"{args.env}: {here.name} -> {target.name} (dry run: nothing written; applying it needs {gate})"
        )
        return 0
    path.write_text(new, encoding="utf-8")
    print(
        f"{args.env}: {here.name} -> {target.name} written to {path}; review and commit it (applying it needs {gate})"
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
            return fail(str(exc), 2)
    store = live_store(args)
    if store is None:
        err(
            f"no flags store configured (set FIRESTORE_EMULATOR_HOST and CHARTER_PROJECT, or run in the cloud): "
            f"evaluating the repository file {REPO_FLAGS_FILE}"
        )
        try:
            return load_flags_file(REPO_FLAGS_FILE), None, ""
        except ConfigError as exc:
            return fail(str(exc), 2)
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


def _print_show(out: dict[str, Any], as_json: bool) -> None:
    """``flags show``: one JSON document, or the document's fields, the override and the audit."""
    if as_json:
        print(json_text(out))
        return
    print(f"source    {out['source']}" + (f"  (error: {out['error']})" if out.get("error") else ""))
    for name, value in (out["flags"] or {}).items():
        print(f"  {name:<24} {plain(value) if not isinstance(value, dict) else json_text(value)}")
    override = out.get("override")
    print("override  " + (", ".join(f"{k} {plain(v)}" for k, v in override.items()) if override else "none"))
    for entry in out.get("audit", []):
        print(
            f"  {plain(entry.get('at'))}  {plain(entry.get('action')):<18} by {plain(entry.get('author'))}: "
            f"{plain(entry.get('reason'))}"
        )


def _show(args: argparse.Namespace) -> int:
    store = live_store(args)
    if store is None:
        err("no flags store configured: showing the repository file")
        doc = load_flags_file(REPO_FLAGS_FILE)
        found: dict[str, Any] = {
            "source": f"file:{REPO_FLAGS_FILE}",
            "flags": doc.model_dump(),
            "override": None,
        }
        _print_show(found, args.json)
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
    _print_show(out, args.json)
    return 1 if snap.error else 0


def _seed(args: argparse.Namespace) -> int:
    store = live_store(args)
    if store is None:
        return fail(
            "no flags store configured: nothing to seed (set FIRESTORE_EMULATOR_HOST and CHARTER_PROJECT)", 2
        )
    try:
        doc = seed_flags(store, args.file, updated_by=args.author)
    except ConfigError as exc:
        return fail(str(exc), 2)
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
        return fail("no flags store configured: an override needs the live store", 2)
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
        return fail(str(exc), 2)
    print(json_text(written.model_dump() if written else None))
    return 0


def _clear(args: argparse.Namespace) -> int:
    store = live_store(args)
    if store is None:
        return fail("no flags store configured: an override needs the live store", 2)
    cleared = clear_override(store, args.author, args.reason)
    print("override cleared" if cleared else "no override was set")
    return 0


def register(sub: Any) -> None:
    """The ``flags`` command and its actions."""
    flags = sub.add_parser("flags", help="feature flags: validate, explain, show, seed, override")
    fsub = flags.add_subparsers(dest="flags_command", metavar="ACTION")

    p = fsub.add_parser(
        "validate",
        help="validate flags files (exit 2 naming the bad field); none given: every environment's and the ladder",
    )
    p.add_argument("files", nargs="*", metavar="FILE")
    p.add_argument("--dir", default=str(FLAGS_DIR), help="the environments' files (default terraform/flags)")
    p.set_defaults(func=_validate)

    p = fsub.add_parser("stage", help="the stage of an environment's committed flags file")
    p.add_argument("--env", required=True, choices=ENVIRONMENTS)
    p.add_argument("--dir", default=str(FLAGS_DIR), help="the environments' files (default terraform/flags)")
    p.set_defaults(func=_stage)

    p = fsub.add_parser(
        "promote", help="move an environment's flags file one stage up the ladder (or --to); print the diff"
    )
    p.add_argument("--env", required=True, choices=ENVIRONMENTS)
    p.add_argument("--to", choices=STAGE_NAMES, help="the stage (default: the next one)")
    p.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")
    p.add_argument("--dir", default=str(FLAGS_DIR), help="the environments' files (default terraform/flags)")
    p.set_defaults(func=_promote)

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
    p.add_argument(
        "--json", action="store_true", help="one JSON document {source, error, flags, override, audit}"
    )
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
