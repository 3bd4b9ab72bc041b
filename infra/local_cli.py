"""``charter local up|status|restart|down``: the local stack (see ``infra/local_stack.py``)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from shared_lib.cli.runner import fail, progress


def _up(args: argparse.Namespace) -> int:
    from infra import local_stack

    if local_stack.load_state().get("components"):
        return fail(
            f"local up: a stack is already recorded in {local_stack.STATE_DIR}: run `charter local down`"
        )
    try:
        state = local_stack.up(
            fault_injection=args.fault_injection, candidates=args.candidates, progress=progress
        )
    except RuntimeError as exc:  # StackError names the component and its log; what started is stopped
        return fail(f"local up: {exc}", 1)
    print(f"local stack up: ingress {state['ingress_url']} (project {state['project']})")
    if state.get("operator_token"):
        who = state.get("operator") or {}
        print(
            f"dashboard {state.get('admin_url', '')}: operator credential {state['operator_token']} "
            f"({who.get('person')} of {who.get('org')}, platform)"
        )
    if state.get("candidate_ingress_url"):
        print(f"candidate ingress (smoke webhooks): {state['candidate_ingress_url']}")
    for note in state.get("notes", []):
        print(f"note: {note}")
    return 0


def _status(args: argparse.Namespace) -> int:
    from infra import local_stack

    st = local_stack.status()
    if args.json:
        print(json.dumps(st, indent=2))
        return 0 if st["running"] else 1
    if not st["components"]:
        print("local stack: not running")
        return 1
    print(f"ingress: {st['ingress_url']}")
    if st.get("admin_url"):
        print(f"admin:   {st['admin_url']}")
    for name, c in st["components"].items():
        workers = ",".join(str(w) for w in c.get("workers", []) if w != c["pid"]) or "-"
        health = "healthy" if c["healthy"] else "DOWN"
        print(f"  {name:<14} pid {c['pid']:<8} workers {workers:<14} port {c['port']:<6} {health}")
    return 0 if st["running"] else 1


def _restart(args: argparse.Namespace) -> int:
    from infra import local_stack

    if not local_stack.load_state().get("components"):
        print("local stack: not running")
        return 1
    try:
        comp = local_stack.restart(args.component, hard=args.kill)
    except (KeyError, ValueError) as exc:
        return fail(f"local restart: {exc.args[0] if exc.args else exc}", 2)
    except RuntimeError as exc:
        return fail(f"local restart: {exc}", 1)
    workers = ", ".join(str(w) for w in local_stack.workers(comp))
    print(f"restarted {args.component}: pid {comp['pid']} (workers {workers}) on port {comp['port']}")
    return 0


def _down(args: argparse.Namespace) -> int:
    from infra import local_stack

    stopped = local_stack.down()
    print(f"stopped: {', '.join(stopped) if stopped else 'nothing was running'}")
    return 0


def register(sub: Any) -> None:
    local = sub.add_parser("local", help="the local stack: emulators, functions, fakes")
    lsub = local.add_subparsers(dest="local_command", required=True)
    up = lsub.add_parser("up", help="start everything and wait until healthy")
    up.add_argument("--fault-injection", action="store_true", help="let tests inject layer failures")
    up.add_argument(
        "--candidates",
        action="store_true",
        help="also a candidate process per target (CHARTER_REVISION=candidate) behind the smoke topics",
    )
    up.set_defaults(func=_up)
    st = lsub.add_parser("status", help="health of every component and the ingress URL")
    st.add_argument("--json", action="store_true")
    st.set_defaults(func=_status)
    rs = lsub.add_parser("restart", help="replace one layer (or fake) as `up` started it: same port and env")
    rs.add_argument(
        "component",
        help="a target of topology.json (context, brain, ...), a fake, or pubsub (its topics and subscriptions again)",
    )
    rs.add_argument("--kill", action="store_true", help="SIGKILL the old processes at once (a crash)")
    rs.set_defaults(func=_restart)
    lsub.add_parser("down", help="stop every process of the stack by pid").set_defaults(func=_down)
