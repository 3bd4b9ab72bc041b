"""``charter approvals``: approval jobs and auto-approve grants over the store (seed 002 §6).

    charter approvals list [--org ORG] [--status S] [--json]
    charter approvals show JOB_ID --org ORG [--json]
    charter approvals auto on --org ORG [--user U] [--tools T …] [--job-types J …] [--targets X …] [--ttl MIN]
    charter approvals auto off --org ORG [--user U]
    charter approvals auto status --org ORG [--json]

``auto off`` is the instant OFF (one write; the very next turn asks again); ``auto on`` makes a
grant (``shared_lib.features.auto_approve.store`` says what its scope means) and refuses, with the
reason, what the deployment's switch (the flags' ``auto_approve``) or the policy does not allow.
Each takes ``--store``/``--project`` (default: the settings, or what ``charter local up`` left in
``.charter/``). Exit codes: 0 ok, 1 no such job, 2 bad input or no store configured.
"""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import TYPE_CHECKING, Any

from shared_lib.cli.console import NO_STORE, json_text, print_listing
from shared_lib.cli.operations import runtime_for, store_options
from shared_lib.cli.runner import fail
from shared_lib.collections import collection_path
from shared_lib.errors import ArgumentError, ConfigError
from shared_lib.features.approvals import store as jobs
from shared_lib.features.auto_approve import store as auto_approve
from shared_lib.features.auto_approve.steps import switch

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime

LIST_LIMIT = 500
STATUSES = ("pending", "granted", "denied", "auto_approved", "expired")


def _runtime(args: argparse.Namespace) -> Runtime | None:
    try:
        return runtime_for(args)
    except ConfigError:
        fail(f"{NO_STORE}")
        return None


def _at(value: Any) -> str:
    return value.isoformat(timespec="seconds") if isinstance(value, datetime) else str(value or "-")


def _json(args: argparse.Namespace, data: Any) -> bool:
    """Print ``data`` as JSON when ``--json`` was given (and say so)."""
    if args.json:
        print(json_text(data))
    return bool(args.json)


def _list(args: argparse.Namespace) -> int:
    if args.status and args.status not in STATUSES:
        return fail(f"--status is one of {', '.join(STATUSES)}", 2)
    if (rt := _runtime(args)) is None:
        return 2
    now = rt.clock()
    if args.org:
        rows = rt.store.query(collection_path("approval_jobs", org=args.org), limit=LIST_LIMIT)
    else:
        rows = rt.store.query("approval_jobs", group=True, limit=LIST_LIMIT)
    found = [jobs.live(doc, now) for _, doc in rows]
    found = [j for j in found if not args.status or j.get("status") == args.status]
    found.sort(key=lambda j: _at(j.get("requested_at")), reverse=True)
    return print_listing(
        found,
        as_json=args.json,
        key="jobs",
        columns=[
            ("job", "<10"),
            ("org", "<10"),
            ("status", "<14"),
            ("requested", "<26"),
            ("requester", "<12"),
            ("summary", ""),
        ],
        cells=lambda j: (
            j.get("job_id", ""),
            j.get("org_id", ""),
            j.get("status", ""),
            _at(j.get("requested_at")),
            j.get("user_id", ""),
            (str(j.get("summary") or "").splitlines() or [""])[0],
        ),
        noun="job",
    )


def _show(args: argparse.Namespace) -> int:
    if (rt := _runtime(args)) is None:
        return 2
    job = jobs.get(rt.store, args.org, args.job_id, rt.clock())
    if job is None:
        return fail(f"no job {args.job_id} in {args.org}", 1)
    if _json(args, job):
        return 0
    for key in ("job_id", "org_id", "status", "job_type", "tools", "targets", "user_id", "approver"):
        print(f"{key:<14} {job.get(key) if job.get(key) not in (None, '') else '-'}")
    for key in ("requested_at", "decided_at", "decide_by"):
        if job.get(key):
            print(f"{key:<14} {_at(job.get(key))}")
    print(f"summary\n  {str(job.get('summary') or '').replace(chr(10), chr(10) + '  ')}")
    return 0


def _split(values: list[str] | None) -> list[str]:
    return [v.strip() for raw in values or [] for v in raw.split(",") if v.strip()]


def _on(args: argparse.Namespace) -> int:
    if (rt := _runtime(args)) is None:
        return 2
    try:
        grant = auto_approve.grant_on(
            rt.store,
            args.org,
            rt.clock(),
            author=args.author,
            policy=rt.policy.approval,
            switch=switch(rt),
            user_id=args.user,
            tools=_split(args.tools),
            job_types=_split(args.job_types),
            targets=_split(args.targets),
            ttl_minutes=args.ttl,
            known_tools=rt.registry.names(),
        )
    except ArgumentError as exc:
        return fail(f"{exc}", 2)
    if _json(args, grant):
        return 0
    who = f"person {args.user}" if args.user else "the whole organisation"
    print(
        f"auto-approve on for {who} in {args.org}: grant {grant['grant_id']} until {_at(grant['expires_at'])}"
    )
    return 0


