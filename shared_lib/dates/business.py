"""Office calendar words: weekends, the new year, Golden Week, the Nth weekday of a month.

What each word means (Japan's office calendar; national holidays from ``dates.holidays``):

* 週末/今週末, 来週末, 再来週末: that week's Saturday–Sunday (a range: 週末 as an event). As a
  deadline (``due``) it is that week's Friday, the last business day before it — said on the
  weekend itself, 今週末/週末 is due its Sunday.
* 年明け (年明け早々/すぐ/一番, 来年明け, 来年早々, 来年頭, 新年早々, 年始, 年初; 仕事始め, 御用始め,
  正月明け, 三が日明け): the first business day of January,
  the first weekday from 1/4 (the coming January;
  said in January, this January's).
* GW明け / ゴールデンウィーク明け: the first weekday after 5/5 that is not a substitute holiday
  (5/6 is one when 5/3, 5/4 or 5/5 is a Sunday): 5/7 in 2026, 5/6 in 2027, 5/8 in 2028. The
  coming one: said after it, next year's.
* 年末年始: 12/29–1/3 (a range; due 12/28, the last business day before it). Said on 1/1–1/3,
  the one in progress.
* 仕事納め / 御用納め / 年内最終営業日: the last business day before 年末年始 (12/28, or the
  Friday before it when it falls on a weekend); said after it, next year's.
* 第N営業日: 「来月の第3営業日」 the Nth business day of that month (a bare one: this month's,
  or next month's once past).
* N営業日以内 / N営業日後: the Nth business day after today, Saturdays, Sundays, national holidays
  and 年末年始 not counted (「3営業日以内」 said on a Friday is due Wednesday; 「2営業日後」 said
  on 12/28 is 1/5; 「5営業日以内」 said on 2026-04-22 is 4/30, 昭和の日 not counted).
* 第N曜日: 「来月の第2水曜」「12月の第1月曜」「第3金曜」 — the Nth such weekday of that month; a bare
  one is this month's unless it is past (then next month's), a month without a year is the next
  such month (like a year-less date). A fifth weekday a month lacks does not exist.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

from shared_lib.dates.days import (
    _MONTH_WORDS,
    Part,
    Reader,
    add_months,
    monday,
    weekday_index,
    year_note,
)
from shared_lib.dates.holidays import is_holiday
from shared_lib.dates.model import KANJI_NUMBER, DateError, number

_WEEKS = {"": 0, "今週": 0, "来週": 7, "再来週": 14}
_NUMBERS = {"一": 1, "二": 2, "三": 3, "四": 4, "五": 5}


def _weekend(m: re.Match[str], now: datetime) -> Part:
    today = now.date()
    saturday = monday(today) + timedelta(days=5 + _WEEKS[m[1] or ""])
    due = saturday - timedelta(days=1)
    if saturday <= today:  # said on the weekend itself: due by its end
        due = saturday + timedelta(days=1)
    return Part(saturday, saturday + timedelta(days=1), kind="range", due=due)


def first_business_day_of_year(year: int) -> date:
    day = date(year, 1, 4)
    while day.weekday() >= 5:
        day += timedelta(days=1)
    return day


def _new_year(m: re.Match[str], now: datetime) -> Part:
    today = now.date()
    year = today.year if today.month == 1 else today.year + 1
    return Part(first_business_day_of_year(year), kind="period")


def after_golden_week(year: int) -> date:
    """The first working day after Golden Week (5/3–5/5 and a substitute holiday)."""
    day = date(year, 5, 6)
    if any(date(year, 5, d).weekday() == 6 for d in (3, 4, 5)):  # 振替休日 on 5/6
        day += timedelta(days=1)
    while day.weekday() >= 5:
        day += timedelta(days=1)
    return day


def _golden_week(m: re.Match[str], now: datetime) -> Part:
    today = now.date()
    day = after_golden_week(today.year)
    if day < today:
        day = after_golden_week(today.year + 1)
    return Part(day, kind="period")


def _year_end(m: re.Match[str], now: datetime) -> Part:
    today = now.date()
    start = date(today.year - 1 if today <= date(today.year, 1, 3) else today.year, 12, 29)
    return Part(start, date(start.year + 1, 1, 3), kind="range", due=start - timedelta(days=1))


def nth_weekday(year: int, month: int, n: int, weekday: int, said: str) -> date:
    first = date(year, month, 1)
    day = first + timedelta(days=(weekday - first.weekday()) % 7 + 7 * (n - 1))
    if day.month != month or n < 1:
        raise DateError("date.nonexistent", f"{year}年{month}月に{said}はありません", expression=said)
    return day


def _nth(m: re.Match[str], now: datetime) -> Part:
    today = now.date()
    n = int(m[3]) if m[3].isdigit() else _NUMBERS[m[3]]
    wd, said = weekday_index(m[4]), m[0]
    if m[1]:  # 今月/来月/再来月: as said
        y, mo = add_months(today.year, today.month, _MONTH_WORDS[m[1]])
        return Part(nth_weekday(y, mo, n, wd, said), kind="weekday")
    step = 12 if m[2] else 1
    if m[2] and not 1 <= int(m[2]) <= 12:
        raise DateError("date.nonexistent", f"存在しない月です: {said}", expression=said)
    y, mo = (today.year, int(m[2])) if m[2] else (today.year, today.month)
    for k in range(0, 5 * step, step):  # the next month (or year) that has it, from today
        yy, mm = add_months(y, mo, k)
        try:
            day = nth_weekday(yy, mm, n, wd, said)
        except DateError:
            if n < 5:
                raise
            continue
        if day >= today:
            return Part(day, kind="weekday", note=year_note(day, today) if m[2] else None)
    raise DateError("date.nonexistent", f"{said}はありません", expression=said)


def business_day(day: date) -> bool:
    """A weekday that is not a national holiday (``dates.holidays``: substitute and in-between
    days included) nor in 年末年始 (12/29–1/3, the offices' own)."""
    md = (day.month, day.day)
    return day.weekday() < 5 and not (md >= (12, 29) or md <= (1, 3) or is_holiday(day))


def business_days_after(day: date, n: int) -> date:
    """The ``n``-th business day after ``day`` (``business_day``)."""
    while n > 0:
        day += timedelta(days=1)
        n -= business_day(day)
    return day


def _business_days(m: re.Match[str], now: datetime) -> Part:
    """「3営業日以内」「2営業日後」: the Nth business day after today."""
    return Part(business_days_after(now.date(), number(m[1])), kind="relative")


def last_business_day_of_year(year: int) -> date:
    """仕事納め: the last business day before 年末年始 (12/28, or the Friday before it)."""
    day = date(year, 12, 28)
    while not business_day(day):
        day -= timedelta(days=1)
    return day


def _year_close(m: re.Match[str], now: datetime) -> Part:
    today = now.date()
    day = last_business_day_of_year(today.year)
    return Part(day if day >= today else last_business_day_of_year(today.year + 1), kind="period")


def _nth_business_day(m: re.Match[str], now: datetime) -> Part:
    """「来月の第3営業日」「第1営業日」: the Nth business day of that month; a bare one is this
    month's unless it is past (then next month's)."""
    today, n = now.date(), int(m[2]) if m[2].isdigit() else _NUMBERS[m[2]]
    day = today
    for k in (_MONTH_WORDS[m[1]],) if m[1] else (0, 1):
        day = business_days_after(date(*add_months(today.year, today.month, k), 1) - timedelta(days=1), n)
        if m[1] or day >= today:
            break
    return Part(day, kind="period")


BUSINESS_ATOMS: tuple[tuple[re.Pattern[str], Reader], ...] = (
    (re.compile(r"仕事納め|御用納め|年内最終営業日|年内の最終営業日"), _year_close),
    (re.compile(r"(?:(今月|来月|再来月)の?)?第\s?([1-9一二三四五])\s?営業日"), _nth_business_day),
    (
        re.compile(rf"(?<![\d〇一二三四五六七八九十])(\d{{1,2}}|{KANJI_NUMBER})\s?営業日(?:以内|後)"),
        _business_days,
    ),
    (re.compile(r"(?:(今週|来週|再来週)の?週?末|週末)"), _weekend),
    (
        re.compile(
            r"年明け(?:早々|すぐ|一番|いちばん)?|来年明け|来年早々|来年の?頭|新年早々|年始(?!年末)|年初め?|"
            r"仕事始め|仕事はじめ|御用始め|(?:お)?正月明け|三が日明け"
        ),
        _new_year,
    ),
    (re.compile(r"(?:GW|ゴールデン\s?ウ[ィイ]ーク)明け", re.IGNORECASE), _golden_week),
    (re.compile(r"年末年始"), _year_end),
    (
        re.compile(
            r"(?:(今月|来月|再来月)|(?<!\d)(\d{1,2})月)?の?第\s?([1-5一二三四五])\s?(?:週の?)?"
            r"([月火水木金土日])(?:曜日?)?"
        ),
        _nth,
    ),
)
