"""``charter route``: which route the router gives a text, without running a turn.

charter route "TEXT" [--local-only] [--json] [--config FILE]

Prints the decision (``primary_route``, ``source``, ``confidence``, ``reason``,
``evidence``, ``rule_id``, the leading commands, ``flags.local_only`` and the classifier's
fields). ``TEXT`` ``-`` reads the text from stdin (a pasted code block, a log).
``--local-only`` is the conversation's state before the text (``/local`` in the text sets
it too). No classifier runs here: the operator runtime never has an LLM
(``composition.operator_runtime``), so a text no command or rule decides is CHAT with
``classifier_called: false`` and the reason "no classifier configured".

Exit codes: 0 ok, 2 bad input (an empty text, a routing file that does not load).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from shared_lib.cli.runner import fail
from shared_lib.errors import ConfigError
from shared_lib.routing.config import ROUTING_FILE, RoutingConfig, load_routing_config
from shared_lib.routing.model import RoutingDecision
from shared_lib.routing.router import decide

EXIT_OK, EXIT_USAGE = 0, 2


def register(subparsers: Any) -> None:
    route = subparsers.add_parser("route", help="the route a text would take (no turn is run)")
    route.add_argument("text", metavar="TEXT", help="the user's text ('-' reads stdin)")
    route.add_argument(
        "--local-only", action="store_true", help="the conversation is in /local (cloud routes refused)"
    )
    route.add_argument("--json", action="store_true", help="the decision as one JSON object")
    route.add_argument(
        "--config", help=f"routing file to use (default: CHARTER_ROUTING or {ROUTING_FILE.name})"
    )
    route.set_defaults(func=run_route)


def render(decision: RoutingDecision) -> str:
    """The decision as aligned ``name  value`` lines for a terminal."""
    flags = decision.flags
    rows = [
        ("primary_route", decision.primary_route.value),
        ("source", decision.source),
        ("confidence", f"{decision.confidence:.2f}"),
        ("reason", decision.reason),
        ("evidence", " | ".join(decision.evidence) or "-"),
        ("rule_id", decision.rule_id or "-"),
        ("commands", " ".join(decision.commands) or "-"),
        ("local_only", "yes" if flags.local_only else "no"),
        ("classifier_called", "yes" if flags.classifier_called else "no"),
    ]
    if flags.classifier_called:
        said = (
            f"{flags.classifier_route.value} {flags.classifier_confidence:.2f}"
            if flags.classifier_route
            else "-"
        )
        rows += [("classifier", said), ("classifier_error", flags.classifier_error or "-")]
    if flags.refused:
        rows += [("refused", flags.refused), ("guidance", decision.guidance or "-")]
    return "\n".join(f"{name:<18} {value}" for name, value in rows)


def run_route(args: argparse.Namespace) -> int:
    text = sys.stdin.read() if args.text == "-" else args.text
    if not text.strip():
        return fail("route: the text is empty", EXIT_USAGE)
    try:
        config: RoutingConfig = load_routing_config(args.config) if args.config else load_routing_config()
    except ConfigError as exc:
        return fail(f"route: {exc}", EXIT_USAGE)
    decision = decide(text, local_only=args.local_only, config=config)
    if args.json:
        print(json.dumps(decision.model_dump(mode="json"), ensure_ascii=False))
    else:
        print(render(decision))
    return EXIT_OK
