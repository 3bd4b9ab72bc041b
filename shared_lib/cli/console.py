"""What every rollout command shares: the live store, JSON output, errors, durations.

The live store is the operator runtime's (``--store``/``--project``, the settings, or what
``charter local up`` / ``charter demo`` left in ``.charter/``: see
``shared_lib.wiring.composition.operator_runtime``); tests hand a store in through the parsed
arguments (``args.store``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from shared_lib.errors import ArgumentError, ConfigError
from shared_lib.ports import Store
from shared_lib.rollout.report import parse_duration


def json_text(data: Any) -> str:
    """``data`` as one line of JSON (dates in ISO form, anything else as text)."""
    return json.dumps(data, ensure_ascii=False, default=_default, sort_keys=False)


def print_listing(
    items: Sequence[dict[str, Any]],
    *,
    as_json: bool,
    key: str,
    columns: Sequence[tuple[str, str]],
    cells: Callable[[dict[str, Any]], Sequence[object]],
    noun: str,
) -> int:
    """A list command's output: ``{key: items}`` as JSON, or a table (``columns``: each a title
    and its format spec, the last usually unpadded) of ``cells(item)`` and a count line.

    >>> print_listing([{"id": "a", "n": 2}], as_json=False, key="x", columns=[("id", "<4"), ("n", ">3"), ("note", "")],
    ...               cells=lambda i: (i["id"], i["n"], "ok"), noun="item")
    id     n note
    a      2 ok
    1 item(s)
    0
    """
    if as_json:
        print(json_text({key: list(items)}))
        return 0
    row = " ".join("{:" + spec + "}" for _, spec in columns)
    print(row.format(*(title for title, _ in columns)))
    for item in items:
        print(row.format(*cells(item)))
    print(f"{len(items)} {noun}(s)")
    return 0


def _default(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else str(value)


def err(message: str) -> None:
    """A message for the operator, on stderr."""
    print(message, file=sys.stderr)


def live_store(args: argparse.Namespace) -> Store | None:
    """``args.store`` when a caller handed one in, else the runtime's store; None when none is configured."""
    if getattr(args, "store", None) is not None:
        store: Store = args.store
        return store
    from shared_lib.wiring.composition import operator_runtime

    try:
        rt = operator_runtime(
            store=getattr(args, "store_choice", None), project=getattr(args, "project", None)
        )
    except ConfigError:
        return None
    return rt.store


NO_STORE = "no store configured (charter local up, charter demo, or --store/--project)"


def duration_arg(text: str) -> timedelta:
    """An argparse type: ``30m``, ``4h``, ``7d`` as a timedelta."""
    try:
        return parse_duration(text)
    except ArgumentError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
