"""The reading of a date/time expression, its error, and the constants the reader shares."""

from __future__ import annotations

import datetime as dt
import unicodedata
from dataclasses import dataclass
from typing import Literal
from zoneinfo import ZoneInfo

from shared_lib.errors import CharterError

JST = ZoneInfo("Asia/Tokyo")
WEEKDAYS = "月火水木金土日"
WORK_START, WORK_END = 9, 18  # working hours 9:00–18:00: a bare 1–7時 is read in the afternoon

Kind = Literal["absolute", "relative", "weekday", "period", "range", "time"]
ErrorCode = Literal["date.unreadable", "date.nonexistent", "time.nonexistent", "date.range_reversed"]


class DateError(CharterError):
    """A value that is not a date expression (``date.unreadable``) or one that names a day or
    time that does not exist (``date.nonexistent``, ``time.nonexistent``, ``date.range_reversed``)."""

    def __init__(self, code: ErrorCode, message: str, *, expression: str = "") -> None:
        super().__init__(message)
        self.code: ErrorCode = code
        self.expression = expression


@dataclass(frozen=True, slots=True)
class Reading:
    """What an expression says, in the given time zone's calendar.

    ``date`` is the day (the first day of a range), ``end_date`` the last day of a range,
    ``time`` the time of day; any of them may be ``None`` (a bare 「15時」 has no date).
    ``is_past``: the whole reading is behind ``now`` (a range when its last day is).
    ``ambiguous`` with ``ambiguity``: the reader chose between readings (a bare 「3時」, a
    year-less date read in another year, 「夕方」, a weekday note that does not match).
    ``expression`` is the part of the text that was read, as written.
    """

    date: dt.date | None
    time: dt.time | None
    end_date: dt.date | None
    is_past: bool
    ambiguous: bool
    ambiguity: str | None
    expression: str
    kind: Kind
    year_said: bool = False  # an absolute date whose year was written

    @property
    def deadline(self) -> dt.date | None:
        """The last day the reading covers (the end of a range, else the date)."""
        return self.end_date or self.date


def fold(text: str) -> str:
    """NFKC character by character where it keeps one character (full-width digits and
    punctuation become ASCII), so positions in the folded text are positions in ``text``."""
    out = []
    for ch in text:
        folded = unicodedata.normalize("NFKC", ch)
        out.append(folded if len(folded) == 1 else ch)
    return "".join(out)
