"""Date expressions: one pattern per form, each with the function that reads it against now.

Patterns run on folded text (``model.fold``: full-width digits are ASCII). Readers get the
local ``now`` (its date is today; its hour decides 「月曜」 said on a Monday night).

A date without its year or month is the *next* such day, today included: 「7/1」 said in
November is next year's, 「15日」 said on 12/28 is January 15th, 「9月末」 said in February is
this September's end. A weekday written beside it (「11/20(金)」) may pick the past day it
names instead (then the reading is past and the guardian asks). A year-less date that passed
less than ``RECENT_PAST_DAYS`` ago and is therefore read a year ahead is in doubt
(``doubt="next_year"``: the user probably meant the past day, or mistyped). Dates with
their year, and relative words (昨日, 先週金曜, 今月上旬), are read as said, past or not.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from shared_lib.dates.model import (
    EVENING_HOUR,
    KANJI_NUMBER,
    RECENT_PAST_DAYS,
    WEEKDAYS,
    DateError,
    Doubt,
    Kind,
    number,
)


@dataclass(frozen=True, slots=True)
class Part:
    date: dt.date
    end: dt.date | None = None
    kind: Kind = "absolute"
    note: str | None = None
    year_said: bool = False
    due: dt.date | None = None
    doubt: Doubt | None = None


Reader = Callable[[re.Match[str], datetime], Part]
NOTE = r"(?:\s?[(]\s?([月火水木金土日])(?:曜日?)?\s?[)])?"
_MONTH_WORDS = {"先月": -1, "今月": 0, "来月": 1, "再来月": 2, None: 0}
_WEEK_WORDS = {
    "先週": -7, "せんしゅう": -7, "今週": 0, "こんしゅう": 0, "来週": 7, "らいしゅう": 7,
    "再来週": 14, "さらいしゅう": 14, None: 0,
}  # fmt: skip
# weekday names as written, typos in kana included: 「げつよう」「金よう」「すいようび」
_WEEKDAY_KANA = {"げつ": "月", "か": "火", "すい": "水", "もく": "木", "きん": "金", "ど": "土", "にち": "日"}
_RELATIVE_DAYS = {
    "一昨日": -2, "おととい": -2, "おとつい": -2, "昨日": -1, "きのう": -1, "yesterday": -1,
    "今日": 0, "本日": 0, "きょう": 0, "today": 0, "eod": 0,
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


def _exists(y: int, m: int, d: int) -> date | None:
    try:
        return date(y, m, d)
    except ValueError:
        return None


def weekday_index(written: str) -> int:
    """「金」「きん」 → 4."""
    return WEEKDAYS.index(_WEEKDAY_KANA.get(written, written))


def _note_check(m: re.Match[str], group: int, day: date) -> str | None:
    said = m.group(group)
    if said and WEEKDAYS.index(said) != day.weekday():
        return f"曜日（{said}）が{day.month}月{day.day}日の曜日（{WEEKDAYS[day.weekday()]}）と合いません"
    return None


def _weekday_doubt(m: re.Match[str], group: int, day: date) -> Doubt | None:
    return "weekday" if _note_check(m, group, day) else None


def _year_doubt(found: date, today: date) -> Doubt | None:
    """A year-less day read a year ahead that passed only recently: the user must say which."""
    return "next_year" if (found - today).days > 365 - RECENT_PAST_DAYS else None


def year_less(month: int, day: int, today: date, said: str = "", weekday: str | None = None) -> date:
    """The next existing ``month/day`` from today (today included). A ``weekday`` written beside
    it that only the last past such day has picks that day (it is past: the guardian asks)."""
    if not 1 <= month <= 12:
        raise DateError("date.nonexistent", f"存在しない日付です: {month}月{day}日", expression=said)
    ahead = [d for y in range(today.year, today.year + 5) if (d := _exists(y, month, day)) and d >= today]
    if not ahead:
        raise DateError("date.nonexistent", f"存在しない日付です: {month}月{day}日", expression=said)
    found = ahead[0]
    if weekday and WEEKDAYS.index(weekday) != found.weekday():
        behind = [d for y in (today.year, today.year - 1) if (d := _exists(y, month, day)) and d < today]
        recent = behind and (today - behind[0]).days <= RECENT_PAST_DAYS
        if recent and behind[0].weekday() == WEEKDAYS.index(weekday):
            return behind[0]
    return found


def year_note(found: date, today: date) -> str | None:
    return None if found.year == today.year else f"年の指定がないため{found.year}年と読みました"


def _with_year(m: re.Match[str], year: int, kind: Kind = "absolute") -> Part:
    """Month ``m[2]`` and day ``m[3]`` of ``year`` as said (past or not), a weekday note ``m[4]``."""
    day = checked(year, int(m[2]), int(m[3]), m[0])
    return Part(day, kind=kind, note=_note_check(m, 4, day), year_said=True, doubt=_weekday_doubt(m, 4, day))


def _full(m: re.Match[str], now: datetime) -> Part:
    return _with_year(m, int(m[1]))


def _reiwa(m: re.Match[str], now: datetime) -> Part:
    """「令和8年12月10日」「R8.12.10」「令和元年…」: the era's year (令和元年 is 2019), as written."""
    return _with_year(m, 2018 + (1 if m[1] == "元" else int(m[1])))


