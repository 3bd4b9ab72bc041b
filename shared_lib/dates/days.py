"""Date expressions: one pattern per form, each with the function that reads it against today.

Patterns run on folded text (``model.fold``: full-width digits are ASCII). A year-less date
(「11/20」, 「3月5日」) is the *nearest* such day — last year's, this year's or next year's —
ties going forward; so 「11/20」 said on 11/24 is this year's and past (the guardian asks),
and 「1/5」 said on 12/31 is next January (marked ambiguous: another year was chosen). A
day of the month alone (「15日」) is the nearest such day of the previous, this or the next
month, the same way. Nothing is ever moved forward because it is past.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta

from shared_lib.dates.model import WEEKDAYS, DateError, Kind


@dataclass(frozen=True, slots=True)
class Part:
    date: dt.date
    end: dt.date | None = None
    kind: Kind = "absolute"
    note: str | None = None
    year_said: bool = False


Reader = Callable[[re.Match[str], date], Part]
NOTE = r"(?:\s?[(]\s?([月火水木金土日])(?:曜日?)?\s?[)])?"
_MONTH_WORDS = {"先月": -1, "今月": 0, "来月": 1, "再来月": 2, None: 0}
_WEEK_WORDS = {"先週": -7, "今週": 0, "来週": 7, "再来週": 14, None: 0}
_RELATIVE_DAYS = {
    "一昨日": -2, "おととい": -2, "おとつい": -2, "昨日": -1, "きのう": -1, "yesterday": -1,
    "今日": 0, "本日": 0, "きょう": 0, "today": 0,
    "明日": 1, "あした": 1, "あす": 1, "tomorrow": 1,
    "明後日": 2, "あさって": 2, "明々後日": 3, "明明後日": 3, "しあさって": 3,
}  # fmt: skip


def checked(y: int, m: int, d: int, said: str = "") -> date:
    try:
        return date(y, m, d)
    except ValueError as exc:
        raise DateError("date.nonexistent", f"存在しない日付です: {y}年{m}月{d}日", expression=said) from exc


def month_end(y: int, m: int) -> date:
    return date(y + (m == 12), m % 12 + 1, 1) - timedelta(days=1)


def add_months(y: int, m: int, n: int) -> tuple[int, int]:
    k = y * 12 + (m - 1) + n
    return k // 12, k % 12 + 1


def monday(d: date) -> date:
    return d - timedelta(days=d.weekday())


def _nearest(candidates: list[date], today: date) -> date | None:
    return min(candidates, key=lambda d: (abs((d - today).days), d < today)) if candidates else None


def _exists(y: int, m: int, d: int) -> date | None:
    try:
        return date(y, m, d)
    except ValueError:
        return None


def _note_check(m: re.Match[str], group: int, day: date) -> str | None:
    said = m.group(group)
    if said and WEEKDAYS.index(said) != day.weekday():
        return f"曜日（{said}）が{day.month}月{day.day}日の曜日（{WEEKDAYS[day.weekday()]}）と合いません"
    return None


def year_less(month: int, day: int, today: date, said: str = "") -> tuple[date, str | None]:
    """The nearest existing ``month/day`` around today, and a note when it is not this year."""
    if not 1 <= month <= 12:
        raise DateError("date.nonexistent", f"存在しない日付です: {month}月{day}日", expression=said)
    found = _nearest(
        [d for y in (today.year - 1, today.year, today.year + 1) if (d := _exists(y, month, day))], today
    )
    if found is None:
        raise DateError("date.nonexistent", f"存在しない日付です: {month}月{day}日", expression=said)
    note = None if found.year == today.year else f"年の指定がないため{found.year}年と読みました"
    return found, note


def _full(m: re.Match[str], today: date) -> Part:
    day = checked(int(m[1]), int(m[2]), int(m[3]), m[0])
    return Part(day, note=_note_check(m, 4, day), year_said=True)


def _month_day(m: re.Match[str], today: date) -> Part:
    day, note = year_less(int(m[1]), int(m[2]), today, m[0])
    return Part(day, note=note or _note_check(m, 3, day))


def _day_only(m: re.Match[str], today: date) -> Part:
    n = int(m[2])
    if m[1]:
        y, mo = add_months(today.year, today.month, _MONTH_WORDS[m[1]])
        day = checked(y, mo, n, m[0])
        return Part(day, note=_note_check(m, 3, day))
    months = [add_months(today.year, today.month, k) for k in (-1, 0, 1)]
    found = _nearest([d for y, mo in months if (d := _exists(y, mo, n))], today)
    if found is None:
        raise DateError("date.nonexistent", f"存在しない日付です: {n}日", expression=m[0])
    note = None if found.month == today.month else f"月の指定がないため{found.month}月{n}日と読みました"
    return Part(found, note=note or _note_check(m, 3, found))


def _relative_word(m: re.Match[str], today: date) -> Part:
    return Part(today + timedelta(days=_RELATIVE_DAYS[m[0].lower()]), kind="relative")


def _offset(m: re.Match[str], today: date) -> Part:
    n, unit = int(m[1]), m[2]
    if unit == "日後":
        return Part(today + timedelta(days=n), kind="relative")
    if unit == "日前":
        return Part(today - timedelta(days=n), kind="relative")
    if unit == "週間後":
        return Part(today + timedelta(weeks=n), kind="relative")
    y, mo = add_months(today.year, today.month, n)
    last = month_end(y, mo)
    if today.day > last.day:  # 1/31 + 1か月: the month has no 31st, its last day is taken
        return Part(last, kind="relative", note=f"{mo}月に{today.day}日がないため月末と読みました")
    return Part(date(y, mo, today.day), kind="relative")


def _weekday(m: re.Match[str], today: date) -> Part:
    word, wd = (m[1], m[2]) if m[2] else (None, m[3])
    index = WEEKDAYS.index(wd)
    if word in ("次", "今度"):  # the next one strictly after today
        return Part(today + timedelta(days=(index - today.weekday() - 1) % 7 + 1), kind="weekday")
    target = monday(today) + timedelta(days=index + _WEEK_WORDS[word])
    if word is None and target < today:  # a bare weekday is the coming one (today included)
        target += timedelta(days=7)
    return Part(target, kind="weekday")


def _period(m: re.Match[str], today: date) -> Part:
    word = m[0]
    y, mo = today.year, today.month
    if word in ("月末", "今月末", "今月中", "今月いっぱい"):
        return Part(month_end(y, mo), kind="period")
    if word in ("来月末", "来月中", "来月いっぱい"):
        return Part(month_end(*add_months(y, mo, 1)), kind="period")
    if word == "再来月末":
        return Part(month_end(*add_months(y, mo, 2)), kind="period")
    if word in ("月初", "月初め", "月頭", "来月初め", "来月初", "来月頭"):  # the next 1st (today on the 1st)
        if today.day == 1 and not word.startswith("来月"):
            return Part(today, kind="period")
        return Part(date(*add_months(y, mo, 1), 1), kind="period")
    if word in ("今月初め", "今月頭"):
        return Part(date(y, mo, 1), kind="period")
    if word == "週明け":  # the next Monday, strictly after today
        return Part(monday(today) + timedelta(days=7), kind="period")
    if word in ("今週中", "来週中", "再来週中"):  # the Friday of that working week
        friday = monday(today) + timedelta(days=4 + _WEEK_WORDS[word[:-1]])
        note = None
        if word == "今週中" and today.weekday() >= 5:
            note = "週末のため今週の営業日（金曜）はもう過ぎています"
        return Part(friday, kind="period", note=note)
    if word in ("年内", "今年中", "年末", "今年末"):
        return Part(date(y, 12, 31), kind="period")
    if word in ("年度末", "今年度末", "今年度中", "年度内"):  # the Japanese fiscal year ends on 3/31
        return Part(date(y + (mo >= 4), 3, 31), kind="period")
    if word == "来年度末":
        return Part(date(y + (mo >= 4) + 1, 3, 31), kind="period")
    raise DateError("date.unreadable", f"日付「{word}」を解釈できません", expression=word)


_THIRDS = {"上旬": (1, 10), "初旬": (1, 10), "中旬": (11, 20), "下旬": (21, 31)}


def _month_part(m: re.Match[str], today: date) -> Part:
    """「3月下旬」「来月上旬」「中旬」: a range; 「3月末」「3月中」: that month's last day."""
    note = None
    if m[2]:  # a month without a year: the nearest such month, like a year-less date
        first, note = year_less(int(m[2]), 1, today, m[0])
        y, mo = first.year, first.month
    else:
        y, mo = add_months(today.year, today.month, _MONTH_WORDS[m[1] or None])
    if m[3] in ("末", "中", "いっぱい"):
        return Part(month_end(y, mo), kind="period", note=note)
    lo, hi = _THIRDS[m[3]]
    return Part(date(y, mo, lo), min(date(y, mo, 1) + timedelta(days=hi - 1), month_end(y, mo)),
                kind="range", note=note)  # fmt: skip


