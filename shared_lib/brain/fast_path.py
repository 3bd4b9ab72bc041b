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

from shared_lib.brain.config import BrainConfig

_EDGE_CATEGORIES = ("P", "S", "Z", "C")  # punctuation, symbols (emoji), spaces, controls


def normalise(text: str) -> str:
    """NFKC, lower case, without punctuation, emoji or spaces at either end."""
    norm = unicodedata.normalize("NFKC", text).strip().lower()
    start, end = 0, len(norm)
    while start < end and unicodedata.category(norm[start])[0] in _EDGE_CATEGORIES:
        start += 1
    while end > start and (
        unicodedata.category(norm[end - 1])[0] in _EDGE_CATEGORIES or norm[end - 1] in "〜~ー"
    ):
        end -= 1
    return norm[start:end]


def match(text: str, cfg: BrainConfig) -> str | None:
    """The persona message key answering ``text``, or ``None`` (the LLM is needed)."""
    norm = normalise(text)
    if not norm:
        return None
    table = {normalise(k): v for k, v in cfg.fast_path.patterns.items()}
    return table.get(norm)
