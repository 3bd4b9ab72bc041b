"""``charter jobs``: delegated jobs (sub-agents, seed 001 §15) over the store.

    charter jobs list [--org ORG] [--status S] [--json]
    charter jobs show --org ORG JOB_ID [--json]
    charter jobs cancel --org ORG JOB_ID [--by USER]

``cancel`` stops a queued or running job: its turn runs no tool after it and the requester is
told once in the room (``shared_lib.features.jobs.steps.cancel``). Each takes ``--store``/
``--project``. Exit codes: 0 ok, 1 no such job or a job already over, 2 bad input or no store.
"""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import TYPE_CHECKING, Any

from shared_lib.cli.console import NO_STORE, json_text, print_listing
from shared_lib.cli.operations import runtime_for, store_options
from shared_lib.cli.runner import fail
from shared_lib.errors import ConfigError
from shared_lib.features.jobs import state as agent_jobs
from shared_lib.features.jobs import steps as job_turns

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


def _runtime(args: argparse.Namespace) -> Runtime | None:
    try:
        return runtime_for(args)
    except ConfigError:
        fail(NO_STORE)
        return None


def _at(value: Any) -> str:
    return value.isoformat(timespec="seconds") if isinstance(value, datetime) else str(value or "-")


def _list(args: argparse.Namespace) -> int:
    if args.status and args.status not in agent_jobs.STATUSES:
        return fail(f"--status is one of {', '.join(agent_jobs.STATUSES)}", 2)
    if (rt := _runtime(args)) is None:
        return 2
    return print_listing(
        agent_jobs.list_jobs(rt.store, args.org, args.status),
        as_json=args.json,
        key="jobs",
        columns=[
            ("job", "<21"),
            ("org", "<10"),
            ("status", "<10"),
            ("steps", ">5"),
            ("created", "<26"),
            ("requester", "<12"),
            ("task", ""),
        ],
        cells=lambda j: (
            j.get("job_id", ""),
            j.get("org_id", ""),
            j.get("status", ""),
            f"{j.get('steps', 0):>2}/{j.get('max_steps', 0):<2}",
            _at(j.get("created_at")),
            j.get("user_id", ""),
            str(j.get("task") or "")[:40],
        ),
        noun="job",
    )


def _show(args: argparse.Namespace) -> int:
    if (rt := _runtime(args)) is None:
        return 2
    job = agent_jobs.get(rt.store, args.org, args.job_id)
    if job is None:
        return fail(f"no job {args.job_id} in {args.org}", 1)
    if args.json:
        print(json_text(job))
        return 0
    for key in ("job_id", "org_id", "status", "reason", "user_id", "parent_turn_id", "turn_id", "room_id"):
        print(f"{key:<15} {job.get(key) if job.get(key) not in (None, '') else '-'}")
    print(f"{'steps':<15} {job.get('steps', 0)} of {job.get('max_steps')}")
    print(f"{'cost_usd':<15} {job.get('cost_usd', 0.0):.4f} of {job.get('max_cost_usd', 0.0):.2f}")
    for key in ("created_at", "heartbeat_at", "ends_at", "finished_at", "reported_at"):
        if job.get(key):
            print(f"{key:<15} {_at(job.get(key))}")
    print(f"task\n  {job.get('task') or ''}")
    result = job.get("result") or {}
    if result:
        print(f"result\n  {str(result.get('result') or '').replace(chr(10), chr(10) + '  ')}")
    return 0


def _cancel(args: argparse.Namespace) -> int:
    if (rt := _runtime(args)) is None:
        return 2
    try:
        job = job_turns.cancel(rt, args.org, args.job_id, by=args.by)
    except agent_jobs.JobError as exc:
        return fail(str(exc), 1)
    print(f"job {job['job_id']} cancelled by {args.by}")
    return 0


def register(sub: Any) -> None:
    jp = sub.add_parser("jobs", help="delegated jobs (sub-agents): list, show, cancel")
    jsub = jp.add_subparsers(dest="jobs_command", metavar="COMMAND", required=True)
    p = jsub.add_parser("list", help="delegated jobs, newest first")
    p.add_argument("--org", help="one organisation (default: all)")
    p.add_argument("--status", help=f"only jobs of this status ({'/'.join(agent_jobs.STATUSES)})")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    store_options(p)
    p.set_defaults(func=_list)
    p = jsub.add_parser("show", help="one delegated job")
    p.add_argument("job_id")
    p.add_argument("--org", required=True)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    store_options(p)
    p.set_defaults(func=_show)
    p = jsub.add_parser("cancel", help="stop a queued or running job (the requester is told)")
    p.add_argument("job_id")
    p.add_argument("--org", required=True)
    p.add_argument("--by", default="operator", help="who cancels (recorded on the job)")
    store_options(p)
    p.set_defaults(func=_cancel)
