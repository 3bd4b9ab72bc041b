"""Keyword matching for Japanese and English text (memory, knowledge, task lookup).

Runs of kanji/kana become character bigrams (Japanese has no spaces); ASCII words stay
whole. A document scores by how many of the query's terms it contains; fixed logic, no
model involved.

>>> score(terms("見積書のタスク"), "見積書を作成する")
2
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uff66-\uff9f々ー]+")
_WORD = re.compile(r"[a-z0-9]{2,}")
# particles and filler that say nothing about *which* thing is meant
_STOP = {
    "タスク",
    "して",
    "した",
    "する",
    "について",
    "こと",
    "もの",
    "さっき",
    "完了",
    "削除",
    "教えて",
    "覚えて",
    "ください",
    "お願い",
}
_STOP_BIGRAMS = {
    "して",
    "した",
    "する",
    "ます",
    "です",
    "ない",
    "こと",
    "もの",
    "てく",
    "くだ",
    "ださ",
    "さい",
}


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def terms(query: str) -> set[str]:
    text = _norm(query)
    for word in _STOP:
        text = text.replace(word, " ")
    out = set(_WORD.findall(text))
    for run in _CJK_RUN.findall(text):
        if len(run) == 1:
            continue
        out |= {run[i : i + 2] for i in range(len(run) - 1)} - _STOP_BIGRAMS
    return out


def score(query_terms: Iterable[str], text: str) -> int:
    haystack = _norm(text)
    return sum(1 for t in query_terms if t in haystack)


def best_matches(query: str, items: list[tuple[str, str]], *, minimum: int = 1) -> list[str]:
    """Keys of the items whose text scores highest (ties kept: the caller asks which one)."""
    wanted = terms(query)
    if not wanted:
        return []
    scored = [(score(wanted, text), key) for key, text in items]
    top = max((s for s, _ in scored), default=0)
    if top < minimum:
        return []
    return [key for s, key in scored if s == top]