_YEAR_WORDS = {"今年": 0, "ことし": 0, "来年": 1, "らいねん": 1, "再来年": 2, "さらいねん": 2}


def _year_word_day(m: re.Match[str], now: datetime) -> Part:
    """「来年1月5日」「来年の3/1」「今年の12/25」: the year said by its word, read as said (past or
    not), like a date written with its year; relative (the word counts from today's year), so a
    value keeps it as said (``policy.values.iso_date_text``) and is read on the day it is used."""
    return _with_year(m, now.date().year + _YEAR_WORDS[m[1]], "relative")


def _month_day(m: re.Match[str], now: datetime) -> Part:
    today = now.date()
    day = year_less(number(m[1]), number(m[2]), today, m[0], m[3])
    doubt = _weekday_doubt(m, 3, day) or _year_doubt(day, today)
    note = _note_check(m, 3, day) or year_note(day, today)
    if doubt == "next_year":
        note = f"{day.month}月{day.day}日は過ぎたばかりのため次の{day.year}年{day.month}月{day.day}日と読みました"
    return Part(day, note=note, doubt=doubt)


def _day_only(m: re.Match[str], now: datetime) -> Part:
    today, n = now.date(), number(m[2])
    if m[1]:
        y, mo = add_months(today.year, today.month, _MONTH_WORDS[m[1]])
        day = checked(y, mo, n, m[0])
        return Part(day, note=_note_check(m, 3, day), doubt=_weekday_doubt(m, 3, day))
    if not 1 <= n <= 31:
        raise DateError("date.nonexistent", f"存在しない日付です: {n}日", expression=m[0])
    months = [add_months(today.year, today.month, k) for k in range(3)]  # the next month with that day
    found = next(d for y, mo in months if (d := _exists(y, mo, n)) and d >= today)
    note = None if found.month == today.month else f"月の指定がないため{found.month}月{n}日と読みました"
    return Part(found, note=_note_check(m, 3, found) or note, doubt=_weekday_doubt(m, 3, found))


def _relative_word(m: re.Match[str], now: datetime) -> Part:
    return Part(now.date() + timedelta(days=_RELATIVE_DAYS[m[0].lower()]), kind="relative")


def _tonight(m: re.Match[str], now: datetime) -> Part:
    """「今夜中」「今晩までに」: today (by the end of it). Not before an hour: 「今夜10時」 is not read
    (10時 alone would be 10:00), so the guardian asks."""
    return Part(now.date(), kind="relative")


def _offset(m: re.Match[str], now: datetime) -> Part:
    """「3日後」「2週間後」「1ヶ月後」「半年後」「1年後」, and as a deadline 「3日以内」「1週間以内」
    「1ヶ月以内」「1年以内」: the last day of the span, the same day as 「…後」."""
    today, unit = now.date(), m[2].replace("以内", "後")
    if unit == "年後":  # 「1年後」「2年以内」「半年後」: in months
        n, unit = (6 if m[1] == "半" else 12 * number(m[1])), "か月後"
    else:
        n = number(m[1])
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


def _weekday(m: re.Match[str], now: datetime) -> Part:
    """A bare weekday is the coming one: today's until the evening (``EVENING_HOUR``), next
    week's from then (「月曜」 said on a Monday at 23:30 is next Monday; 「今日」 stays today)."""
    today = now.date()
    word, wd = (m[1], m[2]) if m[2] else (None, m[3])
    index = weekday_index(wd)
    if word in ("次", "今度"):  # the next one strictly after today
        return Part(today + timedelta(days=(index - today.weekday() - 1) % 7 + 1), kind="weekday")
    target = monday(today) + timedelta(days=index + _WEEK_WORDS[word])
    if word is None and (target < today or (target == today and now.hour >= EVENING_HOUR)):
        target += timedelta(days=7)
    return Part(target, kind="weekday")


