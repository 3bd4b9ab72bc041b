"""What every rollout command shares: the live store, JSON output, errors, durations.

The live store is the one the runtime is configured with (``build_runtime()`` from the
environment); tests hand a store in through the parsed arguments (``args.store``).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timedelta
from typing import Any

from shared_lib.errors import ArgumentError
from shared_lib.ports import Store
from shared_lib.rollout.report import parse_duration


def json_text(data: Any) -> str:
    """``data`` as one line of JSON (dates in ISO form, anything else as text)."""
    return json.dumps(data, ensure_ascii=False, default=_default, sort_keys=False)


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
    from shared_lib.adapters.inproc_bus import InProcessBus
    from shared_lib.adapters.recording_channel import RecordingChannel
    from shared_lib.runtime import build_runtime

    rt = build_runtime(llm=None, bus=InProcessBus(), channels={"http": RecordingChannel("http")})
    return None if rt.settings.store == "memory" else rt.store


def duration_arg(text: str) -> timedelta:
    """An argparse type: ``30m``, ``4h``, ``7d`` as a timedelta."""
    try:
        return parse_duration(text)
    except ArgumentError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
