"""A heartbeat task's schedule (seed 001 §17) read from what people type when they give one:
weekly days, weekdays, every morning, month end, a day of the month, full-width digits, kana,
a typo'd weekday, and what it cannot keep (an interval, the quiet hours, no schedule at all);
its next due time across a month's and a year's end, in Japan's time."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta, timezone

import pytest

from shared_lib.features.heartbeat_tasks.state_schedule import (
    FIRST_BUSINESS_DAY,
    LAST_BUSINESS_DAY,
    MONTH_END,
    WORKDAYS,
    Schedule,
    ScheduleError,
    read,
)

JST = timezone(timedelta(hours=9))


@pytest.mark.parametrize(
    ("said", "kind", "at", "weekdays", "day"),
    [
        ("毎週月曜9時", "weekly", time(9), (0,), None),
        ("毎週月曜日の朝９時に", "weekly", time(9), (0,), None),
        ("平日の朝9時", "weekly", time(9), WORKDAYS, None),
        ("営業日の17:30", "weekly", time(17, 30), WORKDAYS, None),
        ("毎朝8:30", "daily", time(8, 30), (), None),
        ("毎朝８：３０", "daily", time(8, 30), (), None),
        ("毎朝", "daily", time(9), (), None),  # 朝 alone is nine, the start of work
        ("毎朝、8時半", "daily", time(8, 30), (), None),  # the exact time over the approximate word
        ("毎日 午後3時", "daily", time(15), (), None),
        ("毎晩8時", "daily", time(20), (), None),
        ("毎晩 9時", "daily", time(21), (), None),
        ("毎晩22時", "daily", time(22), (), None),
        ("平日の夜の８時半", "weekly", time(20, 30), (0, 1, 2, 3, 4), None),
        ("毎日夕方", "daily", time(17), (), None),
        ("月末", "monthly", time(9), (), MONTH_END),
        ("毎月末の17時", "monthly", time(17), (), MONTH_END),
        ("毎月１５日の１０時", "monthly", time(10), (), 15),
        ("毎月31日", "monthly", time(9), (), 31),
        ("毎週月・木の10時半", "weekly", time(10, 30), (0, 3), None),
        ("毎週火曜と金曜 14:00", "weekly", time(14), (1, 4), None),
        ("金曜ごとに夕方5時", "weekly", time(17), (4,), None),
        ("毎週すいようの朝イチ", "weekly", time(9), (2,), None),
        ("毎週かようび 10時", "weekly", time(10), (1,), None),
        ("毎週水よう日の朝イチ", "weekly", time(9), (2,), None),
        # a month's first and last business days, its first day said as offices say it
        ("毎月最終営業日の17時", "monthly", time(17), (), LAST_BUSINESS_DAY),
        ("月末の営業日に", "monthly", time(9), (), LAST_BUSINESS_DAY),
        ("毎月第1営業日の朝10時", "monthly", time(10), (), FIRST_BUSINESS_DAY),
        ("月初の9時半", "monthly", time(9, 30), (), 1),
        # two days or more are a week's even without 毎週 (a day alone may be once: refused below)
        ("月曜と木曜の朝", "weekly", time(9), (0, 3), None),
        ("土日の朝10時", "weekly", time(10), (5, 6), None),
        ("毎月の頭", "monthly", time(9), (), 1),
    ],
)
def test_a_schedule_as_people_say_it(said, kind, at, weekdays, day) -> None:
    # GIVEN what a person typed WHEN it is read
    schedule = read(said)
    # THEN it is the form the person meant
    assert (schedule.kind, schedule.at, schedule.weekdays, schedule.day) == (kind, at, weekdays, day)


@pytest.mark.parametrize(
    ("said", "code"),
    [
        ("隔週月曜9時", "schedule.unsupported"),
        ("毎時", "schedule.unsupported"),
        ("毎月第2金曜の10時", "schedule.unsupported"),
        ("毎月最終金曜", "schedule.unsupported"),
        ("毎月第3営業日", "schedule.unsupported"),
        ("毎月15日と月末", "schedule.several"),  # two days were read as the month's end alone
        ("毎月1日と15日の朝", "schedule.several"),
        ("毎週月曜9時と17時", "schedule.several"),  # two times are two tasks
        ("2時間ごとに", "schedule.unsupported"),
        ("３０分おき", "schedule.unsupported"),
        ("毎朝7時", "schedule.quiet_hours"),
        ("毎晩11時", "schedule.quiet_hours"),
        ("毎晩2時", "schedule.quiet_hours"),  # the small hours, not 14:00
        ("毎晩、1時半", "schedule.quiet_hours"),
        ("毎日深夜3時", "schedule.quiet_hours"),
        ("毎夜12時", "schedule.quiet_hours"),  # midnight
        ("毎日 午前0時", "schedule.quiet_hours"),
        ("毎日23:30", "schedule.quiet_hours"),
        ("よろしくお願いします🙏", "schedule.unreadable"),
        ("来週の月曜", "schedule.unreadable"),  # once, not periodic
        ("もくようびの夕方", "schedule.unreadable"),  # a day without 毎週 or ごと: once
        ("毎月32日", "schedule.day"),
        ("毎日25時", "schedule.unreadable"),
    ],
)
def test_a_schedule_it_cannot_keep_is_refused_with_its_reason(said, code) -> None:
    # GIVEN an interval, a quiet hour, a one-off date or no schedule WHEN read THEN refused, and why
    with pytest.raises(ScheduleError) as err:
        read(said)
    assert err.value.code == code


@pytest.mark.parametrize(
    ("said", "after", "expected"),
    [
        # Thursday 31 December 2026 at noon in Tokyo
        ("毎週月曜9時", datetime(2026, 12, 31, 12, 0, tzinfo=JST), datetime(2027, 1, 4, 9, 0, tzinfo=JST)),
        (
            "毎月末の17時",
            datetime(2026, 12, 31, 12, 0, tzinfo=JST),
            datetime(2026, 12, 31, 17, 0, tzinfo=JST),
        ),
        ("毎月末の17時", datetime(2026, 12, 31, 17, 0, tzinfo=JST), datetime(2027, 1, 31, 17, 0, tzinfo=JST)),
        ("平日の朝9時", datetime(2026, 12, 31, 12, 0, tzinfo=JST), datetime(2027, 1, 1, 9, 0, tzinfo=JST)),
        ("毎朝8:30", datetime(2026, 12, 31, 23, 59, tzinfo=JST), datetime(2027, 1, 1, 8, 30, tzinfo=JST)),
        ("毎月31日", datetime(2027, 1, 31, 10, 0, tzinfo=JST), datetime(2027, 2, 28, 9, 0, tzinfo=JST)),
        ("月末", datetime(2028, 2, 1, 9, 0, tzinfo=JST), datetime(2028, 2, 29, 9, 0, tzinfo=JST)),
        # Friday evening: the weekdays skip the weekend
        ("平日の朝9時", datetime(2026, 11, 27, 18, 0, tzinfo=JST), datetime(2026, 11, 30, 9, 0, tzinfo=JST)),
        # 営業日 skips the national holidays and 年末年始 (平日 is Monday to Friday, as calendars say)
        ("営業日の朝9時", datetime(2026, 12, 31, 12, 0, tzinfo=JST), datetime(2027, 1, 4, 9, 0, tzinfo=JST)),
        ("営業日の朝9時", datetime(2027, 1, 8, 12, 0, tzinfo=JST), datetime(2027, 1, 12, 9, 0, tzinfo=JST)),
        # the month's last business day: 12/31 is in 年末年始, so 12/28; January's 29th is a Friday
        (
            "毎月最終営業日の17時",
            datetime(2026, 12, 1, 9, 0, tzinfo=JST),
            datetime(2026, 12, 28, 17, 0, tzinfo=JST),
        ),
        (
            "毎月最終営業日の17時",
            datetime(2026, 12, 28, 17, 0, tzinfo=JST),
            datetime(2027, 1, 29, 17, 0, tzinfo=JST),
        ),
        (
            "毎月第1営業日の10時",
            datetime(2026, 12, 2, 9, 0, tzinfo=JST),
            datetime(2027, 1, 4, 10, 0, tzinfo=JST),
        ),
        # a UTC clock on Sunday 23:30 UTC is Monday 08:30 in Tokyo: due today, not next week
        ("毎週月曜9時", datetime(2026, 11, 29, 23, 30, tzinfo=UTC), datetime(2026, 11, 30, 9, 0, tzinfo=JST)),
    ],
)
def test_the_next_due_time_in_japans_time(said, after, expected) -> None:
    # GIVEN a schedule WHEN its next due time after a moment is asked THEN it is the next one, strictly after
    assert read(said).next_due(after) == expected


def test_a_due_time_itself_is_not_due_again() -> None:
    # GIVEN a Monday task WHEN asked right at its due time THEN the next is a week later
    due = datetime(2026, 11, 30, 9, 0, tzinfo=JST)
    assert read("毎週月曜9時").next_due(due) == due + timedelta(days=7)


@pytest.mark.parametrize(
    "said",
    [
        "毎週月曜9時",
        "平日の朝8:30",
        "営業日の朝8:30",
        "毎月末の17時",
        "毎月最終営業日",
        "毎月15日",
        "毎晩8時",
        "毎週火曜と金曜 14:00",
    ],
)
def test_a_schedule_is_stored_and_read_back_as_it_was(said) -> None:
    # GIVEN a schedule WHEN stored as a document and read back THEN it is the same, and says itself the same
    schedule = read(said)
    again = Schedule.from_doc(schedule.to_doc())
    assert again == schedule and again.describe() == schedule.describe()


def test_the_words_a_person_reads_back() -> None:
    assert read("毎週月曜9時").describe() == "毎週月曜 9:00"
    assert read("平日の朝８：３０").describe() == "平日 8:30"
    assert read("毎月末の17時").describe() == "毎月末 17:00"
    assert read("毎月最終営業日の17時").describe() == "毎月最終営業日 17:00"
    assert read("営業日の朝9時").describe() == "営業日 9:00"
    assert read("毎週火曜と金曜 14:00").describe() == "毎週火曜・金曜 14:00"