def _period(m: re.Match[str], now: datetime) -> Part:
    word, today = m[0], now.date()
    y, mo = today.year, today.month
    if word in ("月末", "今月末", "月末日", "今月末日", "今月中", "今月いっぱい", "月内", "今月内"):
        return Part(month_end(y, mo), kind="period")
    if word in ("来月末", "来月末日", "来月中", "来月いっぱい"):
        return Part(month_end(*add_months(y, mo, 1)), kind="period")
    if word == "再来月末":
        return Part(month_end(*add_months(y, mo, 2)), kind="period")
    if word in ("月初", "月初め", "月頭", "来月初め", "来月初", "来月頭"):  # the next 1st (today on the 1st)
        if today.day == 1 and not word.startswith("来月"):
            return Part(today, kind="period")
        return Part(date(*add_months(y, mo, 1), 1), kind="period")
    if word in ("今月初め", "今月頭"):
        return Part(date(y, mo, 1), kind="period")
    if word in (
        "週明け",
        "週明け早々",
        "週明けすぐ",
        "週明け一番",
        "来週頭",
        "来週初め",
        "来週明け",
        "来週の頭",
        "来週の初め",
    ):  # the next Monday, strictly after today
        return Part(monday(today) + timedelta(days=7), kind="period")
    if word.endswith(("週中", "週内", "週いっぱい")):  # the Friday of that working week
        week = (
            next(k for k in ("再来週", "来週", "今週") if word.startswith(k)) if word[0] != "週" else "今週"
        )
        friday = monday(today) + timedelta(days=4 + _WEEK_WORDS[week])
        note = None
        if week == "今週" and today.weekday() >= 5:
            note = "週末のため今週の営業日（金曜）はもう過ぎています"
        return Part(friday, kind="period", note=note)
    if word in ("年内", "今年中", "年末", "今年末", "今年いっぱい"):
        return Part(date(y, 12, 31), kind="period")
    if word in (
        "年度末",
        "今年度末",
        "今年度中",
        "今年度内",
        "今年度いっぱい",
        "年度内",
    ):  # the Japanese fiscal year ends on 3/31
        return Part(date(y + (mo >= 4), 3, 31), kind="period")
    if word in ("来年度末", "来年度中", "来年度内", "来年度いっぱい"):
        return Part(date(y + (mo >= 4) + 1, 3, 31), kind="period")
    raise DateError("date.unreadable", f"日付「{word}」を解釈できません", expression=word)


_THIRDS = {"上旬": (1, 10), "初旬": (1, 10), "中旬": (11, 20), "下旬": (21, 31)}


def _part_of(y: int, mo: int, which: str) -> tuple[date, date | None]:
    if which in ("末", "末日", "中", "いっぱい", "内"):
        return month_end(y, mo), None
    if which in ("頭", "初め"):  # 「12月頭」: its first day, as 「来月頭」 is
        return date(y, mo, 1), None
    lo, hi = _THIRDS[which]
    return date(y, mo, lo), min(date(y, mo, 1) + timedelta(days=hi - 1), month_end(y, mo))


def _month_part(m: re.Match[str], now: datetime) -> Part:
    """「3月下旬」「来月上旬」「中旬」: a range; 「3月末」「3月中」: that month's last day. A month
    without a year (or a bare 「下旬」) whose part is over is next year's (next month's)."""
    today = now.date()
    if m[1]:  # 今月/来月/再来月: as said
        first, last = _part_of(*add_months(today.year, today.month, _MONTH_WORDS[m[1]]), m[3])
        return Part(first, last, kind="range" if last else "period")
    step = 12 if m[2] else 1
    y, mo = (today.year, int(m[2])) if m[2] else (today.year, today.month)
    if not 1 <= mo <= 12:
        raise DateError("date.nonexistent", f"存在しない月です: {m[0]}", expression=m[0])
    first, last = _part_of(y, mo, m[3])
    if (last or first) < today:
        first, last = _part_of(*add_months(y, mo, step), m[3])
    note = year_note(first, today) if m[2] else None
    doubt = _year_doubt(last or first, today) if m[2] else None
    return Part(first, last, kind="range" if last else "period", note=note, doubt=doubt)


