"""Fixed-logic normalisation of the LLM's candidate values (seed 000 §4.4.3, §8 4.2).

Dates are read in Japan time relative to the turn's clock: 「今日」「明日」「明後日」
「来週金曜」「月末」「3日後」 and explicit dates (``2026-03-05``, ``3/5``, ``3月5日``) all
become ``YYYY-MM-DD``; a deadline in the past or a date that does not exist is an input
error, never silently moved. Times become ``HH:MM``.

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
from datetime import date, datetime, timedelta
from typing import Annotated
from zoneinfo import ZoneInfo

from pydantic import Field

from shared_lib.tools.registry import ToolInputError

JST = ZoneInfo("Asia/Tokyo")
WEEKDAYS = "月火水木金土日"
# Ids the LLM may pass (task, goal, memory, user, department): never a path.
DocId = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_\-]+$")]

_RELATIVE = {
    "今日": 0,
    "本日": 0,
    "きょう": 0,
    "today": 0,
    "明日": 1,
    "あした": 1,
    "あす": 1,
    "tomorrow": 1,
    "明後日": 2,
    "あさって": 2,
    "明々後日": 3,
    "明明後日": 3,
    "しあさって": 3,
}
_SUFFIXES = ("までに", "まで", "中に", "中", "に")
_WEEKDAY_NOTE = re.compile(r"[（(][月火水木金土日](曜日?)?[)）]")


def today_jst(now: datetime) -> date:
    return now.astimezone(JST).date()


def _last_day(year: int, month: int) -> date:
    nxt = date(year + (month == 12), month % 12 + 1, 1)
    return nxt - timedelta(days=1)


def _clean(expr: str) -> str:
    text = unicodedata.normalize("NFKC", expr).strip().lower().replace(" ", "")
    text = _WEEKDAY_NOTE.sub("", text)
    for suffix in _SUFFIXES:
        if text.endswith(suffix) and len(text) > len(suffix):
            text = text[: -len(suffix)]
            break
    return text


def _checked(y: int, m: int, d: int, field: str) -> date:
    try:
        return date(y, m, d)
    except ValueError as exc:
        raise ToolInputError(f"存在しない日付です: {y}-{m:02d}-{d:02d}", field=field) from exc


def _relative(text: str, today: date) -> date | None:
    if text in _RELATIVE:
        return today + timedelta(days=_RELATIVE[text])
    if m := re.fullmatch(r"(\d{1,3})日後", text):
        return today + timedelta(days=int(m.group(1)))
    if m := re.fullmatch(r"(\d{1,2})週間後", text):
        return today + timedelta(weeks=int(m.group(1)))
    if text in ("月末", "今月末"):
        return _last_day(today.year, today.month)
    if text == "来月末":
        nxt = _last_day(today.year, today.month) + timedelta(days=1)
        return _last_day(nxt.year, nxt.month)
    if m := re.fullmatch(r"(今週|来週|再来週)?の?([月火水木金土日])(曜日?)?", text):
        offset = {"今週": 0, None: 0, "来週": 7, "再来週": 14}[m.group(1)]
        monday = today - timedelta(days=today.weekday())
        target = monday + timedelta(days=WEEKDAYS.index(m.group(2)) + offset)
        if m.group(1) is None and target < today:  # a bare weekday means the next one
            target += timedelta(days=7)
        return target
    return None


def _explicit(text: str, today: date, field: str) -> date | None:
    if m := re.fullmatch(r"(\d{4})[-/年.](\d{1,2})[-/月.](\d{1,2})日?", text):
        return _checked(int(m.group(1)), int(m.group(2)), int(m.group(3)), field)
    if m := re.fullmatch(r"(\d{1,2})[/月](\d{1,2})日?", text):
        candidate = _checked(today.year, int(m.group(1)), int(m.group(2)), field)
        # a month/day without a year that has passed means next year's
        return (
            candidate
            if candidate >= today
            else _checked(today.year + 1, candidate.month, candidate.day, field)
        )
    if m := re.fullmatch(r"(今月|来月)?(\d{1,2})日", text):
        year, month = today.year, today.month
        if m.group(1) == "来月" or (m.group(1) is None and int(m.group(2)) < today.day):
            year, month = (year + 1, 1) if month == 12 else (year, month + 1)
        return _checked(year, month, int(m.group(2)), field)
    return None


def normalize_date(
    expr: str | None, now: datetime, *, field: str = "limit_date", allow_past: bool = False
) -> str | None:
    """A Japanese or explicit date expression to ``YYYY-MM-DD`` (Japan time); ``None`` stays ``None``."""
    if expr is None or not expr.strip():
        return None
    text = _clean(expr)
    today = today_jst(now)
    result = _relative(text, today) or _explicit(text, today, field)
    if result is None:
        raise ToolInputError(
            f"日付「{expr.strip()}」を解釈できません（例: 明日、来週金曜、3/5）", field=field
        )
    if result < today and not allow_past:
        raise ToolInputError(f"期限 {result.isoformat()} は過去の日付です", field=field)
    return result.isoformat()


def normalize_time(expr: str | None, *, field: str = "limit_time") -> str | None:
    """``15:30``, ``15時半``, ``午後3時`` to ``HH:MM``; ``None`` stays ``None``."""
    if expr is None or not expr.strip():
        return None
    text = _clean(expr)
    pm = text.startswith("午後")
    text = text.removeprefix("午後").removeprefix("午前")
    m = re.fullmatch(r"(\d{1,2})(?::(\d{2})|時(?:(\d{1,2})分|(半))?)", text)
    if not m:
        raise ToolInputError(f"時刻「{expr.strip()}」を解釈できません（例: 15:00）", field=field)
    hour = int(m.group(1)) + (12 if pm and int(m.group(1)) < 12 else 0)
    minute = int(m.group(2) or m.group(3) or (30 if m.group(4) else 0))
    if hour > 23 or minute > 59:
        raise ToolInputError(f"存在しない時刻です: {expr.strip()}", field=field)
    return f"{hour:02d}:{minute:02d}"


def clean_text(value: str) -> str:
    """NFKC, trimmed, runs of blanks collapsed (line breaks kept)."""
    text = unicodedata.normalize("NFKC", value)
    lines = [re.sub(r"[ \t\u3000]+", " ", line).strip() for line in text.splitlines()]
    return "\n".join(line for line in lines if line).strip()
