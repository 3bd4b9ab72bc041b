"""Cutting a text into overlapping chunks (seed 001 §18.2: 400 tokens, 80 of overlap).

Tokens are estimated without a tokenizer: seed 001 counts 4 characters as a token, which holds
for English; a Japanese character is about one token, so every non-ASCII character counts as a
whole token (conservative: a chunk is never larger than the budget, only sometimes smaller).
Cuts fall on sentence ends (。！？!? and line breaks) where possible; a sentence longer than a
chunk is cut by characters. The next chunk begins with the last sentences of the previous one,
up to the overlap, so a fact that straddles a cut is whole in one of them.

>>> cs = chunk_text("あ。" * 500, size=100, overlap=20)
>>> len(cs), max(len(c) for c in cs), cs[0][-20:] == cs[1][:20]
(13, 100, True)
>>> chunk_text("短い文です。")
['短い文です。']
"""

from __future__ import annotations

import re

CHUNK_TOKENS = 400
OVERLAP_TOKENS = 80
_SENTENCE = re.compile(r"[^。！？!?\n]*(?:[。！？!?]+|\n+|$)")


def estimate_tokens(text: str) -> float:
    return sum(0.25 if ord(c) < 128 else 1.0 for c in text)


def sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE.findall(text) if s.strip()]


def _hard_cut(sentence: str, size: int) -> list[str]:
    """A sentence longer than a chunk, in pieces of at most ``size`` tokens."""
    pieces, cur, used = [], "", 0.0
    for ch in sentence:
        cost = estimate_tokens(ch)
        if used + cost > size and cur:
            pieces.append(cur)
            cur, used = "", 0.0
        cur += ch
        used += cost
    return [*pieces, cur] if cur else pieces


def chunk_text(text: str, *, size: int = CHUNK_TOKENS, overlap: int = OVERLAP_TOKENS) -> list[str]:
    """The chunks of ``text`` (stripped); ``[]`` for a blank text."""
    units = [p for s in sentences(text.strip()) for p in _hard_cut(s, size)]
    chunks: list[str] = []
    cur: list[str] = []
    for unit in units:
        if cur and estimate_tokens("".join(cur) + unit) > size:
            chunks.append("".join(cur).strip())
            cur = _tail(cur, overlap, room=size - estimate_tokens(unit))
        cur.append(unit)
    if cur:
        chunks.append("".join(cur).strip())
    return chunks


def _tail(units: list[str], overlap: int, *, room: float) -> list[str]:
    """The last units of a chunk worth at most ``overlap`` tokens (and fitting ``room``)."""
    kept: list[str] = []
    used = 0.0
    for unit in reversed(units):
        cost = estimate_tokens(unit)
        if used + cost > min(overlap, room):
            break
        kept.insert(0, unit)
        used += cost
    return kept
