"""A turn's span waterfall (the dashboard's turn view): where the turn's time went.

``waterfall(spans)`` turns the spans of one trace (``ops.spans.spans_of``) into bars on one
time axis from the turn's first span: one bar a recorded span, and one ``queue`` bar before
each hop's consumer (``layer <name>``, a Pub/Sub delivery) for the time between the end of
the span that published to it and its own start — the message waited in the topic, a cold
instance started, a retry backed off. A consumer that started before its publisher ended
has no queue bar. Bars are in start order (a queue before the layer it waited for, a parent
before its children), each with its offset and duration in ms and as a share of the turn.

Each bar has a ``kind`` — ``hop`` (the ingress request and its publish), ``queue``, ``layer``,
``llm`` (a GenAI ``chat`` span), ``tool`` (``execute_tool``), ``store`` (a store transaction)
or ``other`` — and the ``totals`` say how many ms each kind took (a bar of a kind inside a
bar of the same kind is counted once).
"""

from __future__ import annotations

from typing import Any

from shared_lib.ports import Doc

KINDS = ("hop", "queue", "layer", "llm", "tool", "store", "other")
# The legend the page shows (the dashboard's labels: English, the Japanese beside it).
LEGEND = {
    "hop": "受付 ingress",
    "queue": "待ち queue",
    "layer": "レイヤー layer",
    "llm": "LLM",
    "tool": "ツール tool",
    "store": "保存 store",
    "other": "その他 other",
}


def kind_of(span: Doc) -> str:
    name = str(span.get("name") or "")
    attributes = span.get("attributes") or {}
    if name.startswith("layer "):
        return "layer"
    if name.startswith("ingress"):
        return "hop"
    # a tool's span carries GenAI attributes too (``gen_ai.operation.name`` execute_tool)
    if name.startswith("execute_tool ") or attributes.get("gen_ai.operation.name") == "execute_tool":
        return "tool"
    if name.startswith("chat ") or any(str(k).startswith("gen_ai.") for k in attributes):
        return "llm"
    if "db.system" in attributes or "db.system.name" in attributes or name.endswith(" transaction"):
        return "store"
    return "other"


def _start(span: Doc) -> int:
    return int(span.get("start_ns") or 0)


def _end(span: Doc) -> int:
    return _start(span) + round(float(span.get("duration_ms") or 0.0) * 1e6)


def _ms(ns: int) -> float:
    return round(ns / 1e6, 3)


def _label(span: Doc, kind: str) -> str:
    name = str(span.get("name") or "")
    service = str(span.get("service") or "")
    if kind == "llm":
        return f"LLM {name.removeprefix('chat ')}" + (f" ({service})" if service else "")
    if kind == "tool":
        return f"tool {name.removeprefix('execute_tool ')}"
    return name


def waterfall(spans: list[Doc]) -> dict[str, Any]:
    """The bars, the turn's span (``total_ms``) and the ms each kind took."""
    if not spans:
        return {"total_ms": 0.0, "bars": [], "totals": dict.fromkeys(KINDS, 0.0), "legend": LEGEND}
    by_id = {str(s["span_id"]): s for s in spans}

    def depth_of(span: Doc) -> int:
        seen: set[str] = set()
        parent = span.get("parent_span_id")
        while parent in by_id and parent not in seen:
            seen.add(parent)
            parent = by_id[parent].get("parent_span_id")
        return len(seen)

    t0 = min(_start(s) for s in spans)
    t1 = max(_end(s) for s in spans)
    whole = max(t1 - t0, 1)
    raw: list[tuple[int, int, int, dict[str, Any]]] = []  # (start, order, depth, bar)
    for s in spans:
        kind, d = kind_of(s), depth_of(s)
        parent = by_id.get(str(s.get("parent_span_id")))
        if kind == "layer" and parent is not None and _end(parent) < _start(s):
            layer = str(s["name"]).removeprefix("layer ")
            queue = _bar(
                "queue", f"queue → {layer}", _end(parent), _start(s), t0, whole, d, str(s["span_id"])
            )
            queue["service"] = str(s.get("service") or "")
            raw.append((_end(parent), 0, d, queue))
        bar = _bar(kind, _label(s, kind), _start(s), _end(s), t0, whole, d, str(s["span_id"]))
        bar.update(
            name=str(s.get("name") or ""),
            service=str(s.get("service") or ""),
            parent_span_id=s.get("parent_span_id"),
            status=str(s.get("status") or "UNSET"),
        )
        raw.append((_start(s), 1, d, bar))
    raw.sort(key=lambda r: (r[0], r[1], r[2]))
    bars = [b for *_, b in raw]
    return {"total_ms": _ms(whole), "bars": bars, "totals": _totals(bars), "legend": LEGEND}


def _bar(
    kind: str, label: str, start: int, end: int, t0: int, whole: int, depth: int, sid: str
) -> dict[str, Any]:
    return {
        "kind": kind,
        "label": label,
        "span_id": sid,
        "depth": depth,
        "offset_ms": _ms(start - t0),
        "duration_ms": _ms(end - start),
        "left_pct": round(100 * (start - t0) / whole, 3),
        "width_pct": round(100 * (end - start) / whole, 3),
    }


def _totals(bars: list[dict[str, Any]]) -> dict[str, float]:
    """ms per kind, the union of its bars' intervals (a nested bar of the same kind is not added again)."""
    out: dict[str, float] = {}
    for kind in KINDS:
        spans = sorted((b["offset_ms"], b["offset_ms"] + b["duration_ms"]) for b in bars if b["kind"] == kind)
        total, cur_start, cur_end = 0.0, None, None
        for a, z in spans:
            if cur_end is None or a > cur_end:
                if cur_end is not None and cur_start is not None:
                    total += cur_end - cur_start
                cur_start, cur_end = a, z
            else:
                cur_end = max(cur_end, z)
        if cur_end is not None and cur_start is not None:
            total += cur_end - cur_start
        out[kind] = round(total, 3)
    return out