PERIOD_WORDS = (
    "今月いっぱい|来月いっぱい|再来月末|今月末日|来月末日|月末日|今月末|来月末|月末|今月中|来月中|今月内|月内|来月初め|来月初|来月頭|"
    "今月初め|今月頭|月初め|月初|月頭|週明け早々|週明けすぐ|週明け一番|週明け|来週明け|来週の頭|来週の初め|来週頭|来週初め|再来週中|来週中|今週中|"
    "再来週いっぱい|来週いっぱい|今週いっぱい|来週内|今週内|週内|今年中|今年末|今年いっぱい|年内|年末(?!年始)|"
    "来年度末|来年度中|来年度内|来年度いっぱい|今年度末|今年度中|今年度内|今年度いっぱい|年度末|年度内"
)
_KN = "〇一二三四五六七八九十"
_WD = r"([月火水木金土日]|げつ|か(?=よう)|すい|もく|きん|ど(?=よう)|にち)"
_WEEK = r"(今週|来週|再来週|先週|こんしゅう|らいしゅう|さらいしゅう|せんしゅう|次|今度)"
ATOMS: tuple[tuple[re.Pattern[str], Reader], ...] = (
    (re.compile(r"(?<!\d)(\d{4})\s?[-/.年]\s?(\d{1,2})\s?[-/.月]\s?(\d{1,2})(?!\d)日?" + NOTE), _full),
    (re.compile(r"(?<![\d/.])(\d{1,2})\s?[/月]\s?(\d{1,2})(?![\d/])日?" + NOTE), _month_day),
    (
        re.compile(r"(?:令和|R)\s?(\d{1,2}|元)\s?[年./]\s?(\d{1,2})\s?[月./]\s?(\d{1,2})(?!\d)日?" + NOTE),
        _reiwa,
    ),
    (
        re.compile(
            r"(?:(今月|来月|再来月)|(?<!\d)(\d{1,2})月)の?(上旬|初旬|中旬|下旬|末日|末|中|いっぱい|内|頭|初め)"
        ),
        _month_part,
    ),
    (re.compile(r"()()(上旬|初旬|中旬|下旬)"), _month_part),
    (re.compile(r"(?<![\d月/])(?:(先月|今月|来月|再来月)の?)?(\d{1,2})日(?!間|後|前|中)" + NOTE), _day_only),
    # in kanji: 「十二月三日」「二十日」 (a bare 一日 is one day as often as the 1st: not read alone)
    (
        re.compile(rf"(?<![\d{_KN}])(\d{{1,2}}|{KANJI_NUMBER})月({KANJI_NUMBER})日(?!間|後|前|中)" + NOTE),
        _month_day,
    ),
    (re.compile(rf"(先月|今月|来月|再来月)の?({KANJI_NUMBER})日(?!間|後|前|中)" + NOTE), _day_only),
    (re.compile(rf"(?<![\d月/{_KN}])()((?!一日){KANJI_NUMBER})日(?!間|後|前|中)" + NOTE), _day_only),
    (
        re.compile(
            rf"(?<![\d{_KN}])(\d{{1,3}}|半(?=年)|{KANJI_NUMBER})\s?"
            r"(日後|日前|日以内|週間後|週間以内|(?:か|カ|ヶ|ケ|箇)?月(?:後|以内)|年後|年以内)"
        ),
        _offset,
    ),
    (re.compile(r"(今夜|今晩)(?!\s?の?\s?\d)"), _tonight),
    (
        re.compile(
            r"(今年|来年|再来年|ことし|らいねん|さらいねん)の?\s?(\d{1,2})\s?[/月]\s?(\d{1,2})(?![\d/])日?"
            + NOTE
        ),
        _year_word_day,
    ),
    (
        re.compile(
            "(?<![A-Za-z])(?:"
            + "|".join(sorted(_RELATIVE_DAYS, key=len, reverse=True))
            + ")(?!香)(?![A-Za-z])",
            re.IGNORECASE,
        ),
        _relative_word,
    ),
    (re.compile(PERIOD_WORDS), _period),
    (
        re.compile(
            "(?:"
            + _WEEK
            + "の?"
            + _WD
            + r"(?:曜日?|よう(?:び)?|(?![末初中旬間頭明]))|"  # 「次の月末」 is no Monday
            + _WD
            + r"(?:曜日?|よう(?:び)?))"
        ),
        _weekday,
    ),
)
# a range's second day may be a bare day of the first day's month: 「3/5〜7日」
BARE_DAY = re.compile(r"(?<!\d)(\d{1,2})日?(?![\d/月時:])" + NOTE)
RANGE_SEP = re.compile(r"\s?(?:〜|~|-|ー|―|から)\s?")
