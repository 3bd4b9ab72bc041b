"""A heartbeat task's schedule (seed 001 §17): what a person says (「毎週月曜9時」「平日の朝9時」
「毎朝8:30」「月末の17時」「毎月１５日」) read into a small cron-like form, and its next due time.

Fixed logic, no store. Times are Japan's (``dates.JST``); the time of day is read by the one
time reader (``dates.times``: 「3時」 is 15:00, 「朝」 9:00); no time said is 9:00, the start of
work. Kinds, each in one form:

* ``daily`` — 毎日, 毎朝, 毎晩, 毎夕;
* ``weekly`` — 毎週 with its days (「毎週月曜」「毎週月・木」「毎週火曜と金曜」), two days or more
  without it (「月曜と木曜の朝」, 土日: a day alone may be once), 平日 (Monday to
  Friday, as a calendar's "every weekday" is), 営業日 (the business days: Monday to Friday without
  the national holidays and 年末年始), or a day said with ごと/毎 (「月曜ごと」「毎月曜」);
* ``monthly`` — 毎月N日 (a day the month lacks is its last day), 月末 (the month's last day),
  月初/毎月頭 (the 1st), 最終営業日 and 第1営業日 (the month's last and first business days:
  weekdays that are not national holidays nor 年末年始, ``dates.business.business_day``).

Refused with a ``ScheduleError`` whose ``code`` says why: nothing read (``schedule.unreadable``),
more often than daily, an interval, an nth weekday, two times or two days of a month (毎時, 隔週,
N時間ごと, 第2金曜, 第3営業日: ``schedule.unsupported``; 9時と17時, 毎月15日と月末, two schedules
in one: ``schedule.several``), a time in
the quiet hours (23:00–08:00, when the heartbeat sends nothing: ``schedule.quiet_hours``).

>>> read("毎週月曜9時").describe()
'毎週月曜 9:00'
>>> read("平日の朝８：３０").describe()
'平日 8:30'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any, Literal

from shared_lib.dates.business import business_day, business_days_after
from shared_lib.dates.days import month_end
from shared_lib.dates.model import JST, WEEKDAYS, DateError, fold
from shared_lib.dates.times import TIME_ATOMS, WORD, night_hour, read_time
from shared_lib.errors import CharterError

Kind = Literal["daily", "weekly", "monthly"]
DEFAULT_TIME = time(9, 0)  # no time said: the start of work (dates.times: 始業)
QUIET_START, QUIET_END = 23, 8  # seed 001 §17.4 (state.due.HeartbeatConfig's defaults)
MONTH_END = 0  # ``Schedule.day`` of 月末
LAST_BUSINESS_DAY = -1  # ``Schedule.day`` of 最終営業日
FIRST_BUSINESS_DAY = -2  # ``Schedule.day`` of 第1営業日
WORKDAYS = (0, 1, 2, 3, 4)
_SEARCH_DAYS = 62  # two months: every kind recurs within it

_UNSUPPORTED = re.compile(
    r"毎時|隔週|隔月|第\s*(?![1一]\s*営業日)[\d一二三四五]|\d+\s*(?:時間|分)(?:ごと|おき|毎)|1時間に1回|毎分|毎年|"
    r"最終\s*[月火水木金土日]"
)
_LAST_BUSINESS = re.compile(r"最終営業日|月末の?営業日|営業最終日")
_FIRST_BUSINESS = re.compile(r"第\s*[1一]\s*営業日|月初の?営業日|最初の営業日")
_MONTH_START = re.compile(r"月初め?|毎月\s*(?:の\s*)?(?:頭|初め)|月頭")
_MONTH_DAYS = re.compile(r"\d{1,2}\s*日|月末|末日|月初|月頭")
_WORKDAY = re.compile(r"平日|営業日|ウィークデー|月[〜~\-ー～]金")
_DAILY = re.compile(r"毎日|毎朝|毎晩|毎夕|毎夜|日次|デイリー")
_MONTH_END = re.compile(r"月末|末日")
_MONTH_DAY = re.compile(r"毎月\s*(\d{1,2})\s*日")
_EVENING = re.compile(r"晩|夜|夕")
_DAY = f"[{WEEKDAYS}]"
# a day of the week as said: 月曜, 月曜日, 月よう (すいよう, read as 水よう), or a bare 月 in a list
# after 毎週 (毎週月・木)
_KANA_DAYS = {"げつ": "月", "か": "火", "すい": "水", "もく": "木", "きん": "金", "ど": "土", "にち": "日"}
_KANA = re.compile(rf"(?<![ぁ-ん])({'|'.join(_KANA_DAYS)})(?=よう)")  # not など|ようやく
_WEEKDAY = re.compile(rf"({_DAY})(?:曜日?|よう(?:び)?)")
_WEEKLY_LIST = re.compile(rf"毎週\s*(?:の\s*)?({_DAY}(?:\s*[・、,/と]\s*{_DAY})*)(?![日])")
_EVERY = re.compile(rf"毎週|毎{_DAY}曜|{_DAY}曜日?(?:ごと|毎)")


class ScheduleError(CharterError):
    """A schedule that cannot be kept; ``code``: unreadable, unsupported, quiet_hours, day."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Schedule:
    """When a task is due: ``weekdays`` (0 = Monday) of a weekly one, ``day`` of a monthly one
    (``MONTH_END`` for 月末), at ``at`` in Japan's time."""

    kind: Kind
    at: time
    weekdays: tuple[int, ...] = ()
    day: int | None = None
    business: bool = False  # 営業日: the weekdays' national holidays and 年末年始 skipped

    def describe(self) -> str:
        """The schedule in words, for the confirmation, the list and the operator."""
        at = f"{self.at.hour}:{self.at.minute:02d}"
        if self.kind == "daily":
            return f"毎日 {at}"
        if self.kind == "weekly":
            if self.weekdays == WORKDAYS:
                return f"{'営業日' if self.business else '平日'} {at}"
            return "毎週" + "・".join(f"{WEEKDAYS[d]}曜" for d in self.weekdays) + f" {at}"
        named = {MONTH_END: "末", LAST_BUSINESS_DAY: "最終営業日", FIRST_BUSINESS_DAY: "第1営業日"}
        day = 1 if self.day is None else int(self.day)
        return f"毎月{named.get(day, f'{day}日')} {at}"

    def runs_on(self, day: date) -> bool:
        if self.kind == "daily":
            return True
        if self.kind == "weekly":
            return day.weekday() in self.weekdays and (not self.business or business_day(day))
        if self.day == LAST_BUSINESS_DAY:
            return day == last_business_day(day.year, day.month)
        if self.day == FIRST_BUSINESS_DAY:
            return day == business_days_after(date(day.year, day.month, 1) - timedelta(days=1), 1)
        last = month_end(day.year, day.month).day
        return day.day == (last if self.day == MONTH_END else min(int(self.day or 1), last))

    def next_due(self, after: datetime) -> datetime:
        """The first due time strictly after ``after`` (aware), in Japan's time."""
        local = after.astimezone(JST)
        for offset in range(_SEARCH_DAYS):
            day = local.date() + timedelta(days=offset)
            due = datetime.combine(day, self.at, tzinfo=JST)
            if due > local and self.runs_on(day):
                return due
        raise ScheduleError("schedule.unreadable", f"{self.describe()} never falls due")  # not reached

    def to_doc(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "at": self.at.strftime("%H:%M"),
            "weekdays": list(self.weekdays),
            "day": self.day,
            "business": self.business,
        }

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> Schedule:
        hour, minute = (int(x) for x in str(doc["at"]).split(":"))
        day = doc.get("day")
        weekdays = tuple(int(d) for d in doc.get("weekdays") or ())
        return cls(doc["kind"], time(hour, minute), weekdays, day, bool(doc.get("business")))


