"""Structured JSON logs in the Cloud Logging format, masked.

Each line has ``severity``, ``message``, the trace correlation field
(``logging.googleapis.com/trace``) and labels ``turn_id``, ``layer``, ``org_id``.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import TYPE_CHECKING, Any

from shared_lib.sanitizer import Sanitizer

if TYPE_CHECKING:
    from shared_lib.envelope import Turn

_logger = logging.getLogger("charter")


def trace_field(traceparent: str, project: str) -> str | None:
    parts = traceparent.split("-")
    if len(parts) == 4 and len(parts[1]) == 32:
        return f"projects/{project}/traces/{parts[1]}"
    return None


def log_event(event: str, *, turn: Turn | None = None, layer: str = "", severity: str = "INFO",
              **fields: Any) -> dict[str, Any]:
    """Emit one JSON log line (to stderr when ``CHARTER_LOG_JSON=1``, else to ``logging``)."""
    sanitizer = Sanitizer.default()
    entry: dict[str, Any] = {"severity": severity, "message": event, "event": event, "layer": layer}
    labels = {"layer": layer}
    if turn is not None:
        labels.update(turn_id=turn.turn_id, org_id=turn.org_id)
        trace = trace_field(turn.traceparent, os.environ.get("CHARTER_PROJECT", "charter-local"))
        if trace:
            entry["logging.googleapis.com/trace"] = trace
    entry["logging.googleapis.com/labels"] = labels
    entry.update(sanitizer.mask_obj(fields))
    if os.environ.get("CHARTER_LOG_JSON") == "1":
        print(json.dumps(entry, ensure_ascii=False, default=str), file=sys.stderr, flush=True)
    else:
        _logger.log(logging.getLevelName(severity) if severity != "NOTICE" else logging.INFO,
                    json.dumps(entry, ensure_ascii=False, default=str))
    return entry
