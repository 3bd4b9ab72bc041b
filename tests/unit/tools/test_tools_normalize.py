"""Fixed-logic normalisation of dates and times in Japan time, relative to a fixed clock."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from tool_fakes import NOW

from shared_lib.tools.normalize import clean_text, normalize_date, normalize_deadline, normalize_time
from shared_lib.tools.registry import ToolInputError

# NOW is Wednesday 2026-01-28 12:00 in Tokyo (03:00 UTC)


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("今日", "2026-01-28"),
        ("本日", "2026-01-28"),
        ("明日", "2026-01-29"),
        ("あした", "2026-01-29"),
        ("明後日", "2026-01-30"),
        ("あさって", "2026-01-30"),
        ("明日まで", "2026-01-29"),
        ("明日までに", "2026-01-29"),
        ("来週金曜", "2026-02-06"),
        ("来週の金曜日", "2026-02-06"),
        ("今週金曜", "2026-01-30"),
        ("金曜", "2026-01-30"),
        ("月曜日", "2026-02-02"),
        ("水曜", "2026-01-28"),
        ("再来週月曜", "2026-02-09"),
        ("月末", "2026-01-31"),
        ("今月末", "2026-01-31"),
        ("来月末", "2026-02-28"),
        ("3日後", "2026-01-31"),
        ("2週間後", "2026-02-11"),
        ("2026-03-05", "2026-03-05"),
        ("2026/3/5", "2026-03-05"),
        ("2026年3月5日", "2026-03-05"),
        ("3/5", "2026-03-05"),
        ("3月5日", "2026-03-05"),
        ("3/5(木)", "2026-03-05"),
        ("１月３１日", "2026-01-31"),
        ("5/5", "2026-05-05"),
        ("30日", "2026-01-30"),
        # the nearest 3rd: next month's (6 days) rather than this month's (25 days ago)
        ("3日", "2026-02-03"),
        ("今週中", "2026-01-30"),
        ("週明け", "2026-02-02"),
        ("3/5〜3/7", "2026-03-07"),  # a range's deadline is its last day
        ("来月10日", "2026-02-10"),
    ],
)
def test_given_a_japanese_date_expression_when_normalised_then_it_is_the_iso_date_in_japan(expr, expected):
    assert normalize_date(expr, NOW) == expected


def test_given_late_evening_utc_when_normalised_then_the_japanese_calendar_day_is_used():
    # GIVEN 23:30 UTC on the 28th, which is already the 29th in Tokyo
    late = datetime(2026, 1, 28, 23, 30, tzinfo=UTC)
    # WHEN "today" and "tomorrow" are normalised THEN they are Tokyo's days
    assert normalize_date("今日", late) == "2026-01-29"
    assert normalize_date("明日", late) == "2026-01-30"


@pytest.mark.parametrize("expr", ["いつか", "2026-02-30", "13/40", "きのう", "明日の件"])
def test_given_a_date_that_cannot_be_read_or_does_not_exist_when_normalised_then_it_is_an_input_error(expr):
    with pytest.raises(ToolInputError) as err:
        normalize_date(expr, NOW)
    assert err.value.field == "limit_date"


def test_given_a_deadline_in_the_past_when_normalised_then_it_is_refused_unless_allowed():
    with pytest.raises(ToolInputError, match="過去"):
        normalize_date("2026-01-01", NOW)
    assert normalize_date("2026-01-01", NOW, allow_past=True) == "2026-01-01"


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("1/5", "2027-01-05"),  # a year-less day already past is the next one (issue 34)
        ("15日", "2026-02-15"),  # a month-less day already past: next month's
        ("１月２８日", "2026-01-28"),  # today is today
        ("1/20(火)", None),  # the written weekday pins last Tuesday: past, refused unless confirmed
    ],
)
def test_given_a_year_less_date_already_past_when_normalised_then_it_is_the_next_one(expr, expected):
    if expected is None:
        with pytest.raises(ToolInputError, match=r"1月20日（火）.*過去"):
            normalize_date(expr, NOW)
        assert normalize_date(expr, NOW, allow_past=True) == "2026-01-20"
        return
    assert normalize_date(expr, NOW) == expected


def test_given_deadline_words_when_normalised_then_the_day_and_the_time_they_say():
    # GIVEN Wednesday 2026-01-28 12:00 in Tokyo
    assert normalize_deadline("今日中", NOW) == ("2026-01-28", None)
    assert normalize_deadline("EOD", NOW) == ("2026-01-28", None)
    assert normalize_deadline("明日の朝イチ", NOW) == ("2026-01-29", "09:00")
    assert normalize_deadline("今週末まで", NOW) == ("2026-01-30", None)  # due Friday, not Sunday
    assert normalize_deadline("金曜中", NOW) == ("2026-01-30", None)
    assert normalize_deadline("明後日の午後イチ", NOW) == ("2026-01-30", "13:00")


def test_given_no_date_when_normalised_then_none_stays_none():
    assert normalize_date(None, NOW) is None
    assert normalize_date("  ", NOW) is None


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("15:30", "15:30"),
        ("9:05", "09:05"),
        ("15時", "15:00"),
        ("15時半", "15:30"),
        ("午後3時", "15:00"),
        ("午前10時15分", "10:15"),
        ("１８：００", "18:00"),
        ("3時半", "15:30"),  # working hours: a bare 1–7 is the afternoon
        ("午前3時半", "03:30"),
        ("03:30", "03:30"),
        ("夕方", "17:00"),
        ("正午", "12:00"),
    ],
)
def test_given_a_time_expression_when_normalised_then_it_is_hh_mm(expr, expected):
    assert normalize_time(expr) == expected


@pytest.mark.parametrize("expr", ["25:00", "いつか", "12:75", "午前15時"])
def test_given_an_impossible_time_when_normalised_then_it_is_an_input_error(expr):
    with pytest.raises(ToolInputError):
        normalize_time(expr)


def test_given_text_with_odd_blanks_when_cleaned_then_blanks_collapse_and_lines_stay():
    assert clean_text("　見積書を\t 作成 \n\n 明日まで ") == "見積書を 作成\n明日まで"
