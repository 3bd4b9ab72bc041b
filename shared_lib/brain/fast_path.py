"""The fast path (seed 000 §14.2.2): trivial greetings answered from the persona's catalogue
without an LLM call. Patterns are data (``brain.json`` ``fast_path.patterns``: normalised
message -> persona message key); only a whole message matches, never a part of one.

>>> from shared_lib.brain.config import load_brain_config
>>> match("おはようございます！🐺", load_brain_config())
'fast_good_morning'
>>> match("おはようございます、田中さんにタスクをお願い", load_brain_config()) is None
True
"""

from __future__ import annotations

import unicodedata

from shared_lib.brain.config import BrainConfig, FastPath

_EDGE_CATEGORIES = ("P", "S", "Z", "C")  # punctuation, symbols (emoji), spaces, controls
# what an emoji is written with besides its symbol: the variation selectors (☀️ is U+2600 U+FE0F)
# and the keycap's enclosing mark; marks, not symbols, so the categories alone keep them
_EMOJI_MARKS = frozenset(chr(c) for c in (*range(0xFE00, 0xFE10), 0x20E3))


def _edge(ch: str) -> bool:
    return unicodedata.category(ch)[0] in _EDGE_CATEGORIES or ch in _EMOJI_MARKS


def normalise(text: str) -> str:
    """NFKC, lower case, without punctuation, emoji or spaces at either end.

    >>> normalise("おはようございます〜☀️"), normalise("お疲れ様です！☺️✌️"), normalise("❤️ありがとう")
    ('おはようございます', 'お疲れ様です', 'ありがとう')
    """
    norm = unicodedata.normalize("NFKC", text).strip().lower()
    start, end = 0, len(norm)
    while start < end and _edge(norm[start]):
        start += 1
    while end > start and (_edge(norm[end - 1]) or norm[end - 1] in "〜~ー"):
        end -= 1
    return norm[start:end]


def match(text: str, cfg: BrainConfig) -> str | None:
    """The persona message key answering ``text``, or ``None`` (the LLM is needed)."""
    norm = normalise(text)
    if not norm:
        return None
    return _table(cfg.fast_path).get(norm)


# the normalised patterns of the configuration in use (its frozen section, the last one asked):
# a turn asks three times (the router, the brain, its shadow), each normalising every pattern
_held: tuple[FastPath, dict[str, str]] | None = None


def _table(section: FastPath) -> dict[str, str]:
    global _held
    held = _held
    if held is None or held[0] is not section:
        held = _held = (section, {normalise(k): v for k, v in section.patterns.items()})
    return held[1]