PERIOD_WORDS = (
    "今月いっぱい|来月いっぱい|再来月末|今月末|来月末|月末|今月中|来月中|来月初め|来月初|来月頭|"
    "今月初め|今月頭|月初め|月初|月頭|週明け|再来週中|来週中|今週中|今年中|今年末|年内|年末|"
    "来年度末|今年度末|今年度中|年度末|年度内"
)
ATOMS: tuple[tuple[re.Pattern[str], Reader], ...] = (
    (re.compile(r"(?<!\d)(\d{4})\s?[-/.年]\s?(\d{1,2})\s?[-/.月]\s?(\d{1,2})(?!\d)日?" + NOTE), _full),
    (re.compile(r"(?<![\d/.])(\d{1,2})\s?[/月]\s?(\d{1,2})(?![\d/])日?" + NOTE), _month_day),
    (
        re.compile(r"(?:(今月|来月|再来月)|(?<!\d)(\d{1,2})月)の?(上旬|初旬|中旬|下旬|末|中|いっぱい)"),
        _month_part,
    ),
    (re.compile(r"()()(上旬|初旬|中旬|下旬)"), _month_part),
    (re.compile(r"(?<![\d月/])(?:(先月|今月|来月|再来月)の?)?(\d{1,2})日(?!間|後|前|中)" + NOTE), _day_only),
    (re.compile(r"(?<!\d)(\d{1,3})\s?(日後|日前|週間後|(?:か|カ|ヶ|ケ|箇)?月後)"), _offset),
    (
        re.compile(
            "(?:" + "|".join(sorted(_RELATIVE_DAYS, key=len, reverse=True)) + ")(?!香)", re.IGNORECASE
        ),
        _relative_word,
    ),
    (re.compile(PERIOD_WORDS), _period),
    (
        re.compile(
            r"(?:(今週|来週|再来週|先週|次|今度)の?([月火水木金土日])(?:曜日?)?(?![末初中旬間])|([月火水木金土日])曜日?)"
        ),
        _weekday,
    ),
)
# a range's second day may be a bare day of the first day's month: 「3/5〜7日」
BARE_DAY = re.compile(r"(?<!\d)(\d{1,2})日?(?![\d/月時:])" + NOTE)
RANGE_SEP = re.compile(r"\s?(?:〜|~|-|ー|―|から)\s?")
