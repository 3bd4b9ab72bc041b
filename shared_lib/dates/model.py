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
# From this hour a bare weekday equal to today's (「月曜」 on a Monday night) is next week's.
EVENING_HOUR = WORK_END
# A year-less date read a year ahead although it passed less than this many days ago (「11/20」 on
# 11/24 → next year's) is in doubt: the guardian asks before anything is done with it.
RECENT_PAST_DAYS = 90

Kind = Literal["absolute", "relative", "weekday", "period", "range", "time"]
# Why a reading needs the user's word before it is acted on (the guardian asks, priority 7):
# ``weekday``: the weekday written beside the date is not that date's; ``next_year``: a year-less
# date recently past was read as next year's.
Doubt = Literal["weekday", "next_year"]
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
    ``due``: the day a deadline means when it is not the last day of the range (「今週末」 is
    Saturday–Sunday as an event, due Friday as a deadline). ``doubt``: why the user must
    confirm the reading before anything is done with it (``Doubt``), else ``None``.
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
    due: dt.date | None = None
    doubt: Doubt | None = None

    @property
    def deadline(self) -> dt.date | None:
        """The day a deadline means: ``due`` when the expression has one, else the last day the
        reading covers (the end of a range, else the date). Without a time it is the end of
        that day (「今日中」 is today, due by its end)."""
        return self.due or self.end_date or self.date


# a number written in kanji, 1–99: 「三日以内」「一週間後」「十二月三日」「二十日」
KANJI_NUMBER = r"(?:[一二三四五六七八九]?十[一二三四五六七八九]?|[一二三四五六七八九])"
_KANJI_DIGITS = "〇一二三四五六七八九"


def number(said: str) -> int:
    """「12」「十二」「二十五」「三」 → 12, 12, 25, 3."""
    if said.isdigit():
        return int(said)
    tens, ten, ones = said.partition("十")
    if not ten:
        return _KANJI_DIGITS.index(said)
    return (_KANJI_DIGITS.index(tens) if tens else 1) * 10 + (_KANJI_DIGITS.index(ones) if ones else 0)


def fold(text: str) -> str:
    """NFKC character by character where it keeps one character (full-width digits and
    punctuation become ASCII), so positions in the folded text are positions in ``text``."""
    out = []
    for ch in text:
        folded = unicodedata.normalize("NFKC", ch)
        out.append(folded if len(folded) == 1 else ch)
    return "".join(out)
