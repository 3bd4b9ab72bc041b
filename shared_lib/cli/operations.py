"""Operator commands — the same code the admin dashboard uses.

    charter turns list [--since 24h] [--org ORG] [--arm ARM] [--outcome KIND] [--limit N] [--json]
    charter turns show TURN_ID [--org ORG] [--shadow] [--json]
    charter replay TURN_ID [--org ORG] [--json]
    charter audit constitution [--since 24h] [--org ORG] [--json]
    charter cost [--day YYYY-MM-DD] [--org ORG] [--json]
    charter metrics [--since 24h] [--step 60] [--org ORG] [--check] [--json]
    charter alerts [--since 24h] [--json]
    charter llm-calls [--turn TURN_ID --org ORG] [--limit N] [--json]
    charter admin serve [--host 127.0.0.1] [--port 8090]

Each takes ``--store firestore|FILE.sqlite`` and ``--project P``; without them it reads the
settings, then what ``charter local up`` or ``charter demo`` left in ``.charter/``
(``shared_lib.wiring.composition.operator_runtime``). With no store configured it exits 2 with a
one-line explanation, never an empty answer. The runtime never gets an LLM. A caller that
already has a runtime (tests) passes it as ``args.runtime``.

Exit codes: 0 ok, 1 not found / audit findings / a threshold crossed with ``--check``,
2 bad input.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shared_lib.cli.runner import fail
from shared_lib.errors import ConfigError
from shared_lib.ops import audit, monitoring, queries, render
from shared_lib.ops.cost import cost_report
from shared_lib.ops.replay import ReplayError, replay
from shared_lib.ops.spans import trace_section
from shared_lib.rollout.report import plain
from shared_lib.tools import job_doc

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime

Command = Callable[["Runtime", argparse.Namespace], int]


def runtime_for(args: argparse.Namespace) -> Runtime:
    if getattr(args, "runtime", None) is not None:
        rt: Runtime = args.runtime
        return rt
    from shared_lib.wiring.composition import operator_runtime

    return operator_runtime(store=getattr(args, "store_choice", None), project=getattr(args, "project", None))


def _when(value: Any) -> str:
    """A stored time as the tables show it: ``YYYY-MM-DD HH:MM:SS`` UTC (the header says UTC)."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return str(value)
    if isinstance(value, datetime):
        return f"{value.astimezone(UTC):%Y-%m-%d %H:%M:%S}"
    return "-"


def _out(args: argparse.Namespace, data: Any, text: str) -> None:
    print(render.to_json(data) if args.json else text)


def _since(args: argparse.Namespace, rt: Runtime, default: str | None = None) -> Any:
    value = args.since or default
    return queries.parse_since(value, rt.clock()) if value else None


def turns_list(rt: Runtime, args: argparse.Namespace) -> int:
    records = queries.list_records(
        rt.store, since=_since(args, rt), org=args.org, arm=args.arm, outcome=args.outcome, limit=args.limit
    )
    _out(args, [r.model_dump(mode="json") for r in records], render.turns_table(records))
    return 0


def turns_show(rt: Runtime, args: argparse.Namespace) -> int:
    rec = queries.find_record(rt.store, args.turn_id, org=args.org, shadow=args.shadow)
    if rec is None:
        return fail(f"no {'shadow candidate' if args.shadow else 'record'} for turn {args.turn_id}", 1)
    calls = queries.llm_calls_for(rt.store, rec.organization_id, rec.record_id)
    comparison = queries.comparison_for(rt.store, rec.organization_id, rec.record_id)
    evaluations = queries.evaluations_for(rt.store, rec.organization_id, rec.record_id, rec.step_count)
    spans, tree = trace_section(rt.store, rec.trace_id, rt.settings)
    data = {
        "record": rec.model_dump(mode="json"),
        "llm_calls": calls,
        "shadow_comparison": comparison,
        "best_of_n": evaluations,
        "trace": spans,
    }
    text = render.trail(rec, llm_calls=calls, comparison=comparison, evaluations=evaluations) + "\n" + tree
    job_id = job_doc.job_of_turn(rec.record_id)
    if job_id and (job := rt.store.get(job_doc.job_path(rec.organization_id, job_id))) is not None:
        data["job"] = job  # a delegated job's turn: its job, as ``charter jobs show`` has it
        text += (
            f"\njob {job_id}: {job.get('status')} {job.get('reason') or ''} steps {job.get('steps', 0)}"
            f"/{job.get('max_steps')} requester {job.get('user_id')} parent {job.get('parent_turn_id')}"
        )
    _out(args, data, text)
    return 0


