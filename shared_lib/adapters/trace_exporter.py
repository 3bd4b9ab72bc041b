"""The local span exporter: finished OpenTelemetry spans into the store (``trace_spans``).

The local stack sets ``CHARTER_TRACE_EXPORTER=store``; every function process exports its
spans here through a ``BatchSpanProcessor`` (``shared_lib.tracing``), off the serving path,
one commit (a batch of writes, ``Store.set_many``) per 400 spans: the spans are documents of
their own, written once and never read back in the export, so a transaction's begin and its
retries bought nothing (issue 39: half the exporter's round trips). The SDK suppresses instrumentation while it exports, so these
writes make no store spans of their own. ``shared_lib.ops.spans`` reads a trace back.

A document holds ids, names, timings and attributes (never message text), keyed
``{trace id}-{span id}``, and expires after ``SPAN_TTL``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from opentelemetry.sdk.resources import SERVICE_NAME
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from shared_lib import collections
from shared_lib.ports import Store

SPAN_TTL = timedelta(days=7)
WRITES_PER_COMMIT = 400  # Firestore allows 500 writes in one commit


def _time(ns: int | None) -> datetime | None:
    return None if ns is None else datetime.fromtimestamp(ns / 1e9, UTC)


def _value(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def span_document(span: ReadableSpan, *, now: datetime) -> tuple[str, dict[str, Any]]:
    """The path and document of one finished span."""
    ctx = span.get_span_context()
    assert ctx is not None  # a finished SDK span always has one
    trace_id, span_id = format(ctx.trace_id, "032x"), format(ctx.span_id, "016x")
    attributes = {str(k): _value(v) for k, v in (span.attributes or {}).items()}
    start, end = span.start_time or 0, span.end_time or span.start_time or 0
    doc = {
        "trace_id": trace_id,
        "span_id": span_id,
        "parent_span_id": format(span.parent.span_id, "016x") if span.parent is not None else None,
        "name": span.name,
        "kind": span.kind.name,
        "service": str(span.resource.attributes.get(SERVICE_NAME, "")),
        "start": _time(start),
        "start_ns": start,
        "duration_ms": round((end - start) / 1e6, 3),
        "status": span.status.status_code.name,
        "status_message": span.status.description or "",
        "turn_id": attributes.get("charter.turn_id"),
        "attributes": attributes,
        "expires_at": now + SPAN_TTL,
    }
    return collections.path("trace_spans", id=f"{trace_id}-{span_id}"), doc


class StoreSpanExporter(SpanExporter):
    """``SpanExporter`` writing each finished span to the store as one document."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        now = datetime.now(UTC)
        docs = [span_document(s, now=now) for s in spans]
        try:
            for i in range(0, len(docs), WRITES_PER_COMMIT):
                self.store.set_many([(path, doc, False) for path, doc in docs[i : i + WRITES_PER_COMMIT]])
        except Exception:  # a lost batch of spans must never take a worker down
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None
