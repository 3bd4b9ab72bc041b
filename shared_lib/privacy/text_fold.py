"""Text as a detector reads it, and the invisible characters no one should store.

``fold`` gives the form the sanitizer's rules run on: NFKC (full-width digits, letters and
``＠ ． － ＋ （ ）`` become ASCII, the ideographic space a space), every dash a ``-``, every
space a `` ``, the characters that show nothing (zero-width, bidi controls, variation
selectors, the keycap mark) left out, and, between digits only, 「ー」 as ``-`` and 「・」
as ``.``; a run of at least four kanji digits (〇一二…九) reads as digits. It keeps, for every
folded character, the span of the text as typed it came from, so a match found in the folded
form replaces the ORIGINAL span and the rest of the text stays as the user wrote it.

>>> f = fold("電話は０９０ー１２３４ー５６７８です")
>>> f.text
'電話は090-1234-5678です'
>>> f.source_span(3, 16)
(3, 16)
>>> fold("a\u200b@b").text, fold("a\u200b@b").source_span(1, 2)
('a@b', (2, 3))

``strip_invisible`` is what the inbound boundary applies to a message (``channels.base``): the
bidi controls (U+202A–U+202E, U+2066–U+2069, U+200E/U+200F, U+061C) and the zero-width and
other blank formatting characters go, so a reversed or split value is never stored nor shown
back; a zero-width joiner between two emoji (👨‍👩‍👧) and the tag characters of a flag (🏴) stay.

>>> strip_invisible("注文\u202eABC\u202c 👨\u200d👩 0\u200b90")
'注文ABC 👨\u200d👩 090'
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cached_property

ZWJ = "\u200d"
_BLACK_FLAG = 0x1F3F4
_TAGS = range(0xE0000, 0xE0080)
INVISIBLE = frozenset(
    [
        *(0x00AD, 0x034F, 0x061C, 0x115F, 0x1160, 0x180E, 0x3164, 0xFEFF, 0xFFA0),
        *range(0x200B, 0x2010),  # zero-width space, non-joiner, joiner, LRM, RLM
        *range(0x202A, 0x202F),  # bidi embeddings and overrides
        *range(0x2060, 0x2070),  # word joiner, invisible operators, bidi isolates, deprecated
        *range(0xFFF9, 0xFFFC),  # interlinear annotation
        *_TAGS,
    ]
)
"""Characters that show nothing: left out of what is stored (``strip_invisible``) and of what
a detector reads (``fold``)."""
# Shown nowhere by themselves, but part of how an emoji looks: out of the folded form only.
_PRESENTATION = frozenset([*range(0xFE00, 0xFE10), 0x20E3, *range(0xE0100, 0xE01F0)])
_DASHES = frozenset("‐‑‒–—―−⁃˗﹘﹣－")
_BETWEEN_DIGITS = {"ー": "-", "・": "."}
_KANJI_DIGITS = {c: str(i) for i, c in enumerate("〇一二三四五六七八九")} | {"零": "0"}
_KANJI_RUN = 4


def _pictographic(char: str) -> bool:
    code = ord(char)
    return code >= 0x1F000 or 0x2300 <= code <= 0x27BF or 0x2B00 <= code <= 0x2BFF or code == 0xFE0F


def strip_invisible(text: str) -> str:
    """``text`` without the characters of ``INVISIBLE`` but a ZWJ inside an emoji sequence and
    a flag's tags."""
    if text.isascii():
        return text
    kept: list[str] = []
    for i, char in enumerate(text):
        code = ord(char)
        if code not in INVISIBLE:
            kept.append(char)
        elif char == ZWJ and kept and _pictographic(kept[-1]) and i + 1 < len(text):
            if _pictographic(text[i + 1]):
                kept.append(char)
        elif code in _TAGS and kept and (ord(kept[-1]) == _BLACK_FLAG or ord(kept[-1]) in _TAGS):
            kept.append(char)
    return "".join(kept)


def _fold_char(char: str) -> str:
    code = ord(char)
    if code in INVISIBLE or code in _PRESENTATION:
        return ""
    folded = unicodedata.normalize("NFKC", char)
    if folded in _DASHES:
        return "-"
    if len(folded) == 1 and folded.isspace() and folded not in "\n\t\r":
        return " "
    return folded


class _FoldTable(dict[int, str]):
    """Code point -> its folded form, learnt on first sight (``str.translate`` reads it)."""

    def __missing__(self, code: int) -> str:
        if len(self) > _TABLE_LIMIT:
            self.clear()
        piece = self[code] = _fold_char(chr(code))
        return piece


_TABLE_LIMIT = 100_000
_TABLE = _FoldTable()
_KANJI_NUMBER = re.compile(
    rf"[{''.join(_KANJI_DIGITS)}](?:[-. ー・]?[{''.join(_KANJI_DIGITS)}]){{{_KANJI_RUN - 1},}}"
)
_KANJI_AS_DIGITS = str.maketrans(_KANJI_DIGITS)
_SEPARATOR_BETWEEN_DIGITS = re.compile(rf"(?<=\d)[{''.join(_BETWEEN_DIGITS)}](?=\d)")


@dataclass(frozen=True)
class Folded:
    """The folded text and the way back to the text as typed (``source``; ``None`` when the
    text is its own folded form)."""

    text: str
    source: str | None = None

    def source_span(self, start: int, end: int) -> tuple[int, int]:
        """The span of the text as typed that the folded ``[start, end)`` (non-empty) came from."""
        if self.source is None:
            return start, end
        starts, ends = self._offsets
        return starts[start], ends[end - 1]

    @cached_property
    def _offsets(self) -> tuple[list[int], list[int]]:
        # Every later step of ``fold`` keeps the length, so the pieces of each character say
        # where every folded character came from.
        starts: list[int] = []
        ends: list[int] = []
        for i, char in enumerate(self.source or ""):
            n = len(_TABLE[ord(char)])
            starts.extend([i] * n)
            ends.extend([i + 1] * n)
        return starts, ends


def fold(text: str) -> Folded:
    """``text`` as the detectors read it (see the module doc), with the way back."""
    if text.isascii():
        return Folded(text)
    folded = text.translate(_TABLE)
    # a run of kanji digits is a number (〇九〇ー一二三四…), one 一 in 一覧 is not
    folded = _KANJI_NUMBER.sub(lambda m: m.group(0).translate(_KANJI_AS_DIGITS), folded)
    folded = _SEPARATOR_BETWEEN_DIGITS.sub(lambda m: _BETWEEN_DIGITS[m.group(0)], folded)
    return Folded(folded) if folded == text else Folded(folded, text)
