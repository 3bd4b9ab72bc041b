"""A turn's span tree (``charter turns show``): the spans of its trace, as a tree with timings.

On the local stack (``CHARTER_TRACE_EXPORTER=store``) the spans are in ``trace_spans``
(``adapters.trace_exporter``); in the cloud they are in Cloud Trace, and the command says
where (``cloud_trace_url``).

>>> cloud_trace_url("p", "4bf92f3577b34da6a3ce929d0e0e4736")
'https://console.cloud.google.com/traces/list?project=p&tid=4bf92f3577b34da6a3ce929d0e0e4736'
"""

from __future__ import annotations

from typing import Any

from shared_lib import collections
from shared_lib.ports import Doc, Store
from shared_lib.settings import Settings


def cloud_trace_url(project: str, trace_id: str) -> str:
    return f"https://console.cloud.google.com/traces/list?project={project}&tid={trace_id}"


def spans_of(store: Store, trace_id: str) -> list[Doc]:
    """The spans the store exporter wrote for ``trace_id``, in start order."""
    coll = collections.path("trace_spans", id="x").rsplit("/", 1)[0]
    rows = store.query(coll, where=[("trace_id", "==", trace_id)])
    return sorted(
        (doc for _, doc in rows), key=lambda d: (int(d.get("start_ns") or 0), str(d.get("span_id")))
    )


def span_tree(spans: list[Doc]) -> list[dict[str, Any]]:
    """The spans as rows in tree order: ``depth`` and ``offset_ms`` (from the first start) added.

    A span whose parent is not among them (the caller's, or one not exported) is a root.
    """
    if not spans:
        return []
    ids = {s["span_id"] for s in spans}
    children: dict[str | None, list[Doc]] = {}
    for s in spans:
        parent = s.get("parent_span_id")
        children.setdefault(parent if parent in ids else None, []).append(s)
    t0 = min(int(s.get("start_ns") or 0) for s in spans)
    rows: list[dict[str, Any]] = []

    def walk(parent: str | None, depth: int) -> None:
        for s in children.get(parent, []):
            rows.append(
                {
                    "depth": depth,
                    "name": s["name"],
                    "service": s.get("service", ""),
                    "span_id": s["span_id"],
                    "parent_span_id": s.get("parent_span_id"),
                    "offset_ms": round((int(s.get("start_ns") or 0) - t0) / 1e6, 3),
                    "duration_ms": s.get("duration_ms", 0.0),
                    "status": s.get("status", "UNSET"),
                    "attributes": s.get("attributes", {}),
                }
            )
            walk(s["span_id"], depth + 1)

    walk(None, 0)
    return rows


def render_tree(rows: list[dict[str, Any]]) -> str:
    """One line a span: indented name, service, start offset and duration (ms), an error marked."""
    if not rows:
        return "  (no spans recorded for this trace)"
    width = max(2 * r["depth"] + len(r["name"]) for r in rows)
    lines = []
    for r in rows:
        label = "  " * r["depth"] + r["name"]
        error = "  ERROR" if r["status"] == "ERROR" else ""
        lines.append(
            f"  {label:<{width}}  +{r['offset_ms']:>9.1f} ms  {r['duration_ms']:>9.1f} ms  {r['service']}{error}"
        )
    return "\n".join(lines)


def in_cloud_trace(settings: Settings) -> bool:
    """Whether the spans of this store's turns went to Cloud Trace (the cloud's Firestore)."""
    cloud_store = settings.store == "firestore" and not settings.firestore_emulator_host
    return settings.trace_exporter == "cloud_trace" or cloud_store


def trace_section(store: Store, trace_id: str | None, settings: Settings) -> tuple[dict[str, Any], str]:
    """The ``spans`` part of ``turns show``: (JSON, text), from the store or pointing at Cloud Trace."""
    if not trace_id:
        return {"trace_id": None, "spans": []}, "spans: the record has no trace id"
    if in_cloud_trace(settings):
        url = cloud_trace_url(settings.project, trace_id)
        return {"trace_id": trace_id, "cloud_trace_url": url, "spans": []}, f"spans: in Cloud Trace, {url}"
    rows = span_tree(spans_of(store, trace_id))
    return {"trace_id": trace_id, "spans": rows}, f"spans (trace {trace_id}):\n{render_tree(rows)}"
