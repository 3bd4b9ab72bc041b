"""Structured logs in the Cloud Logging format, masked: one handler on the root logger.

``configure`` (the composition root calls it) installs one ``CloudLoggingHandler`` on the root
logger, so every standard-library logger goes through it: ``logging.getLogger(__name__)`` in our
modules, the libraries' (google clients, urllib3, werkzeug, functions-framework) and
``warnings`` (``logging.captureWarnings``). ``log_event`` is a thin call onto the same handler:
one record on the ``charter`` logger whose entry carries the event's fields.

Each entry has ``severity``, ``message``, ``time``, the trace correlation fields
(``logging.googleapis.com/trace``, ``.../spanId``, ``.../trace_sampled``), the labels
``turn_id``, ``layer``, ``org_id`` (``.../labels``), ``.../sourceLocation`` and, for a record
with ``exc_info``, a ``stack_trace`` Cloud Error Reporting reads. The message, the arguments,
the extra fields and the stack trace are masked by the sanitiser.

Trace and span come from the current OpenTelemetry span when its context is valid; else from
the ``turn`` argument's or the call context's (``shared_lib.turn.callctx``) W3C ``traceparent``,
so every line a layer writes carries its turn's trace. The labels come from the same turn.

Lines go to stderr: JSON, one object per line, when the settings say so (``CHARTER_LOG_JSON``,
on in the cloud and on the local stack), where the logging agent parses them; otherwise one
readable line per record, from ``WARNING`` up (developer runs, the operator CLI).

>>> trace_field("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "p")
'projects/p/traces/4bf92f3577b34da6a3ce929d0e0e4736'
"""

from __future__ import annotations

import json
import logging
import math
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.turn.callctx import current

if TYPE_CHECKING:
    from shared_lib.turn.envelope import Turn

EVENT_LOGGER = "charter"  # the logger of ``log_event``'s records
TRACE_KEY = "logging.googleapis.com/trace"
SPAN_KEY = "logging.googleapis.com/spanId"
SAMPLED_KEY = "logging.googleapis.com/trace_sampled"
LABELS_KEY = "logging.googleapis.com/labels"
SOURCE_KEY = "logging.googleapis.com/sourceLocation"
# Cloud Logging's severities and the Python level each stands for (NOTICE, ALERT, EMERGENCY
# have none of their own: they sit between and above Python's, in Cloud Logging's order).
LEVELS: dict[str, int] = {
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "NOTICE": logging.INFO + 5,
    "WARNING": logging.WARNING,
    "ERROR": logging.ERROR,
    "CRITICAL": logging.CRITICAL,
    "ALERT": logging.CRITICAL + 10,
    "EMERGENCY": logging.CRITICAL + 20,
}
SEVERITIES = tuple(LEVELS)
_ENTRY_ATTR = "charter_entry"  # the record attribute carrying ``log_event``'s entry
_STANDARD_ATTRS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    _ENTRY_ATTR,
}
_propagator = TraceContextTextMapPropagator()


def severity_of(levelno: int) -> str:
    """The Cloud Logging severity of a Python level: the highest one at or below it."""
    return next((s for s, n in reversed(LEVELS.items()) if levelno >= n), "DEBUG")


def parse_traceparent(traceparent: str) -> tuple[str, str, bool] | None:
    """(trace id, parent span id, sampled) of a valid W3C ``traceparent``; else ``None``.

    Read by OpenTelemetry's W3C Trace Context propagator, as every hop propagates it.
    """
    if not traceparent:
        return None
    context = trace.get_current_span(_propagator.extract({"traceparent": traceparent})).get_span_context()
    if not context.is_valid:
        return None
    return format(context.trace_id, "032x"), format(context.span_id, "016x"), context.trace_flags.sampled


def trace_field(traceparent: str, project: str) -> str | None:
    parsed = parse_traceparent(traceparent)
    return f"projects/{project}/traces/{parsed[0]}" if parsed else None


def trace_fields(traceparent: str, project: str | None = None) -> dict[str, Any]:
    """The Cloud Logging correlation fields for a ``traceparent`` (empty when it is invalid)."""
    parsed = parse_traceparent(traceparent)
    return {} if parsed is None else _correlation(*parsed, project=project)


