"""How one ``charter`` command runs: its exit code, its errors, its pipe, a group's help.

* A group given without its action (``charter flags``, ``charter approvals auto``) prints its
  own help on stderr and exits 2 (``give_groups_help`` walks the whole parser).
* A ``CharterError`` ends as one line ``charter: error: …`` (exit 2 for ``ConfigError`` and
  ``ArgumentError``, bad input or configuration; else 1, an operation that failed).
* Any other exception is a defect: its traceback goes to a file under ``.charter/logs/`` and
  the operator reads one line naming that file (exit 1).
* An ``--org`` that is not an organisation id (``demo/``, a space, full-width letters) is bad
  input for every command: one line, exit 2, before the command runs.
* A reader that goes away (``charter metrics | head -1``) ends the command quietly, exit 0.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import traceback
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from shared_lib.errors import ArgumentError, CharterError, ConfigError

EXIT_OK, EXIT_FINDING, EXIT_USAGE = 0, 1, 2
# An organisation id as the channels map it (``channels.base.OrgId``) and the store's paths
# take it: never a path separator, a space or a control character.
ORG_ID = re.compile(r"[A-Za-z0-9_.\-]{1,128}")


def fail(message: str, code: int = EXIT_USAGE) -> int:
    """Say ``message`` as one line on stderr; return ``code`` (the command's exit code)."""
    first = next((line for line in str(message).splitlines() if line.strip()), "failed")
    print(f"charter: error: {first.removeprefix('error: ')}", file=sys.stderr)
    return code


def progress(line: str) -> None:
    """A step of a long operation, on stderr at once (stdout stays the result: ``--json`` parses)."""
    print(line, file=sys.stderr, flush=True)


class ProgressBar:
    """``(done, total)`` drawn as a bar on stderr, redrawn in place on a terminal and one line
    per tenth otherwise (a log keeps a few lines, not thousands); stdout stays the result."""

    WIDTH = 30

    def __init__(self, label: str) -> None:
        self.label = label
        self._tenth = -1

    def __call__(self, done: int, total: int) -> None:
        share = done / total if total else 1.0
        filled = int(share * self.WIDTH)
        line = f"{self.label} [{'#' * filled}{'.' * (self.WIDTH - filled)}] {done}/{total}"
        if sys.stderr.isatty():
            print(f"\r{line}", end="\n" if done >= total else "", file=sys.stderr, flush=True)
        elif int(share * 10) != self._tenth:
            self._tenth = int(share * 10)
            print(line, file=sys.stderr, flush=True)


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction[Any] | None:
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def walk(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser, bool]]:
    """Every command of ``parser``: (words, its parser, whether it is a group of actions)."""
    sub = _subparsers(parser)
    yield path, parser, sub is not None
    if sub is not None:
        seen: set[int] = set()
        for name, child in sub.choices.items():
            if id(child) not in seen:  # an alias names the same parser twice
                seen.add(id(child))
                yield from walk(child, (*path, name))


def _help_of(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    def show(_args: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return EXIT_USAGE

    return show


def give_groups_help(parser: argparse.ArgumentParser) -> None:
    """Every group (the top level included) run without an action prints its own help, exit 2."""
    for _path, group, is_group in walk(parser):
        if is_group:
            sub = _subparsers(group)
            assert sub is not None
            sub.required = False
            # a group's own default would override its actions' (argparse copies the
            # sub-namespace onto the parent): the default is set on the group's parser only
            group.set_defaults(func=_help_of(group))


def log_dir() -> Path:
    """Where the traceback of an unexpected failure goes: ``CHARTER_HOME/logs``."""
    try:
        from shared_lib.settings import Settings

        return Settings.from_env().home / "logs"
    except ConfigError:
        return Path(".charter") / "logs"


def _unexpected(exc: BaseException) -> int:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    path = log_dir() / f"charter-{stamp}.log"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(traceback.format_exception(exc)), encoding="utf-8")
        where = f"the traceback is in {path}"
    except OSError:
        where = "the traceback could not be written"
    return fail(f"unexpected {type(exc).__name__}: {exc} ({where})", EXIT_FINDING)


def _quiet_stdout() -> None:
    """The reader left: later writes (and the interpreter's last flush) go nowhere."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def run(parser: argparse.ArgumentParser, argv: list[str] | None) -> int:
    """Parse ``argv`` and run its command; the exit code by the convention above."""
    args = parser.parse_args(argv)
    org = getattr(args, "org", None)
    if isinstance(org, str) and not ORG_ID.fullmatch(org):
        # every command's --org, checked once here: a bad id is bad input, never a traceback
        return fail(f"--org {org!r} is not an organisation id (letters, digits, '_', '.', '-'; at most 128)")
    try:
        result = args.func(args)
        sys.stdout.flush()
        return int(result or 0)
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_OK
    except (ConfigError, ArgumentError) as exc:
        return fail(str(exc), EXIT_USAGE)
    except CharterError as exc:
        return fail(str(exc), EXIT_FINDING)
    except KeyboardInterrupt:
        return fail("interrupted", 130)
    except Exception as exc:
        return _unexpected(exc)
