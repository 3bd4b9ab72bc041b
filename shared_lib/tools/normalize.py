"""Fixed-logic normalisation of the LLM's candidate values (seed 000 §4.4.3, §8 4.2).

Dates and times are read by the one reader, ``shared_lib.dates``, on the *whole* value, in
Japan time relative to the turn's clock: 「今日」「明日」「来週金曜」「月末」「3日後」「今週中」
「週明け」 and explicit dates (``2026-03-05``, ``3/5``, ``3月5日``) all become
``YYYY-MM-DD`` (a range, 「3/5〜3/7」 or 「下旬」, gives its last day: these are deadlines;
「今週末」 is due Friday, 「今日中」「金曜中」「EOD」 that day; ``normalize_deadline`` also keeps a
time the expression says: 「明日の朝イチ」 is 09:00).
A deadline in the past or a date that does not exist is an input error, never silently
moved. Times become ``HH:MM`` (「3時半」 is 15:30 in working hours; see ``dates.times``).

>>> from datetime import datetime, UTC
>>> now = datetime(2026, 1, 28, 3, 0, tzinfo=UTC)   # Wednesday 12:00 in Tokyo
>>> normalize_date("来週金曜", now)
'2026-02-06'
>>> normalize_date("月末", now)
'2026-01-31'
"""

from __future__ import annotations

import re
import unicodedata
from datetime import date, datetime
from typing import Annotated

from pydantic import Field

from shared_lib.dates import JST, WEEKDAYS, DateError, display_date, read_or_error
from shared_lib.tools.registry import ToolInputError

__all__ = [
    "JST",
    "PAST_DATE",
    "WEEKDAYS",
    "DocId",
    "clean_text",
    "normalize_date",
    "normalize_deadline",
    "normalize_time",
    "today_jst",
]

# The guardian's reason code for a date in the past (``policy.reasons``): when the user answered
# 「はい」 to it, the handler takes the date as said (``ToolContext.confirmed``).
PAST_DATE = "date.past"

# Ids the LLM may pass (task, goal, memory, user, department): never a path.
DocId = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_\-]+$")]
_ANY_DAY = datetime(2000, 1, 3, 12, tzinfo=JST)  # a time alone does not depend on the day


def today_jst(now: datetime) -> date:
    return now.astimezone(JST).date()


def normalize_deadline(
    expr: str | None, now: datetime, *, field: str = "limit_date", allow_past: bool = False
) -> tuple[str | None, str | None]:
    """``(YYYY-MM-DD, HH:MM or None)``: the day a deadline expression means (「今週末」 is due
    Friday, 「今日中」 today) and the time it says (「明日の朝イチ」 09:00); ``(None, None)``
    for no value. The guardian asks about a value it cannot read before the executor runs;
    reaching here unread (a direct call) is an input error."""
    if expr is None or not expr.strip():
        return None, None
    said = expr.strip()
    try:
        reading = read_or_error(said, now, JST, whole=True)
    except DateError as exc:
        if exc.code == "date.unreadable":
            raise ToolInputError(
                f"日付「{said}」を解釈できません（例: 明日、来週金曜、3/5）",
                key="date_unreadable",
                field=field,
                said=said,
            ) from exc
        raise ToolInputError(f"{exc}（「{said}」）", key="date_invalid", field=field, said=said) from exc
    result = reading.deadline
    if result is None:
        raise ToolInputError(
            f"日付「{said}」を解釈できません（例: 明日、来週金曜、3/5）",
            key="date_unreadable",
            field=field,
            said=said,
        )
    today = today_jst(now)
    if result < today and not allow_past:
        shown = display_date(result, today=today)
        raise ToolInputError(
            f"期限「{said}」は{shown}で、過去の日付です", key="date_past", field=field, said=said, shown=shown
        )
    at = reading.time.strftime("%H:%M") if reading.time and result == (reading.date or result) else None
    return result.isoformat(), at


def normalize_date(
    expr: str | None, now: datetime, *, field: str = "limit_date", allow_past: bool = False
) -> str | None:
    """A Japanese or explicit date expression to ``YYYY-MM-DD`` (Japan time); ``None`` stays ``None``."""
    return normalize_deadline(expr, now, field=field, allow_past=allow_past)[0]


def normalize_time(expr: str | None, *, field: str = "limit_time") -> str | None:
    """``15:30``, ``15時半``, ``午後3時``, ``夕方`` to ``HH:MM``; ``None`` stays ``None``."""
    if expr is None or not expr.strip():
        return None
    said = expr.strip()
    try:
        reading = read_or_error(said, _ANY_DAY, JST, whole=True)
    except DateError as exc:
        if exc.code == "time.nonexistent":
            raise ToolInputError(
                f"存在しない時刻です: {said}", key="time_nonexistent", field=field, said=said
            ) from exc
        raise ToolInputError(
            f"時刻「{said}」を解釈できません（例: 15:00）", key="time_unreadable", field=field, said=said
        ) from exc
    if reading.time is None:
        raise ToolInputError(
            f"時刻「{said}」を解釈できません（例: 15:00）", key="time_unreadable", field=field, said=said
        )
    return reading.time.strftime("%H:%M")


def clean_text(value: str) -> str:
    """NFKC, trimmed, runs of blanks collapsed (line breaks kept)."""
    text = unicodedata.normalize("NFKC", value)
    lines = [re.sub(r"[ \t\u3000]+", " ", line).strip() for line in text.splitlines()]
    return "\n".join(line for line in lines if line).strip()
