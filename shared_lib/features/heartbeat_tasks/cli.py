"""``charter heartbeat``: an organisation's periodic tasks (seed 001 §17) over the store.

    charter heartbeat add --org ORG --user USER --room ROOM [--channel C] --schedule S TEXT
    charter heartbeat list --org ORG [--json]
    charter heartbeat remove --org ORG TASK_ID

``add`` sets a task as an operator: the schedule is read as the tool reads it (「毎週月曜9時」),
the task runs as ``--user``'s turn in ``--room`` (so that person's authorization judges it).
Each takes ``--store``/``--project``. Exit codes: 0 ok, 1 no such task, 2 bad input or no store.
"""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import TYPE_CHECKING, Any

from shared_lib.cli.console import NO_STORE, print_listing
from shared_lib.cli.operations import runtime_for, store_options
from shared_lib.cli.runner import fail
from shared_lib.dates.model import JST
from shared_lib.errors import ConfigError
from shared_lib.features.heartbeat_tasks import state_schedule, store
from shared_lib.ids import new_short_id
from shared_lib.turn.inbound import CHANNEL_NAMES

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


def _runtime(args: argparse.Namespace) -> Runtime | None:
    try:
        return runtime_for(args)
    except ConfigError:
        fail(NO_STORE)
        return None


def _at(value: Any) -> str:
    return value.astimezone(JST).isoformat(timespec="minutes") if isinstance(value, datetime) else "-"


def _add(args: argparse.Namespace) -> int:
    text = " ".join(args.instruction).strip()
    if not text:
        return fail("the task's instruction is empty", 2)
    try:
        schedule = state_schedule.read(args.schedule)
    except state_schedule.ScheduleError as exc:
        return fail(f"{exc.code}: {exc}", 2)
    if (rt := _runtime(args)) is None:
        return 2
    if store.count(rt.store, args.org) >= store.MAX_PER_ORG:
        return fail(f"{args.org} has {store.MAX_PER_ORG} periodic tasks already", 2)
    task_id = new_short_id("hb")
    doc = store.new_task(
        task_id=task_id,
        org_id=args.org,
        creator=args.user,
        instruction=text,
        schedule=schedule,
        where={"channel": args.channel, "room_id": args.room},
        now=rt.clock(),
        created_by=args.by,
        cipher=rt.cipher(args.org),
    )
    rt.store.set(store.task_path(args.org, task_id), doc)
    print(
        f"task {task_id}: {schedule.describe()} (next {_at(doc['next_due_at'])}) as {args.user} in {args.room}"
    )
    return 0


def _list(args: argparse.Namespace) -> int:
    if (rt := _runtime(args)) is None:
        return 2
    return print_listing(
        store.list_tasks(rt.store, args.org),
        as_json=args.json,
        key="tasks",
        columns=[
            ("task", "<22"),
            ("schedule", "<16"),
            ("next due (JST)", "<18"),
            ("runs", ">4"),
            ("creator", "<12"),
            ("instruction", ""),
        ],
        cells=lambda t: (
            t.get("task_id", ""),
            t.get("schedule_text", ""),
            _at(t.get("next_due_at")),
            t.get("runs", 0),
            t.get("user_id", ""),
            str(t.get("instruction") or "")[:40],
        ),
        noun="task",
    )


def _remove(args: argparse.Namespace) -> int:
    if (rt := _runtime(args)) is None:
        return 2
    if store.remove(rt.store, args.org, args.task_id) is None:
        return fail(f"no task {args.task_id} in {args.org}", 1)
    print(f"task {args.task_id} removed")
    return 0


def register(sub: Any) -> None:
    hp = sub.add_parser("heartbeat", help="periodic tasks the heartbeat runs: add, list, remove")
    hsub = hp.add_subparsers(dest="heartbeat_command", metavar="COMMAND", required=True)
    p = hsub.add_parser("add", help="a periodic task, run as --user's turn in --room")
    p.add_argument("instruction", nargs="+", help="what to do each time (Japanese, as a person says it)")
    p.add_argument("--org", required=True)
    p.add_argument("--user", required=True, help="whose turn each run is (their authorization)")
    p.add_argument("--room", required=True, help="the room each run answers in")
    p.add_argument("--channel", default="chatwork", choices=CHANNEL_NAMES)
    p.add_argument("--schedule", required=True, help="as said: 毎週月曜9時, 平日の朝8:30, 月末の17時")
    p.add_argument("--by", default="operator", help="who adds it (recorded on the task)")
    store_options(p)
    p.set_defaults(func=_add)
    p = hsub.add_parser("list", help="an organisation's periodic tasks")
    p.add_argument("--org", required=True)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    store_options(p)
    p.set_defaults(func=_list)
    p = hsub.add_parser("remove", help="delete a periodic task (its run records stay)")
    p.add_argument("task_id")
    p.add_argument("--org", required=True)
    store_options(p)
    p.set_defaults(func=_remove)
