"""The ``charter`` console script: the product's operator commands plus the developer ones
(``charter demo``, ``charter local``, ``charter eval``) that need this repository's infrastructure."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from infra import demo_cli, eval_cli, local_cli, say_cli
from shared_lib.cli import build_parser
from shared_lib.cli import main as product_main

DEVELOPER_COMMANDS = (demo_cli.register, local_cli.register, eval_cli.register, say_cli.register)


def parser() -> argparse.ArgumentParser:
    """The whole parser of the console script (the exit-code test walks it)."""
    return build_parser(DEVELOPER_COMMANDS)


def main(argv: Sequence[str] | None = None) -> int:
    return product_main(argv, extra=DEVELOPER_COMMANDS)


if __name__ == "__main__":
    sys.exit(main())
