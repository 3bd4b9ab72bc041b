"""The named patterns a policy is made of: a regex with the scopes it reads (``NamedPattern``),
a secret that never leaves (``NgPattern``), and the older word-and-window rule for a
confidential word (``ConfidentialPattern``; the packaged policy decides by the disclosure
grammar instead, ``disclosure.py``, and keeps this for policies that name their own words).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from shared_lib.policy.values import checked_regexes

TextScope = Literal["reasoning", "confirmation", "text", "parameters"]
ALL_SCOPES: tuple[TextScope, ...] = ("reasoning", "confirmation", "text", "parameters")


class _Cfg(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NamedPattern(_Cfg):
    name: Annotated[str, Field(min_length=1)]
    pattern: Annotated[str, Field(min_length=1)]
    scopes: list[TextScope] = Field(default_factory=lambda: list(ALL_SCOPES))
    ignore_case: bool = True
    # labels of the sanitizer's placeholders (``[CARD_1]``, ``[API_KEY]``) that stand for this
    # kind of value: the LLM arm only ever sees the masked input, so its parameters carry the
    # placeholder, and the executor would put the real value back. A placeholder is a match in
    # parameters only: a reply naming one is shown in words, it sends nothing.
    masked_as: list[Annotated[str, Field(pattern=r"^[A-Z][A-Z_]*$")]] = Field(default_factory=list)

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        checked_regexes([value])
        return value

    def search(self, text: str) -> bool:
        return self.find(text) is not None

    def masked_in(self, text: str) -> bool:
        """Whether ``text`` holds a placeholder of this kind of value (``[CARD_1]``, ``[CARD]``)."""
        return any(re.search(rf"\[{label}(?:_\d+)?\]", text) for label in self.masked_as)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        """Every match of the pattern in ``text``, in order."""
        return re.finditer(self.pattern, text, self._flags)

    def find(self, text: str) -> str | None:
        """The first text the pattern matches, or ``None``."""
        m = re.search(self.pattern, text, self._flags)
        return m.group(0) if m else None

    @property
    def _flags(self) -> re.RegexFlag:
        return re.IGNORECASE if self.ignore_case else re.NOFLAG


_SENTENCE_END = re.compile(r"[。．！？!?\n]")


class ConfidentialPattern(NamedPattern):
    """A confidential word (seed 000 §4.4.5) that blocks only where it would disclose data.

    The word alone is a mention (「評価面談の日程」「給与明細の見方」); it is a disclosure when
    one of its ``disclosure`` markers (named regexes of ``Security.disclosure_markers``: an
    amount, a grade, a deal's date) matches within ``window`` characters of the word, inside
    the word's own sentence (「評価はB」「年収は600万円」). Without markers the word alone
    blocks. What the user reads for it is ``display.patterns`` of the policy, like every pattern.

    >>> p = ConfidentialPattern(name="salary", pattern="給与", disclosure=["amount"])
    >>> markers = {"amount": r"\\d+万?円"}
    >>> p.disclosure_in("給与明細の見方です。交通費は500円です", markers), p.disclosure_in("給与は30万円です", markers)
    (None, '給与は30万円です')
    """

    disclosure: list[str] = Field(default_factory=list)
    window: Annotated[int, Field(ge=1, le=200)] = 24

    def disclosure_in(self, text: str, markers: Mapping[str, str]) -> str | None:
        """The disclosing stretch of ``text`` around the word (the word itself without markers)."""
        for m in re.finditer(self.pattern, text, self._flags):
            if not self.disclosure:
                return m.group(0)
            around = _around(text, m.start(), m.end(), self.window)
            if any(re.search(markers[name], around, self._flags) for name in self.disclosure):
                return around
        return None


def _around(text: str, start: int, end: int, window: int) -> str:
    """``window`` characters either side of ``text[start:end]``, cut at the sentence's ends."""
    before = [m.end() for m in _SENTENCE_END.finditer(text, max(0, start - window), start)]
    after = _SENTENCE_END.search(text, end, end + window)
    lo = before[-1] if before else max(0, start - window)
    hi = after.start() if after else min(len(text), end + window)
    return text[lo:hi]


class NgPattern(NamedPattern):
    """A secret that never leaves: its own value shape (``pattern``), or a relation of the
    disclosure grammar (``relation``: a credential word bound to a credential-like value), or both."""

    pattern: str = ""
    relation: str | None = None

    @model_validator(mode="after")
    def _decides(self) -> NgPattern:
        if not self.pattern and not self.relation:
            raise ValueError(f"ng pattern {self.name!r} needs a pattern or a relation")
        return self

    def find(self, text: str) -> str | None:
        return super().find(text) if self.pattern else None