def _correlation(trace_id: str, span_id: str, sampled: bool, *, project: str | None = None) -> dict[str, Any]:
    return {
        TRACE_KEY: f"projects/{project or _project}/traces/{trace_id}",
        SPAN_KEY: span_id,
        SAMPLED_KEY: sampled,
    }


def current_trace_fields(traceparent: str = "") -> dict[str, Any]:
    """The correlation fields of the current OpenTelemetry span, else of ``traceparent``."""
    span = trace.get_current_span().get_span_context()
    if span.is_valid:
        return _correlation(
            format(span.trace_id, "032x"), format(span.span_id, "016x"), span.trace_flags.sampled
        )
    return trace_fields(traceparent)


def _context(turn: Turn | None, layer: str) -> tuple[str, dict[str, Any], dict[str, str]]:
    """(layer, trace fields, labels) of a line: from ``turn`` or the call context."""
    ctx = current()
    if turn is not None:
        ids, traceparent = {"turn_id": turn.turn_id, "org_id": turn.org_id}, turn.traceparent
    elif ctx is not None:
        ids, traceparent = {"turn_id": ctx.turn_id, "org_id": ctx.org_id}, ctx.traceparent
    else:
        ids, traceparent = {}, ""
    layer = layer or (ctx.layer if ctx is not None else "")
    return layer, current_trace_fields(traceparent), {"layer": layer, **ids}


_PLAIN = frozenset({str, int, bool, type(None)})


def _plain(value: Any) -> bool:
    """Whether ``value`` is already what JSON carries (then it needs no round trip)."""
    kind = type(value)
    if kind in _PLAIN:
        return True
    if kind is float:
        return math.isfinite(value)
    if kind is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    return kind is list and all(_plain(v) for v in value)


def _jsonable(value: Any) -> Any:
    """``value`` as JSON carries it (anything else as its text), so masking sees every string.
    Masking copies what it is given, so a value that already is JSON's is used as it is."""
    if _plain(value):
        return value
    return json.loads(json.dumps(value, ensure_ascii=False, default=str))


def build_entry(
    event: str, *, turn: Turn | None = None, layer: str = "", severity: str = "INFO", **fields: Any
) -> dict[str, Any]:
    """The JSON object of one ``log_event`` line (masked); the handler adds time and source."""
    layer, correlation, labels = _context(turn, layer)
    entry: dict[str, Any] = {
        "severity": severity if severity in LEVELS else "DEFAULT",
        "message": event,
        "event": event,
        "layer": layer,
        **correlation,
        LABELS_KEY: labels,
    }
    masked = Sanitizer.default().mask_obj(_jsonable(fields))
    entry.update({k: v for k, v in masked.items() if k not in entry})
    return entry


def record_entry(record: logging.LogRecord) -> dict[str, Any]:
    """The entry of ``record``: ``log_event``'s own, else built from the record (masked)."""
    entry = getattr(record, _ENTRY_ATTR, None)
    if isinstance(entry, dict):
        return entry
    _, correlation, labels = _context(None, "")
    extra = {k: v for k, v in vars(record).items() if k not in _STANDARD_ATTRS and not k.startswith("_")}
    text = record.getMessage().rstrip("\n")  # a captured warning ends in one
    masked = Sanitizer.default().mask_obj({"message": text, "fields": _jsonable(extra)})
    built = {"severity": severity_of(record.levelno), "message": masked["message"], "logger": record.name}
    built.update({**correlation, LABELS_KEY: labels})
    built.update({k: v for k, v in masked["fields"].items() if k not in built})
    return built


def log_event(
    event: str, *, turn: Turn | None = None, layer: str = "", severity: str = "INFO", **fields: Any
) -> dict[str, Any] | None:
    """Log one structured line through the root handler and return its entry. A line the logger
    would drop (an ``INFO`` line with readable logs, which start at ``WARNING``) is not built at
    all (``None``): its masking and encoding were most of what a stage's log lines cost."""
    logger, level = logging.getLogger(EVENT_LOGGER), LEVELS.get(severity, logging.INFO)  # DEFAULT: INFO
    if not logger.isEnabledFor(level):
        return None
    entry = build_entry(event, turn=turn, layer=layer, severity=severity, **fields)
    logger.log(level, event, extra={_ENTRY_ATTR: entry}, stacklevel=2)
    return entry


