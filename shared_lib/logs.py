"""Structured JSON logs in the Cloud Logging format, masked.

Each line has ``severity``, ``message``, the trace correlation fields
(``logging.googleapis.com/trace`` and ``.../spanId`` from the W3C ``traceparent``) and
labels ``turn_id``, ``layer``, ``org_id``. The turn comes from the ``turn`` argument or,
when none is given, from the call context the layer runner sets
(``shared_lib.callctx``), so every line a layer writes carries its turn's trace.

Lines go to stderr as JSON when the settings say so (``CHARTER_LOG_JSON``, on by default in
the cloud environments; the composition root calls ``configure``), where the logging agent
parses them; otherwise to the ``charter`` logger.

>>> trace_field("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "p")
'projects/p/traces/4bf92f3577b34da6a3ce929d0e0e4736'
"""

from __future__ import annotations

import json
import logging
import re
import sys
from typing import TYPE_CHECKING, Any

from shared_lib.sanitizer import Sanitizer

if TYPE_CHECKING:
    from shared_lib.envelope import Turn

_logger = logging.getLogger("charter")
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
TRACE_KEY = "logging.googleapis.com/trace"
SPAN_KEY = "logging.googleapis.com/spanId"
SAMPLED_KEY = "logging.googleapis.com/trace_sampled"
LABELS_KEY = "logging.googleapis.com/labels"
SEVERITIES = ("DEBUG", "INFO", "NOTICE", "WARNING", "ERROR", "CRITICAL", "ALERT", "EMERGENCY")


def parse_traceparent(traceparent: str) -> tuple[str, str, bool] | None:
    """(trace id, parent span id, sampled) of a valid W3C ``traceparent``; else ``None``."""
    m = _TRACEPARENT.match(traceparent.strip().lower()) if traceparent else None
    if m is None or set(m.group(1)) == {"0"} or set(m.group(2)) == {"0"}:
        return None
    return m.group(1), m.group(2), bool(int(m.group(3), 16) & 1)


def trace_field(traceparent: str, project: str) -> str | None:
    parsed = parse_traceparent(traceparent)
    return f"projects/{project}/traces/{parsed[0]}" if parsed else None


def trace_fields(traceparent: str, project: str | None = None) -> dict[str, Any]:
    """The Cloud Logging correlation fields for a ``traceparent`` (empty when it is invalid)."""
    parsed = parse_traceparent(traceparent)
    if parsed is None:
        return {}
    project = project or _project
    return {TRACE_KEY: f"projects/{project}/traces/{parsed[0]}", SPAN_KEY: parsed[1], SAMPLED_KEY: parsed[2]}


def _turn_labels(turn: Turn | None) -> tuple[dict[str, str], str]:
    if turn is not None:
        return {"turn_id": turn.turn_id, "org_id": turn.org_id}, turn.traceparent
    from shared_lib.callctx import current

    ctx = current()
    if ctx is None:
        return {}, ""
    return {"turn_id": ctx.turn_id, "org_id": ctx.org_id}, ctx.traceparent


def build_entry(
    event: str, *, turn: Turn | None = None, layer: str = "", severity: str = "INFO", **fields: Any
) -> dict[str, Any]:
    """The JSON object of one log line (masked); ``log_event`` writes it."""
    labels, traceparent = _turn_labels(turn)
    if not layer:
        from shared_lib.callctx import current

        ctx = current()
        layer = ctx.layer if ctx is not None else ""
    entry: dict[str, Any] = {
        "severity": severity if severity in SEVERITIES else "DEFAULT",
        "message": event,
        "event": event,
        "layer": layer,
    }
    entry.update(trace_fields(traceparent))
    entry[LABELS_KEY] = {"layer": layer, **labels}
    masked = Sanitizer.default().mask_obj(fields)
    entry.update({k: v for k, v in masked.items() if k not in entry})
    return entry


_json_logs = False
_project = "charter-local"


def configure(*, json_logs: bool, project: str) -> None:
    """Set once per process by the composition root (``CHARTER_LOG_JSON``, the project)."""
    global _json_logs, _project
    _json_logs, _project = json_logs, project


def json_logs_enabled() -> bool:
    return _json_logs


def log_event(
    event: str, *, turn: Turn | None = None, layer: str = "", severity: str = "INFO", **fields: Any
) -> dict[str, Any]:
    """Emit one JSON log line and return it."""
    entry = build_entry(event, turn=turn, layer=layer, severity=severity, **fields)
    line = json.dumps(entry, ensure_ascii=False, default=str)
    if json_logs_enabled():
        print(line, file=sys.stderr, flush=True)
    else:
        level = (
            logging.getLevelName(severity)
            if severity in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
            else logging.INFO
        )
        _logger.log(level, line)
    return entry
