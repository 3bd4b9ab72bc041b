"""Japanese-aware keyword terms and BM25 (seed 001 §18.1).

A text is read NFKC-normalised and lower-cased. ASCII letters and digits make words; a run of
kanji, of hiragana or of katakana (each script apart, so a particle never glues onto the noun
before it) makes its character bigrams, and a run of one kanji the kanji itself (「税」 is a word;
a lone kana is a particle). No dictionary, so a compound is found by its parts in any order:
「経費精算」 and 「精算の経費」 share 「経費」 and 「精算」.

>>> terms("経費精算は3日以内！Slack で")
['経費', '費精', '精算', '3', '日以', '以内', 'slack']
>>> round(bm25({"経費": 1}, 4, {"経費": 1}, n_docs=10, avg_length=4.0), 3)
1.992
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections.abc import Mapping, Sequence

K1, B = 1.2, 0.75  # the usual BM25 constants (Robertson & Zaragoza)
MAX_QUERY_TERMS = 16  # a query reads at most this many terms' candidates
MAX_TERM_CHARS = 40  # a longer "word" is cut: no unbounded values in an indexed array
BUCKETS = 32  # document frequencies live in this many documents per organisation

_RUN = re.compile(
    r"(?P<word>[0-9a-z]+)"
    r"|(?P<kanji>[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff々〆]+)"
    r"|(?P<hira>[\u3041-\u309f]+)"
    r"|(?P<kata>[\u30a1-\u30ffー]+)"
)


def terms(text: str) -> list[str]:
    """Every term of ``text`` in order, repeats kept (their count is the term frequency)."""
    out: list[str] = []
    for m in _RUN.finditer(unicodedata.normalize("NFKC", text).lower()):
        run = m.group()
        if m.lastgroup == "word":
            out.append(run[:MAX_TERM_CHARS])
        elif len(run) >= 2:
            out.extend(run[i : i + 2] for i in range(len(run) - 1))
        elif m.lastgroup == "kanji":
            out.append(run)
    return out


def term_counts(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for t in terms(text):
        counts[t] = counts.get(t, 0) + 1
    return counts


def query_terms(text: str) -> list[str]:
    """The distinct terms of a query in order of first appearance (not yet bounded: the
    search keeps the rarest ``MAX_QUERY_TERMS`` once it knows their frequencies)."""
    return list(dict.fromkeys(terms(text)))


def bucket(term: str) -> int:
    """Which of the organisation's ``BUCKETS`` frequency documents holds ``term``."""
    return int.from_bytes(hashlib.sha256(term.encode()).digest()[:4], "big") % BUCKETS


def idf(df: int, n_docs: int) -> float:
    """BM25's idf with the +1 inside the log, so a term in most documents still counts a little."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def bm25(
    query: Mapping[str, int] | Sequence[str],
    length: int,
    tf: Mapping[str, int],
    *,
    n_docs: int,
    avg_length: float,
    df: Mapping[str, int] | None = None,
) -> float:
    """BM25 of one document (its term counts ``tf`` and ``length``) for the query's terms;
    ``df`` defaults to 1 per term (a tiny collection)."""
    norm = K1 * (1 - B + B * length / avg_length) if avg_length > 0 else K1
    total = 0.0
    for term in query:
        f = tf.get(term, 0)
        if f:
            d = (df or {}).get(term, 1)
            total += idf(d, max(n_docs, d)) * f * (K1 + 1) / (f + norm)
    return total