class CloudLoggingFormatter(logging.Formatter):
    """A record as one Cloud Logging JSON line, or as one readable line (``json_lines=False``)."""

    def __init__(self, *, json_lines: bool) -> None:
        super().__init__()
        self.json_lines = json_lines

    def format(self, record: logging.LogRecord) -> str:
        entry = dict(record_entry(record))
        entry["time"] = datetime.fromtimestamp(record.created, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        entry[SOURCE_KEY] = {"file": record.pathname, "line": str(record.lineno), "function": record.funcName}
        stack = self._stack_trace(record)
        if stack:
            entry["stack_trace"] = Sanitizer.default().mask_text(stack)
        if self.json_lines:
            return json.dumps(entry, ensure_ascii=False, default=str)
        return self._readable(entry, record.name)

    def _stack_trace(self, record: logging.LogRecord) -> str:
        """The traceback as Python prints it (what Error Reporting parses), then the stack."""
        parts = [self.formatException(record.exc_info)] if record.exc_info else []
        if record.stack_info:
            parts.append(self.formatStack(record.stack_info))
        return "\n".join(parts)

    @staticmethod
    def _readable(entry: dict[str, Any], logger: str) -> str:
        """``SEVERITY logger: message key=value … [turn T layer]``, then any stack trace."""
        shown = {"severity", "message", "event", "layer", "logger", "time", "stack_trace", SOURCE_KEY}
        fields = " ".join(
            f"{k}={v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)}"
            for k, v in entry.items()
            if k not in shown and not k.startswith("logging.googleapis.com/")
        )
        labels = entry.get(LABELS_KEY) or {}
        where = " ".join(v for v in (labels.get("turn_id"), labels.get("layer")) if v)
        line = f"{entry['severity']} {logger}: {entry['message']}"
        line += f" {fields}" if fields else ""
        line += f" [{where}]" if where else ""
        return line + (f"\n{entry['stack_trace']}" if "stack_trace" in entry else "")


class CloudLoggingHandler(logging.Handler):
    """Writes each record to the process's stderr of the moment (a test may have swapped it)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
            stream = sys.stderr
            stream.write(line + "\n")
            stream.flush()
        except RecursionError:
            raise
        except Exception:
            self.handleError(record)


_json_logs = False
_project = "charter-local"
_saved_root_level: int | None = None


def configure(*, json_logs: bool, project: str) -> None:
    """Install the one handler on the root logger (again: reconfigure it, never add a second).

    JSON lines from ``INFO`` up with ``json_logs`` (``CHARTER_LOG_JSON``); readable lines from
    ``WARNING`` up otherwise. Warnings are logged (``py.warnings``).
    """
    global _json_logs, _project, _saved_root_level
    _json_logs, _project = json_logs, project
    root = logging.getLogger()
    handler = next((h for h in root.handlers if isinstance(h, CloudLoggingHandler)), None)
    if handler is None:
        handler = CloudLoggingHandler()
        root.addHandler(handler)
    handler.setFormatter(CloudLoggingFormatter(json_lines=json_logs))
    handler.setLevel(logging.NOTSET if json_logs else logging.WARNING)
    # a service logs from INFO up; a root already lower (a test at DEBUG) is left as it is
    if json_logs and root.getEffectiveLevel() > logging.INFO:
        _saved_root_level = root.level
        root.setLevel(logging.INFO)
    elif not json_logs and _saved_root_level is not None:
        root.setLevel(_saved_root_level)
        _saved_root_level = None
    # re-capture: whoever replaced ``warnings.showwarning`` since (a test runner) is replaced again
    logging.captureWarnings(False)
    logging.captureWarnings(True)


def json_logs_enabled() -> bool:
    return _json_logs
