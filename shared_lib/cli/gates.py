"""``charter gate shadow|canary|promotion``: the promotion gates over the environment's store.

    charter gate shadow    [--since 7d]  [--org ORG] [--json] [--store firestore --project P]
    charter gate canary    [--since 24h] [--org ORG] [--json] [--store firestore --project P]
    charter gate promotion --env ENV [--file FILE] [--json] [--store firestore --project P]

``shadow`` and ``canary`` judge the window's evidence (``shared_lib.rollout.gates``);
``promotion`` compares an environment's committed flags file with its live ``config/flags``
and runs the gate that step needs (none for a step down, for staying, or for legacy → shadow).
The pipeline runs ``promotion`` before anything applies the flags file.

Exit codes: 0 the gate passes (or no gate is needed), 1 it fails (which check, the figures;
or a step that skips a stage), 2 no store, an unreadable store, an invalid file, or no data
in the window: a gate never passes, nor silently holds, without evidence.
"""

from __future__ import annotations

import argparse
from datetime import timedelta
from pathlib import Path
from typing import Any

from shared_lib.cli.console import NO_STORE, duration_arg, err, json_text, live_store
from shared_lib.cli.operations import store_options
from shared_lib.cli.runner import fail
from shared_lib.errors import ArgumentError, ConfigError
from shared_lib.flags import ENVIRONMENTS, env_flags_file, load_flags_file, stage_of
from shared_lib.flags.stages import GateName
from shared_lib.ids import utc_now
from shared_lib.ports import Store
from shared_lib.rollout.gates import (
    DEFAULT_WINDOWS,
    GATES,
    GateResult,
    live_document,
    promotion_step,
)
from shared_lib.rollout.report import parse_duration, plain

GATE_HELP: tuple[tuple[GateName, str], ...] = (
    ("shadow", "before canary 10: the shadow comparisons against the promotion criteria"),
    ("canary", "before canary 50 and llm: the LLM arm's records against the legacy arm's"),
)


def render(result: GateResult) -> str:
    """The terminal form: the verdict line, each check, each arm's or the report's figures."""
    lines = [f"{result.message}  [{result.outcome.upper()}]"]
    if result.since is not None:
        lines.append(f"window: since {result.since.isoformat()}{'  org ' + result.org if result.org else ''}")
    for c in result.checks:
        lines.append(
            f"  [{'ok' if c['ok'] else 'NO'}] {c['name']}: {plain(c['actual'])} (required {plain(c['required'])})"
        )
    for name, value in result.figures.items():
        if name != "criteria":
            lines.append(f"  {name}: {plain(value)}")
    return "\n".join(lines)


def _report(result: GateResult, as_json: bool) -> int:
    if as_json:
        print(json_text(result.as_dict()))
    elif result.outcome != "no_data":
        print(render(result))
    if result.outcome == "no_data":
        fail(f"{result.message}")
    return result.exit_code


def _store(args: argparse.Namespace) -> Store | None:
    """The environment's store; None (said on stderr) when none is configured or it cannot be opened."""
    try:
        store = live_store(args)
    except Exception as exc:  # e.g. no cloud credentials: the gate has no evidence, it is not a finding
        fail(f"cannot open the store: {type(exc).__name__}: {exc}")
        return None
    if store is None:
        fail(f"{NO_STORE}: a gate over no store cannot pass")
    return store


def _run_gate(gate: GateName, store: Store, since: timedelta | None, org: str | None) -> GateResult:
    now = utc_now()
    window = since or parse_duration(DEFAULT_WINDOWS[gate])
    return GATES[gate](store, since=now - window, until=now, org=org)


def _gate(gate: GateName) -> Any:
    def handler(args: argparse.Namespace) -> int:
        store = _store(args)
        if store is None:
            return 2
        try:
            result = _run_gate(gate, store, args.since, args.org)
        except Exception as exc:  # the store is unreachable or refuses us: no evidence, not a finding
            return fail(f"cannot read the store: {type(exc).__name__}: {exc}", 2)
        return _report(result, args.json)

    return handler


def _promotion(args: argparse.Namespace) -> int:
    try:
        path = Path(args.file) if args.file else env_flags_file(args.env)
        committed = load_flags_file(path)
    except (ArgumentError, ConfigError) as exc:
        return fail(f"{exc}", 2)
    store = _store(args)
    if store is None:
        return 2
    target = stage_of(committed)
    if target is not None and target.gate is None:
        # legacy or shadow serve the LLM arm to no one: never gated, whatever is live (which
        # also lets the first deploy of a new project through before its database exists)
        print(
            f"{args.env}: {path.name} is at {target.name}, which serves the LLM arm to no one: no gate needed"
        )
        return 0
    try:
        live = live_document(store)
    except ConfigError as exc:
        return fail(f"the live config/flags is unusable, so the step cannot be judged: {exc}", 2)
    except Exception as exc:  # unreachable store: no evidence, not a finding
        return fail(f"cannot read the live config/flags: {type(exc).__name__}: {exc}", 2)
    step = promotion_step(args.env, committed, live)
    if step.refused:
        err(f"refused: {args.env}: {step.refused}")
        # both ends on the ladder: the step skips a stage (a finding); else a file is off it
        return 1 if step.live is not None and target is not None else 2
    if step.gate is None:
        print(f"{args.env}: {step.reason}: no gate needed")
        return 0
    print(f"{args.env}: {step.reason} needs the {step.gate} gate")
    try:
        result = _run_gate(step.gate, store, args.since, None)
    except Exception as exc:  # unreachable store: no evidence, not a finding
        return fail(f"cannot read the store: {type(exc).__name__}: {exc}", 2)
    return _report(result, args.json)


def register(sub: Any) -> None:
    """The ``gate`` command and its gates."""
    gate = sub.add_parser("gate", help="promotion gates over the live store (exit 0 pass, 1 fail, 2 no data)")
    gsub = gate.add_subparsers(dest="gate_command", metavar="GATE")
    for name, help_text in GATE_HELP:
        p = gsub.add_parser(name, help=help_text)
        p.add_argument(
            "--since", type=duration_arg, help=f"window, e.g. 24h, 7d (default {DEFAULT_WINDOWS[name]})"
        )
        p.add_argument("--org", help="one organisation (default: all)")
        p.add_argument("--json", action="store_true")
        store_options(p)
        p.set_defaults(func=_gate(name), store=None)

    p = gsub.add_parser(
        "promotion", help="the gate an environment's committed flags file needs over its live document"
    )
    p.add_argument("--env", required=True, choices=ENVIRONMENTS)
    p.add_argument("--file", help="the flags file to be applied (default terraform/flags/ENV.json)")
    p.add_argument("--since", type=duration_arg, help="window of the gate (default: the gate's own)")
    p.add_argument("--json", action="store_true")
    store_options(p)
    p.set_defaults(func=_promotion, store=None)
