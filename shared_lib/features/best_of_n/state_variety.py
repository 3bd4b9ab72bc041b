"""How different a Best-of-N run's candidates are from each other (seed 001 §3.2: N candidates
are worth their cost only when they differ).

Over every pair of candidates: the share of pairs whose texts differ (spaces ignored) and the
edit distance of each pair relative to the longer text (0: the same text, 1: nothing in common),
its mean and its minimum. Candidates that are all the same text say the run paid N times for
one answer (Claude's API takes no temperature: the wording line of ``steps._variant`` is what
makes them differ).

>>> v = variety(["田中さんのタスクを作ったウル🐺", "田中さんのタスクを作ったウル🐺", "見積書のタスクを登録したウル！"])
>>> v["pairs"], v["distinct_pair_ratio"], v["distinct_texts"]
(3, 0.6667, 2)
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import Any

# texts longer than this are compared on their first characters (the cost is quadratic)
COMPARED_CHARS = 600


def _normal(text: str) -> str:
    return "".join(text.split())[:COMPARED_CHARS]


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions of one character each)."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def relative_distance(a: str, b: str) -> float:
    """The edit distance over the longer text's length (0.0 for two empty texts)."""
    longest = max(len(a), len(b))
    return edit_distance(a, b) / longest if longest else 0.0


def variety(texts: Sequence[str]) -> dict[str, Any]:
    """The run's variety: pairs compared, the share that differ, the distinct texts, the mean
    and least relative edit distance of the pairs (``None`` with fewer than two candidates)."""
    normal = [_normal(t) for t in texts]
    pairs = list(combinations(normal, 2))
    distances = [relative_distance(a, b) for a, b in pairs]
    return {
        "pairs": len(pairs),
        "distinct_pair_ratio": round(sum(a != b for a, b in pairs) / len(pairs), 4) if pairs else None,
        "distinct_texts": len(set(normal)),
        "mean_edit_distance": round(sum(distances) / len(distances), 4) if distances else None,
        "min_edit_distance": round(min(distances), 4) if distances else None,
    }