def _time_of(text: str) -> time:
    """The one time of day said in ``text``: a time inside a longer one is part of it (朝 of
    朝8:30), an approximate word gives way to a time said exactly (毎朝、8時半 is 8:30), two
    times are two schedules (``schedule.several``); an evening word said apart (毎晩8時,
    夕方6時) puts the hour as said in the evening, or for 晩 and 夜 in the small hours (毎晩2時 is
    2:00: the quiet hours), as ``dates.times.night_hour`` reads it."""
    evening = _EVENING.search(text)
    found = [m for atom in TIME_ATOMS for m in atom.finditer(text)]
    found = [m for m in found if not any(_inside(m, o) for o in found)]
    if not found:
        return time(19, 0) if evening and evening[0] != "夕" else time(17, 0) if evening else DEFAULT_TIME
    try:
        parts = [(m, read_time(m)) for m in found]
    except DateError as exc:
        raise ScheduleError("schedule.unreadable", str(exc)) from exc
    exact = [p.time for m, p in parts if not (m.re is WORD and p.note)]
    times = set(exact or [p.time for _, p in parts])
    if len(times) > 1:
        raise ScheduleError("schedule.several", f"more than one time: {sorted(times)}")
    at = times.pop()
    if not evening:
        return at
    m, part = next((m, p) for m, p in parts if p.time == at)
    if m.re is not WORD and m[1]:  # the time has its own word (晩9時, 深夜2時): the reader's
        return at
    said = at.hour - 12 if part.note and m.re is not WORD else at.hour  # 2時 read as 14:00
    return at.replace(hour=night_hour(said, evening[0]))


