"""``charter rollout rollback``: after a traffic shift, move every layer back to its previous revision.

Checks, within ``--since-shift`` (default 30m) after the last traffic shift of the Charter
services, whether the rollback guard tripped (its state document in the live store) or a
``--health-url`` fails; if so, moves 100 % of every service's traffic to the revision that
served before the shift (``shared_lib.rollout.revisions``). ``--dry-run`` prints the plan and
changes nothing; ``--watch`` repeats the check every ``--interval`` until the window closes.
``--decision-file`` receives the decision as JSON when a rollback is decided (the pipeline's
``rollback-sync`` step brings Terraform's state back to the pre-promotion traffic after it).

The Cloud Run project is ``--project`` (else the settings' project), the region ``--region``
(else ``CHARTER_REGION``); the Admin API is ``CHARTER_RUN_ADMIN_BASE``, authenticated with
``CHARTER_RUN_ADMIN_TOKEN`` or the metadata server's token.

Exit codes: 0 healthy, outside the window, or nothing to roll back; 1 a rollback was needed
(done, printed with ``--dry-run``, or failed: the output says which); 2 bad input, no store, or
the check could not run (the Admin API refused or was unreachable).
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from shared_lib.cli.console import NO_STORE, duration_arg, json_text
from shared_lib.cli.operations import store_options
from shared_lib.cli.runner import fail
from shared_lib.delivery.topology import TOPOLOGY
from shared_lib.errors import ConfigError
from shared_lib.ports import Store
from shared_lib.rollout import guard, revisions
from shared_lib.rollout.report import parse_duration
from shared_lib.settings import Settings


def _store_and_settings(args: argparse.Namespace) -> tuple[Store, Settings] | None:
    if getattr(args, "store", None) is not None:
        return args.store, Settings.from_env()
    from shared_lib.wiring.composition import operator_runtime

    try:
        rt = operator_runtime(store=args.store_choice, project=args.project)
    except ConfigError:
        return None
    return rt.store, rt.settings


def _time_arg(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not an ISO time: {text!r}") from exc
    if value.tzinfo is None:
        raise argparse.ArgumentTypeError(f"give a time zone: {text!r}")
    return value


def _rollback(args: argparse.Namespace) -> int:
    found = _store_and_settings(args)
    if found is None:
        return fail(f"{NO_STORE}: the rollback guard's state lives in the live store", 2)
    store, settings = found
    region = args.region or settings.region
    if not region:
        return fail("no region: give --region or set CHARTER_REGION", 2)
    project = args.project or settings.project

    def token() -> str:
        return settings.secret("run_admin_token") or revisions.metadata_token()

    client = httpx.Client(timeout=30.0)
    admin = revisions.CloudRunAdmin(
        project, region, token=token, base_url=settings.run_admin_base, client=client
    )
    services = [revisions.service_name(target) for target in TOPOLOGY.targets]
    try:
        check = revisions.watch_after_shift(
            admin,
            services,
            window=args.since_shift,
            guard_state=lambda: store.get(guard.STATE),
            health_failures=revisions.http_health(args.health_url, client),
            clock=args.clock,
            watch=args.watch,
            interval=args.interval,
            shifted_at=args.shifted_at,
        )
        plans, read = revisions.rollback_plan(admin, services) if check.rollback else ([], {})
    except revisions.RevisionError as exc:
        return fail(f"the check could not run: {exc}", 2)
    decision: dict[str, Any] = {
        "rollback": check.rollback,
        "dry_run": args.dry_run,
        "reasons": check.reasons,
        "shifted_at": check.shifted_at,
        "window_ends": check.window_ends,
        "plans": [p.describe() for p in plans],
        "rolled_back": [],
    }
    if check.rollback and not args.dry_run:
        _write(args.decision_file, decision)
        try:
            decision["rolled_back"] = revisions.apply_plan(admin, plans, read)
        except revisions.RevisionError as exc:
            decision["error"] = str(exc)
        _write(args.decision_file, decision)
    _print(decision, as_json=args.json)
    return 1 if check.rollback else 0


def _write(path: Path | None, decision: dict[str, Any]) -> None:
    if path is not None:
        path.write_text(json_text(decision) + "\n", encoding="utf-8")


def _print(decision: dict[str, Any], *, as_json: bool) -> None:
    if as_json:
        print(json_text(decision))
        return
    if not decision["rollback"]:
        print("no rollback: " + ("; ".join(decision["reasons"]) or "healthy within the window"))
        return
    verb = "would roll back" if decision["dry_run"] else "rolling back"
    print(f"{verb}: " + "; ".join(decision["reasons"]))
    for line in decision["plans"]:
        print(f"  {line}")
    if "error" in decision:
        print(f"rollback FAILED: {decision['error']}", file=sys.stderr)
    elif not decision["dry_run"]:
        print(f"rolled back: {', '.join(decision['rolled_back']) or 'nothing had a previous revision'}")


def register(sub: Any) -> None:
    """The ``rollout`` command and its ``rollback`` action."""
    rollout = sub.add_parser("rollout", help="revisions: roll every layer back after a bad traffic shift")
    rsub = rollout.add_subparsers(dest="rollout_command", metavar="ACTION", required=True)
    p = rsub.add_parser("rollback", help="check the window after the last traffic shift; roll back on a trip")
    p.add_argument("--dry-run", action="store_true", help="print what it would do, change nothing")
    p.add_argument(
        "--since-shift",
        type=duration_arg,
        default=parse_duration("30m"),
        metavar="DURATION",
        help="the window after a traffic shift in which a trip rolls back (default 30m)",
    )
    p.add_argument(
        "--shifted-at", type=_time_arg, help="ISO time of the shift (default: the services' last update)"
    )
    p.add_argument("--region", help="Cloud Run region (default CHARTER_REGION)")
    p.add_argument(
        "--health-url", action="append", default=[], metavar="URL", help="must answer 2xx (repeatable)"
    )
    p.add_argument("--watch", action="store_true", help="check every --interval until the window closes")
    p.add_argument(
        "--interval", type=duration_arg, default=timedelta(seconds=30), help="with --watch (default 30s)"
    )
    p.add_argument(
        "--decision-file", type=Path, help="write the decision here (JSON) when a rollback is decided"
    )
    p.add_argument("--json", action="store_true")
    store_options(p)
    p.set_defaults(func=_rollback, store=None, clock=_now)


def _now() -> datetime:
    from shared_lib.ids import utc_now

    return utc_now()
