"""``charter``: the command line. Each area registers its own subcommands.

Exit codes: 0 ok, 1 a check failed or the operation failed, 2 bad input/usage.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

# Modules that contribute subcommands through ``register(subparsers)``.
COMMAND_MODULES = (
    "shared_lib.cli_demo",
    "shared_lib.local_cli",
    "shared_lib.policy.cli",
    "shared_lib.tools.cli",
    "shared_lib.rollout.cli",
    "shared_lib.ops.cli",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="charter", description="Charter: the LLM proposes; the charter decides."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if name.startswith(str(exc.name)):  # that area is not installed in this build
                continue
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
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


if __name__ == "__main__":
    sys.exit(main())