def _inside(m: re.Match[str], other: re.Match[str]) -> bool:
    """Whether match ``m`` lies within a longer match ``other``."""
    return (
        other is not m and other.start() <= m.start() and m.end() <= other.end() and len(other[0]) > len(m[0])
    )


def _weekdays(text: str) -> tuple[int, ...]:
    days = {WEEKDAYS.index(m[1]) for m in _WEEKDAY.finditer(text)}
    if "土日" in text:  # 「土日の朝10時」: Saturday and Sunday
        days |= {5, 6}
    listed = _WEEKLY_LIST.search(text)
    if listed:
        days |= {WEEKDAYS.index(ch) for ch in listed[1] if ch in WEEKDAYS}
    return tuple(sorted(days))


def last_business_day(year: int, month: int) -> date:
    day = month_end(year, month)
    while not business_day(day):
        day -= timedelta(days=1)
    return day


def _kind(text: str) -> tuple[Kind, tuple[int, ...], int | None]:
    if len(_MONTH_DAYS.findall(_LAST_BUSINESS.sub("", _FIRST_BUSINESS.sub("", text)))) > 1:
        raise ScheduleError("schedule.several", f"two days of a month in {text!r}")
    if _LAST_BUSINESS.search(text):  # before 営業日 is read as 平日
        return "monthly", (), LAST_BUSINESS_DAY
    if _FIRST_BUSINESS.search(text):
        return "monthly", (), FIRST_BUSINESS_DAY
    if _WORKDAY.search(text):
        return "weekly", WORKDAYS, None
    if _MONTH_END.search(text):
        return "monthly", (), MONTH_END
    if _MONTH_START.search(text):
        return "monthly", (), 1
    day = _MONTH_DAY.search(text)
    if day:
        n = int(day[1])
        if not 1 <= n <= 31:
            raise ScheduleError("schedule.day", f"no day {n} in a month")
        return "monthly", (), n
    days = _weekdays(text)
    # 「毎週月曜」「月曜ごと」, or two days or more (「月曜と木曜の朝」「土日の10時」): a day said alone
    # without 毎週 may be once (「もくようびの夕方」), two days are a week's
    if days and (_EVERY.search(text) or len(days) >= 2):
        return "weekly", days, None
    if _DAILY.search(text):
        return "daily", (), None
    raise ScheduleError("schedule.unreadable", f"no schedule read in {text!r}")


def read(said: str) -> Schedule:
    """The schedule ``said`` names; ``ScheduleError`` when it names none this heartbeat keeps."""
    text = _KANA.sub(lambda m: _KANA_DAYS[m[1]], fold(said).strip())  # すいよう: 水よう
    if _UNSUPPORTED.search(text):
        raise ScheduleError("schedule.unsupported", f"{said!r} is not daily, weekly or monthly")
    kind, weekdays, day = _kind(text)
    at = _time_of(_MONTH_DAY.sub("", text))  # 「毎月15日」's 15 is not an hour
    if at.hour >= QUIET_START or at.hour < QUIET_END:
        raise ScheduleError("schedule.quiet_hours", f"{at:%H:%M} is within the quiet hours")
    business = kind == "weekly" and weekdays == WORKDAYS and "営業日" in text
    return Schedule(kind, at, weekdays, day, business)
