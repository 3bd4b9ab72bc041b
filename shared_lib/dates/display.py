"""Japanese display of dates, times and readings: 「11月25日（水）」「15時30分」."""

from __future__ import annotations

from datetime import date, time

from shared_lib.dates.model import WEEKDAYS, Reading


def display_date(d: date, with_weekday: bool = True, *, today: date | None = None) -> str:
    """「11月25日（水）」 (full-width parentheses); the year is shown when ``today`` is given
    and the year differs from today's: 「2027年1月5日（火）」."""
    year = f"{d.year}年" if today is not None and d.year != today.year else ""
    weekday = f"（{WEEKDAYS[d.weekday()]}）" if with_weekday else ""
    return f"{year}{d.month}月{d.day}日{weekday}"


def display_time(t: time) -> str:
    """「15時30分」, or 「15時」 on the hour."""
    return f"{t.hour}時{t.minute}分" if t.minute else f"{t.hour}時"


def display_reading(reading: Reading, *, today: date | None = None) -> str:
    """The whole reading: 「3月5日（木）〜3月7日（土）」「11月25日（水）15時30分」「15時」."""
    text = ""
    if reading.date is not None:
        text = display_date(reading.date, today=today)
        if reading.end_date is not None:
            text += "〜" + display_date(reading.end_date, today=today)
    if reading.time is not None:
        text += display_time(reading.time)
    return text
