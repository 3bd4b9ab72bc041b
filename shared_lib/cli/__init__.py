"""``charter``: the operators' command line, one package.

Each module registers its subcommands with ``register(subparsers)``:

=================  ===============================================================
``policy``         ``charter policy check|validate``: the guardian and gate on a case
``tools``          ``charter tools list``: the registry as the LLM sees it
``rollout``        ``charter flags …``, ``charter shadow …``, ``charter guard …``
``gates``          ``charter gate shadow|canary|promotion``: promotion gates over the store
``operations``     ``charter turns|replay|audit|cost|metrics|alerts|llm-calls|admin``
``revisions``      ``charter rollout rollback``: every layer back to its previous revision
``data``           ``charter data purge``: a person's data, deleted everywhere in the store
``routing``        ``charter route "TEXT"``: the route the router gives a text (no turn run)
``dates``          ``charter dates parse "TEXT" --now T``: how the one date reader reads a text
``approvals``      ``charter approvals list|show|auto on|auto off|auto status``: jobs and grants
=================  ===============================================================

Every command that reads the live store gets it from one operator runtime
(``shared_lib.composition.operator_runtime``: ``--store``/``--project``, the settings, or
what the local stack or the demo left in ``.charter/``). The developer commands ``charter
demo`` and ``charter local`` belong to ``infra`` (``infra/cli.py`` adds them; the console
script is that one), so the product never imports its test infrastructure.

Exit codes: 0 ok, 1 a check failed or the operation failed, 2 bad input/usage.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from shared_lib.cli import (
    approvals,
    data,
    dates,
    gates,
    operations,
    policy,
    revisions,
    rollout,
    routing,
    tools,
)

Register = Callable[[Any], None]
PRODUCT_COMMANDS: tuple[Register, ...] = (
    policy.register,
    tools.register,
    rollout.register,
    gates.register,
    operations.register,
    revisions.register,
    data.register,
    routing.register,
    dates.register,
    approvals.register,
)


def build_parser(extra: Iterable[Register] = ()) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="charter", description="Charter: the LLM proposes; the charter decides."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for register in (*extra, *PRODUCT_COMMANDS):
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None, *, extra: Iterable[Register] = ()) -> int:
    parser = build_parser(extra)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        result = args.func(args)
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader went away (``charter metrics | head``): not an error of ours
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    return int(result or 0)
