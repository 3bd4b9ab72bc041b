"""``charter``: the operators' command line, one package.

Each module registers its subcommands with ``register(subparsers)``:

=================  =====================================================================================
``policy``         ``charter policy check|validate``: the guardian and gate on a case
``tools``          ``charter tools list``: the registry as the LLM sees it
``rollout``        ``charter flags …``, ``charter shadow …``, ``charter guard …``
``gates``          ``charter gate shadow|canary|promotion``: promotion gates over the store
``operations``     ``charter turns|replay|audit|cost|metrics|alerts|llm-calls|admin``
``revisions``      ``charter rollout rollback``: every layer back to its previous revision
``data``           ``charter data purge``: a person's data, deleted everywhere in the store
``routing``        ``charter route "TEXT"``: the route the router gives a text (no turn run)
``dates``          ``charter dates parse "TEXT" --now T``: how the one date reader reads a text
``config``         ``charter config show``: the effective settings, where each comes from
``peers``          ``charter peers list``: the LLM peers, their purposes and last health
``memory``         ``charter memory add|import|list|delete|search``: teachings, knowledge, values; hybrid search
=================  =====================================================================================

A feature's commands live in its room (``shared_lib/features/<name>/cli.py``) and register through
its manifest (``shared_lib.wiring.features.FEATURES``): ``charter approvals list|show|auto on|auto
off|auto status`` (approvals), ``charter jobs list|show|cancel`` (delegated jobs), ``charter
episodes list|show`` and ``charter tags list|search`` (memory stories), ``charter persona
show|verify|diff`` (persona learning: the pinned core, an organisation's extension), ``charter ft
list|show|accept|edit|reject|export`` (fine-tuning data, reviewed and exported), ``charter skills
list|show|test|approve|rollback|propose`` (skills, sandbox tests, approvals).

Every command that reads the live store gets it from one operator runtime
(``shared_lib.wiring.composition.operator_runtime``: ``--store``/``--project``, the settings, or
what the local stack or the demo left in ``.charter/``). The developer commands ``charter
demo`` and ``charter local`` belong to ``infra`` (``infra/cli.py`` adds them; the console
script is that one), so the product never imports its test infrastructure.

Exit codes, the same for every command (``charter`` and the developer ones):

====  ==========================================================================================
0     ok (a gate passes, a check finds nothing, the operation was done)
1     a finding or a threshold crossed: a gate fails, a check or an audit finds a problem, a
      record asked for does not exist, an operation failed (a ``CharterError`` that is not
      about the input; an unexpected error, whose traceback goes to ``.charter/logs/``)
2     bad input or configuration: a usage error, a group without its action (its help is
      printed), a file that does not parse or validate, no store configured, a value out of
      range, a gate without evidence
====  ==========================================================================================

Errors are one line on stderr, ``charter: error: …``; results go to stdout (``--json``: one
JSON document), progress of long operations to stderr. A reader that leaves early
(``charter metrics | head -1``) ends the command quietly with 0. ``shared_lib.cli.runner``
holds the convention.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from shared_lib.cli import (
    config,
    data,
    dates,
    gates,
    memory,
    operations,
    operators,
    peers,
    policy,
    revisions,
    rollout,
    routing,
    runner,
    tools,
)
from shared_lib.wiring.features import FEATURES

Register = Callable[[Any], None]


def feature_commands() -> tuple[Register, ...]:
    """Each feature's ``register``, by its manifest (``shared_lib.wiring.features``); loaded when
    the parser is built, since a room's ``cli.py`` imports this package's helpers."""
    return tuple(importlib.import_module(f.cli).register for f in FEATURES if f.cli is not None)


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
    config.register,
    peers.register,
    memory.register,
    operators.register,
)


def build_parser(extra: Iterable[Register] = ()) -> argparse.ArgumentParser:
    """The whole ``charter`` parser: ``extra`` commands first, then the product's."""
    parser = argparse.ArgumentParser(
        prog="charter", description="Charter: the LLM proposes; the charter decides."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for register in (*extra, *PRODUCT_COMMANDS, *feature_commands()):
        register(sub)
    runner.give_groups_help(parser)
    return parser


def main(argv: Sequence[str] | None = None, *, extra: Iterable[Register] = ()) -> int:
    """Run one command; its exit code by the convention above (``shared_lib.cli.runner``)."""
    return runner.run(build_parser(extra), None if argv is None else list(argv))
