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

import unicodedata
from dataclasses import dataclass
from functools import lru_cache

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


@lru_cache(maxsize=8192)
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


@dataclass(frozen=True)
class Folded:
    """The folded text and, per folded character, where it came from in the text as typed."""

    text: str
    starts: tuple[int, ...] | None = None  # None: the text is its own folded form
    ends: tuple[int, ...] | None = None

    def source_span(self, start: int, end: int) -> tuple[int, int]:
        """The span of the text as typed that the folded ``[start, end)`` (non-empty) came from."""
        if self.starts is None or self.ends is None:
            return start, end
        return self.starts[start], self.ends[end - 1]


def fold(text: str) -> Folded:
    """``text`` as the detectors read it (see the module doc), with the way back."""
    if text.isascii():
        return Folded(text)
    chars: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    for i, char in enumerate(text):
        for piece in _fold_char(char):
            chars.append(piece)
            starts.append(i)
            ends.append(i + 1)
    _kanji_digits(chars)
    for i in range(1, len(chars) - 1):
        if chars[i] in _BETWEEN_DIGITS and chars[i - 1].isdigit() and chars[i + 1].isdigit():
            chars[i] = _BETWEEN_DIGITS[chars[i]]
    return Folded("".join(chars), tuple(starts), tuple(ends))


def _kanji_digits(chars: list[str]) -> None:
    """Kanji digits as digits where at least ``_KANJI_RUN`` of them (separators between them
    allowed) form one number: a phone number written 〇九〇ー一二三四ー…, never 一 of 一覧."""
    i = 0
    while i < len(chars):
        if chars[i] not in _KANJI_DIGITS:
            i += 1
            continue
        j, digits = i, []
        while j < len(chars) and (
            chars[j] in _KANJI_DIGITS
            or (chars[j] in "-. ー・" and j + 1 < len(chars) and chars[j + 1] in _KANJI_DIGITS)
        ):
            if chars[j] in _KANJI_DIGITS:
                digits.append(j)
            j += 1
        if len(digits) >= _KANJI_RUN:
            for k in digits:
                chars[k] = _KANJI_DIGITS[chars[k]]
        i = j