def replay_cmd(rt: Runtime, args: argparse.Namespace) -> int:
    try:
        rep = replay(rt, args.turn_id, org=args.org)
    except ReplayError as exc:
        return fail(str(exc), 1)
    _out(args, rep.as_dict(), render.replay_report(rep))
    return 0


def audit_constitution(rt: Runtime, args: argparse.Namespace) -> int:
    rep = audit.audit(rt.store, since=_since(args, rt, "24h"), until=rt.clock(), org=args.org)
    _out(args, rep.as_dict(), render.audit_report(rep))
    return 0 if rep.clean else 1


def cost_cmd(rt: Runtime, args: argparse.Namespace) -> int:
    day = date.fromisoformat(args.day) if args.day else None
    rep = cost_report(rt.store, now=rt.clock(), day=day, org=args.org)
    _out(args, rep.as_dict(), render.cost_report(rep))
    return 0


def metrics_cmd(rt: Runtime, args: argparse.Namespace) -> int:
    hours = max(1, int((rt.clock() - _since(args, rt, "24h")).total_seconds() // 3600))
    rows = monitoring.chart_series(rt, hours=hours, step_minutes=args.step, org=args.org)
    found = monitoring.check_thresholds(rt, window=timedelta(minutes=args.step)) if args.check else []
    text = render.metrics_table(rows) + "".join(f"\nTHRESHOLD {b['scope']}: {b['message']}" for b in found)
    _out(args, {"series": [r.as_dict() for r in rows], "breaches": found}, text)
    return 1 if found else 0


def alerts_cmd(rt: Runtime, args: argparse.Namespace) -> int:
    rows = monitoring.recent_alerts(rt, since=_since(args, rt, "24h"), limit=args.limit)
    header = f"{'time (UTC)':<19}  {'severity':<8} {'code':<28} {'org':<10} {'delivery':<11} message\n"
    text = (
        header
        + "\n".join(
            f"{_when(a.get('at'))}  {plain(a.get('severity')):<8} {plain(a.get('code')):<28} "
            f"{a.get('org_id') or '-':<10} {a.get('notification') or 'pending':<11} {plain(a.get('message'))}"
            for a in rows
        )
        if rows
        else "no alerts"
    )
    _out(args, rows, text)
    return 0


def llm_calls_cmd(rt: Runtime, args: argparse.Namespace) -> int:
    if args.turn:
        if not args.org:
            return fail("--turn needs --org", 2)
        rows = queries.llm_calls_for(rt.store, args.org, args.turn)
    else:
        rows = queries.recent_llm_calls(rt.store, org=args.org, limit=args.limit)
    header = (
        f"{'time (UTC)':<19}  {'call':<13} {'model':<20} {'status':<8} {'latency':>11} {'tokens':>11}  turn\n"
    )
    text = (
        header
        + "\n".join(
            f"{_when(c.get('at'))}  {plain(c.get('call_type')):<13} {plain(c.get('model')):<20} "
            f"{plain(c.get('status')):<8} {float(c.get('latency_ms') or 0):>8.0f} ms "
            f"{plain(c.get('total_tokens')):>7} tok  "
            f"turn {c.get('turn_id') or '-'}"
            for c in rows
        )
        if rows
        else "no LLM calls"
    )
    _out(args, rows, text)
    return 0


def admin_serve(rt: Runtime, args: argparse.Namespace) -> int:
    from werkzeug.serving import run_simple

    from shared_lib.admin.app import create_app

    print(f"admin dashboard on http://{args.host}:{args.port}/", file=sys.stderr)
    run_simple(args.host, args.port, create_app(rt), threaded=True)
    return 0


def _run(command: Command) -> Callable[[argparse.Namespace], int]:
    def handler(args: argparse.Namespace) -> int:
        try:
            return command(runtime_for(args), args)
        except (ValueError, ConfigError) as exc:  # bad input or configuration; any other
            return fail(str(exc), 2)  # CharterError is a failed operation (runner: exit 1)

    return handler


SQLITE_HEADER = b"SQLite format 3\x00"


def store_arg(text: str) -> str:
    """An argparse type: ``firestore``, ``memory``, or an existing SQLite file (never a new one)."""
    if text in ("firestore", "memory"):
        return text
    path = Path(text)
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"no SQLite store at {text} (give an existing FILE.sqlite)")
    with path.open("rb") as f:
        header = f.read(len(SQLITE_HEADER))
    if header and header != SQLITE_HEADER:
        raise argparse.ArgumentTypeError(f"{text} is not a SQLite database")
    return text


def store_options(p: argparse.ArgumentParser) -> None:
    """``--store``/``--project``: which store an operator command reads."""
    p.add_argument(
        "--store",
        type=store_arg,
        dest="store_choice",
        metavar="firestore|FILE.sqlite",
        help="the store to read (default: settings)",
    )
    p.add_argument("--project", help="the GCP project (or emulator project) of a Firestore store")


def _common(p: argparse.ArgumentParser, *, org: bool = True, json: bool = True) -> None:
    store_options(p)
    if org:
        p.add_argument("--org", help="one organisation (default: all)")
    if json:
        p.add_argument("--json", action="store_true", help="machine-readable output")


def register(sub: Any) -> None:
    turns = sub.add_parser("turns", help="observability records: list turns, show a decision trail")
    tsub = turns.add_subparsers(dest="turns_command", metavar="COMMAND", required=True)
    p = tsub.add_parser("list", help="recorded turns, newest first")
    p.add_argument("--since", help="30m, 24h, 7d or an ISO time")
    p.add_argument("--arm", help="llm, legacy, kill_switch, ...")
    p.add_argument("--outcome", help="reply kind (reply, confirm, block, deny, ...) or guardian/auth result")
    p.add_argument("--limit", type=int, default=50)
    _common(p)
    p.set_defaults(func=_run(turns_list))
    p = tsub.add_parser("show", help="the whole decision trail of one turn, layer by layer")
    p.add_argument("turn_id")
    p.add_argument("--shadow", action="store_true", help="the shadow candidate instead of the served turn")
    _common(p)
    p.set_defaults(func=_run(turns_show))

    p = sub.add_parser(
        "replay", help="today's guardian, authorization and dry-run executor on a recorded turn"
    )
    p.add_argument("turn_id")
    _common(p)
    p.set_defaults(func=_run(replay_cmd))

    a = sub.add_parser("audit", help="audits")
    asub = a.add_subparsers(dest="audit_command", metavar="COMMAND", required=True)
    p = asub.add_parser("constitution", help="the seed §4.8.2 constitution audit (exit 1 on findings)")
    p.add_argument("--since", help="30m, 24h (default), 7d or an ISO time")
    _common(p)
    p.set_defaults(func=_run(audit_constitution))

    p = sub.add_parser("cost", help="tokens, cache hits and cost against the budget")
    p.add_argument("--day", help="YYYY-MM-DD (default: today in the cost time zone)")
    _common(p)
    p.set_defaults(func=_run(cost_cmd))

    p = sub.add_parser("metrics", help="the seed §15.1 metrics over time (--check alerts on thresholds)")
    p.add_argument("--since", help="how far back (default 24h)")
    p.add_argument("--step", type=int, default=60, help="window in minutes (default 60)")
    p.add_argument("--check", action="store_true", help="alert on thresholds crossed in the last window")
    _common(p)
    p.set_defaults(func=_run(metrics_cmd))

    p = sub.add_parser("alerts", help="recent alerts and their delivery")
    p.add_argument("--since", help="how far back (default 24h)")
    p.add_argument("--limit", type=int, default=50)
    _common(p, org=False)
    p.set_defaults(func=_run(alerts_cmd))

    p = sub.add_parser("llm-calls", help="the LLM call log")
    p.add_argument("--turn", help="the calls of one turn (needs --org)")
    p.add_argument("--limit", type=int, default=50)
    _common(p)
    p.set_defaults(func=_run(llm_calls_cmd))

    ad = sub.add_parser("admin", help="the operator dashboard")
    adsub = ad.add_subparsers(dest="admin_command", metavar="COMMAND", required=True)
    p = adsub.add_parser("serve", help="serve the dashboard locally (the cloud runs the admin function)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8090)
    store_options(p)
    p.set_defaults(func=_run(admin_serve), json=False)
