"""A document's copy, made as fast as a document allows.

A store that lives in the process (``memory_store``) and the per-stage and per-process views
over any store (``prefetched``, ``doc_cache``) hand out copies, so that a caller changing what
it read never changes what the store holds. ``copy.deepcopy`` pays for generality a document
never needs (its memo of shared objects, its dispatch on every value's type): a document is a
tree of dicts and lists whose leaves are immutable (strings, numbers, booleans, ``None``,
bytes, datetimes). ``copy_doc`` copies that tree and shares the leaves; any other value (a set,
a tuple, an object of a test's) falls back to ``deepcopy``. About four times faster on the
documents of a turn, which is most of what the in-process store costs a turn.

>>> from datetime import UTC, datetime
>>> doc = {"a": [1, {"b": "x"}], "at": datetime(2026, 11, 28, tzinfo=UTC), "tags": {"k"}}
>>> c = copy_doc(doc)
>>> c == doc, c["a"] is doc["a"], c["a"][1] is doc["a"][1], c["at"] is doc["at"], c["tags"] is doc["tags"]
(True, False, False, True, False)
"""

from __future__ import annotations

import copy
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import TypeVar

T = TypeVar("T")
_LEAVES = frozenset({str, int, float, bool, type(None), bytes, datetime, date, time, timedelta, Decimal})


def copy_doc(value: T) -> T:
    """``value`` copied: its dicts and lists new, its immutable leaves shared."""
    kind = type(value)
    # a leaf is shared where it stands, without a call of its own (most values are leaves)
    if kind is dict:
        return {k: v if type(v) in _LEAVES else copy_doc(v) for k, v in value.items()}  # type: ignore[attr-defined,return-value]
    if kind is list:
        return [v if type(v) in _LEAVES else copy_doc(v) for v in value]  # type: ignore[attr-defined,return-value]
    if kind in _LEAVES:
        return value
    return copy.deepcopy(value)
