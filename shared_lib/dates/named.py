"""Named days and parts of a week or a month, as offices say them.

* 元日/元旦 (1/1), 大晦日 (12/31), クリスマスイブ (12/24), クリスマス (12/25): the next such day,
  today included (a year-less date).
* 連休明け: the first business day after the next run of three or more days off (weekends,
  national holidays and 年末年始, ``business.business_day``); said inside such a run, after it.
  お盆明け: the first business day after 8/16 (お盆 as most offices keep it, 8/13–8/16;
  approximate: a company's own days may differ).
* 前半/後半 of a week (今週/来週/再来週/週の): Monday–Wednesday and Thursday–Friday, due their
  last day. 半ば/中頃 of a week: its Wednesday (approximate).
* 前半/後半 of a month (今月/来月/12月/月の): the 1st–15th and the 16th–its end; 半ば/中頃: the
  15th (approximate). A month without its word or year is the next one whose part is not over.
* 一両日中: by tomorrow (a day or two: the earlier, approximate).
* The fiscal year's halves and quarters (April to March, as 年度末 is): 上期末/上半期中 the next
  9/30, 下期末/下半期中 the next 3/31, 四半期末/今四半期中 the end of the quarter in progress
  (3/31, 6/30, 9/30, 12/31). 今期/来期 are a company's own periods: not read.
* Before a time: 「今夜10時」「今晩の9時」 are today at 22:00 and 21:00; 「明朝」 is tomorrow
  morning, 「今朝」 this morning (``NIGHT_DAY`` reads only the day; the time table reads the rest).
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

from shared_lib.dates.business import business_day, business_days_after
from shared_lib.dates.days import (
    _MONTH_WORDS,
    _WEEK_WORDS,
    Part,
    Reader,
    add_months,
    monday,
    month_end,
    year_less,
    year_note,
)

_NAMED_DAYS = {
    "元日": (1, 1), "元旦": (1, 1), "大晦日": (12, 31), "大みそか": (12, 31), "おおみそか": (12, 31),
    "クリスマスイブ": (12, 24), "クリスマスイヴ": (12, 24), "クリスマス": (12, 25),
}  # fmt: skip
_APPROX = "（おおよその日付）"


def _named_day(m: re.Match[str], now: datetime) -> Part:
    today = now.date()
    day = year_less(*_NAMED_DAYS[m[0]], today, m[0])
    return Part(day, kind="period", note=year_note(day, today))


def after_long_break(today: date) -> date:
    """The first business day after the next run of three or more days off from ``today``
    (the run ``today`` is in counts from its first day)."""
    day, run = today, 0
    while not business_day(day) and not business_day(day - timedelta(days=1)):
        day -= timedelta(days=1)
    for _ in range(400):
        if business_day(day):
            if run >= 3:
                return day
            run = 0
        else:
            run += 1
        day += timedelta(days=1)
    raise ValueError("no break of three days within a year")  # the calendar always has one


def _long_break(m: re.Match[str], now: datetime) -> Part:
    return Part(after_long_break(now.date()), kind="period")


def _obon(m: re.Match[str], now: datetime) -> Part:
    today = now.date()
    for year in (today.year, today.year + 1):
        day = business_days_after(date(year, 8, 16), 1)
        if day >= today:
            break
    return Part(
        day,
        kind="period",
        note=f"お盆を8月13日〜16日として、明けを{day.month}月{day.day}日と読みました{_APPROX}",
    )


def _week_part(m: re.Match[str], now: datetime) -> Part:
    """「来週前半」「今週後半」「週の半ば」「来週中頃」."""
    first = monday(now.date()) + timedelta(days=_WEEK_WORDS.get(m[1] or None, 0))
    if m[2] == "前半":
        return Part(first, first + timedelta(days=2), kind="range")
    if m[2] == "後半":
        return Part(first + timedelta(days=3), first + timedelta(days=4), kind="range")
    wed = first + timedelta(days=2)
    return Part(wed, kind="period", note=f"週の半ばを水曜と読みました{_APPROX}")


def _month_half(y: int, mo: int, which: str) -> tuple[date, date | None]:
    if which == "前半":
        return date(y, mo, 1), date(y, mo, 15)
    if which == "後半":
        return date(y, mo, 16), month_end(y, mo)
    return date(y, mo, 15), None


def _month_part(m: re.Match[str], now: datetime) -> Part:
    """「来月前半」「12月後半」「月の半ば」「今月中頃」."""
    today, which = now.date(), "半ば" if m[3] in ("半ば", "なかば", "中頃", "中ごろ") else m[3]
    if m[1]:
        y, mo = add_months(today.year, today.month, _MONTH_WORDS[m[1]])
        first, last = _month_half(y, mo, which)
    else:
        y, mo = (today.year, int(m[2])) if m[2] else (today.year, today.month)
        first, last = _month_half(y, mo, which)
        if (last or first) < today:
            first, last = _month_half(*add_months(y, mo, 12 if m[2] else 1), which)
    note = f"月の半ばを{first.day}日と読みました{_APPROX}" if last is None else None
    return Part(first, last, kind="range" if last else "period", note=note)


def _half_end(m: re.Match[str], now: datetime) -> Part:
    """「上期末」「上半期中」: the next 9/30; 「下期末」「下半期中」: the next 3/31."""
    first = m[0].startswith("上")
    return Part(year_less(9 if first else 3, 30 if first else 31, now.date()), kind="period")


def _quarter_end(m: re.Match[str], now: datetime) -> Part:
    today = now.date()
    return Part(month_end(today.year, (today.month - 1) // 3 * 3 + 3), kind="period")


def _a_day_or_two(m: re.Match[str], now: datetime) -> Part:
    return Part(
        now.date() + timedelta(days=1), kind="relative", note=f"一両日中を明日までと読みました{_APPROX}"
    )


def _day_before_time(m: re.Match[str], now: datetime) -> Part:
    """「今夜10時」「明朝」「今朝」: the day only; the time table reads 夜10時 and 朝 after it."""
    return Part(now.date() + timedelta(days=1 if m[0] == "明" else 0), kind="relative")


_WEEK = r"(?:(今週|来週|再来週|こんしゅう|らいしゅう|さらいしゅう)の?|週の?)"
NAMED_ATOMS: tuple[tuple[re.Pattern[str], Reader], ...] = (
    (re.compile("|".join(sorted(_NAMED_DAYS, key=len, reverse=True))), _named_day),
    (re.compile(r"(?:大型)?連休明け"), _long_break),
    (re.compile(r"(?:お)?盆明け|お盆休み明け"), _obon),
    (re.compile(_WEEK + r"(前半|後半|半ば|なかば|中頃|中ごろ)"), _week_part),
    (
        re.compile(r"(?:(今月|来月|再来月)|(?<!\d)(\d{1,2})月|月)の?(前半|後半|半ば|なかば|中頃|中ごろ)"),
        _month_part,
    ),
    (re.compile(r"一両日中"), _a_day_or_two),
    (re.compile(r"(?:上|下)(?:半)?期(?:末|中|内|いっぱい)"), _half_end),
    (re.compile(r"(?:今)?四半期(?:末|中|内|いっぱい)"), _quarter_end),
    (re.compile(r"今(?=夜\s?の?\s?\d|晩\s?の?\s?\d|朝)|明(?=朝(?!体))"), _day_before_time),
)
