"""Exact nearest-neighbour ranking for the embedded stores (Firestore ranks on its own
vector index). Cosine distance, as Firestore's ``DistanceMeasure.COSINE``: 1 - cos, so
0 is the same direction and 2 the opposite.

>>> from shared_lib.ports import Vector
>>> round(cosine_distance(Vector((1.0, 0.0)), Vector((0.0, 1.0))), 6)
1.0
>>> nearest([("a", {"e": [1.0, 0.0]}), ("b", {"e": [0.6, 0.8]}), ("c", {})], "e", Vector((0.0, 1.0)), 5)[0][0]
'b'
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from shared_lib.ports import Doc, Vector


def cosine_distance(a: Sequence[float], b: Sequence[float]) -> float:
    if len(a) != len(b):
        raise ValueError(f"vectors of {len(a)} and {len(b)} dimensions cannot be compared")
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return 1.0 - dot / norm if norm else 1.0


def _field(doc: Doc, field: str) -> Any:
    cur: Any = doc
    for part in field.split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def nearest(
    docs: Iterable[tuple[str, Doc]], field: str, vector: Vector, limit: int
) -> list[tuple[str, Doc, float]]:
    """The ``limit`` documents nearest ``vector`` (ties by id); documents without a vector of
    the same dimensions in ``field`` are skipped."""
    ranked = []
    for doc_id, doc in docs:
        value = _field(doc, field)
        if isinstance(value, (list, tuple)) and len(value) == len(vector) and value:
            ranked.append((cosine_distance(vector, value), doc_id, doc))
    ranked.sort(key=lambda item: (item[0], item[1]))
    return [(doc_id, doc, distance) for distance, doc_id, doc in ranked[: max(limit, 0)]]
