"""Firestore's document values in plain Python, for the SQLite store (an embedded peer of
Firestore that must answer queries the same way).

* A type-tagged JSON codec: datetimes (naive ones taken as UTC, as Firestore does), bytes,
  ``Vector`` values (embeddings) and maps of any keys round-trip through ``dumps``/``loads``.
* Firestore's value order and filters, as the emulator answers them: values of different
  types never compare with ``<``/``<=``/``>``/``>=``; types order null < bool < number
  (NaN first) < timestamp < string < bytes < array < vector (shorter first) < map; ``!=`` and ``in`` leave out nulls;
  a filter on a missing field never matches.
* Firestore's ``set(merge=True)``: nested maps merge key by key, an empty map replaces.

>>> from datetime import UTC, datetime
>>> loads(dumps({"at": datetime(2028, 2, 29, tzinfo=UTC)}))["at"].isoformat()
'2028-02-29T00:00:00+00:00'
>>> matches({"n": 3}, "n", ">", "2"), matches({"n": 3}, "n", ">", 2)
(False, True)
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Any

from shared_lib.ports import Doc, Op, Vector

_TAG = "$t"  # a map holding this key is a tagged value; a user map holding it is wrapped
MISSING = object()
INEQUALITIES = ("<", "<=", ">", ">=", "!=")


def _encode(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        return {_TAG: "datetime", "v": aware.isoformat()}
    if isinstance(value, bytes | bytearray):
        return {_TAG: "bytes", "v": base64.b64encode(value).decode("ascii")}
    if isinstance(value, Vector):
        return {_TAG: "vector", "v": [float(x) for x in value]}
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"document keys must be strings, not {type(key).__name__}")
            out[key] = _encode(item)
        return {_TAG: "map", "v": out} if _TAG in out else out
    if isinstance(value, list | tuple):
        return [_encode(item) for item in value]
    raise TypeError(f"cannot store a {type(value).__name__} in a document")


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(item) for item in value]
    if not isinstance(value, dict):
        return value
    match value.get(_TAG):
        case None:
            return {key: _decode(item) for key, item in value.items()}
        case "datetime":
            return datetime.fromisoformat(value["v"])
        case "bytes":
            return base64.b64decode(value["v"])
        case "map":
            return {key: _decode(item) for key, item in value["v"].items()}
        case "vector":
            return Vector(value["v"])
    raise ValueError(f"unknown value tag {value[_TAG]!r}")


def dumps(doc: Doc) -> str:
    """A document as tagged JSON (``loads`` reverses it)."""
    return json.dumps(_encode(doc), ensure_ascii=False, separators=(",", ":"))


def loads(text: str) -> Doc:
    """The document ``dumps`` wrote."""
    doc: Doc = _decode(json.loads(text))
    return doc


def sort_key(value: Any) -> tuple[Any, ...]:
    """Sort key of a value: values of different types fall in Firestore's type order."""
    if value is None:
        return (0,)
    if isinstance(value, bool):
        return (1, value)
    if isinstance(value, int | float):
        return (2, 0, 0) if value != value else (2, 1, value)  # NaN first, and equal to itself
    if isinstance(value, datetime):
        return (3, value if value.tzinfo is not None else value.replace(tzinfo=UTC))
    if isinstance(value, str):
        return (4, value)
    if isinstance(value, bytes | bytearray):
        return (5, bytes(value))
    if isinstance(value, Vector):
        return (8.5, len(value), tuple(value))
    if isinstance(value, list | tuple):
        return (8, tuple(sort_key(item) for item in value))
    if isinstance(value, dict):
        return (9, tuple((k, sort_key(v)) for k, v in sorted(value.items())))
    return (10, repr(value))


def field_value(doc: Doc, field: str) -> Any:
    cur: Any = doc
    for part in field.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return MISSING
        cur = cur[part]
    return cur


def matches(doc: Doc, field: str, op: Op, value: Any) -> bool:
    cur = field_value(doc, field)
    if cur is MISSING:
        return False
    have = sort_key(cur)
    if op == "in":
        return cur is not None and any(have == sort_key(v) for v in value)
    if op == "array_contains":
        return isinstance(cur, list) and any(sort_key(item) == sort_key(value) for item in cur)
    if op == "array_contains_any":
        wanted = [sort_key(v) for v in value]
        return isinstance(cur, list) and any(sort_key(item) in wanted for item in cur)
    want = sort_key(value)
    if op == "==":
        return have == want
    if op == "!=":
        return cur is not None and have != want
    if have[0] != want[0]:  # Firestore compares <, <=, >, >= only within one type
        return False
    match op:
        case "<":
            return have < want
        case "<=":
            return have <= want
        case ">":
            return have > want
        case ">=":
            return have >= want
    raise ValueError(f"unknown operator {op!r}")


def merged(base: Doc, update: Doc) -> Doc:
    """``update`` merged into ``base`` the way Firestore merges: nested maps key by key, an
    empty map replaces (as the emulator does)."""
    out = dict(base)
    for key, value in update.items():
        if isinstance(value, dict) and value and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out