def _off(args: argparse.Namespace) -> int:
    if (rt := _runtime(args)) is None:
        return 2
    doc = auto_approve.turn_off(
        rt.store, args.org, rt.clock(), by=args.author, policy=rt.policy.approval, user_id=args.user
    )
    if _json(args, doc):
        return 0
    who = f"of person {args.user}" if args.user else "of the whole organisation"
    print(f"auto-approve off: every grant {who} in {args.org} ended at {_at(doc['off_at'])}")
    return 0


def status(rt: Runtime, org: str) -> dict[str, Any]:
    """Live grants (with the minutes they have left) and the last OFF of the organisation."""
    now = rt.clock()
    grants = [
        {**g, "remaining_minutes": auto_approve.remaining_minutes(g, now)}
        for g in auto_approve.live_grants(rt.store, org, now)
    ]
    offs = [d for _, d in rt.store.query(auto_approve.grants_path(org), where=[("kind", "==", "off")])]
    last = max(offs, key=lambda d: d["off_at"]) if offs else None
    # the people who turned auto-approval of their own requests off (until their own /auto on)
    own = rt.store.query(auto_approve.grants_path(org), where=[("kind", "==", "optout")])
    opted_out = sorted(str(d["user_id"]) for _, d in own if d.get("on_at") is None)
    sw = switch(rt)
    return {"org": org, "enabled": sw.enabled, "grants": grants, "last_off": last, "opted_out": opted_out}


def _status(args: argparse.Namespace) -> int:
    if (rt := _runtime(args)) is None:
        return 2
    report = status(rt, args.org)
    if _json(args, report):
        return 0
    print(f"deployment switch: {'enabled' if report['enabled'] else 'disabled'}")
    for g in report["grants"]:
        scope = (
            ", ".join(f"{k}={'/'.join(g[k])}" for k in ("tools", "job_types", "targets") if g.get(k))
            or "every operation a grant may cover"
        )
        print(
            f"{g['grant_id']:<10} {g.get('user_id') or '(organisation)':<14} "
            f"{g['remaining_minutes']:>4} min left  {scope}"
        )
    if not report["grants"]:
        print("no live grant")
    last = report["last_off"]
    print(f"last OFF: {_at(last['off_at'])} by {last.get('by')}" if last else "last OFF: never")
    if report["opted_out"]:
        print("turned off for their own requests (until their /auto on): " + ", ".join(report["opted_out"]))
    return 0


def register(sub: Any) -> None:
    ap = sub.add_parser("approvals", help="approval jobs and auto-approve (list, show, auto on/off/status)")
    asub = ap.add_subparsers(dest="approvals_command", metavar="COMMAND", required=True)
    p = asub.add_parser("list", help="approval jobs, newest first")
    p.add_argument("--org", help="one organisation (default: all)")
    p.add_argument("--status", help=f"only jobs of this status ({'/'.join(STATUSES)})")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    store_options(p)
    p.set_defaults(func=_list)
    p = asub.add_parser("show", help="one approval job")
    p.add_argument("job_id")
    p.add_argument("--org", required=True)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    store_options(p)
    p.set_defaults(func=_show)
    auto = asub.add_parser("auto", help="auto-approve grants: on, off (instant), status")
    bsub = auto.add_subparsers(dest="auto_command", metavar="COMMAND", required=True)
    for name, func, text in (
        ("on", _on, "make a grant (scope and TTL)"),
        ("off", _off, "end every grant of the organisation (or of --user) now"),
        ("status", _status, "live grants with their minutes left, and the last OFF"),
    ):
        p = bsub.add_parser(name, help=text)
        p.add_argument("--org", required=True)
        p.add_argument("--json", action="store_true", help="machine-readable output")
        store_options(p)
        p.set_defaults(func=func)
        if name == "status":
            continue
        p.add_argument("--user", help="one person (default: the whole organisation)")
        p.add_argument("--author", default="cli", help="who did it (kept on the document)")
        if name == "on":
            p.add_argument("--tools", nargs="+", help="tools the grant covers (default: any)")
            p.add_argument("--job-types", nargs="+", help="routes the grant covers (chat, code, …)")
            p.add_argument(
                "--targets", nargs="+", help="assignees/recipients/people (a trailing * is a prefix)"
            )
            p.add_argument("--ttl", type=int, help="minutes (default: the policy's, 60)")
