"""Japan's national holidays as the Cabinet Office publishes them (``dates.holidays``), and the
business days counted around them: written from the published lists, never from the code."""

from __future__ import annotations

from datetime import date

import pytest

from shared_lib.dates.business import business_day
from shared_lib.dates.holidays import holidays

PUBLISHED = {
    2026: "1/1 1/12 2/11 2/23 3/20 4/29 5/3 5/4 5/5 5/6 7/20 8/11 9/21 9/22 9/23 10/12 11/3 11/23",
    2027: "1/1 1/11 2/11 2/23 3/21 3/22 4/29 5/3 5/4 5/5 7/19 8/11 9/20 9/23 10/11 11/3 11/23",
}


@pytest.mark.parametrize("year", sorted(PUBLISHED))
def test_the_holidays_of_a_year_are_the_published_ones(year):
    expected = {date(year, *map(int, md.split("/"))) for md in PUBLISHED[year].split()}
    assert set(holidays(year)) == expected


@pytest.mark.parametrize(
    ("day", "working"),
    [
        (date(2026, 11, 3), False),  # 文化の日, a Tuesday
        (date(2026, 9, 22), False),  # 国民の休日 between 敬老の日 and 秋分の日
        (date(2027, 3, 22), False),  # 振替休日: 春分の日 fell on a Sunday
        (date(2026, 12, 28), True),  # 仕事納め
        (date(2026, 12, 29), False),  # 年末年始, the offices' own
        (date(2027, 1, 4), True),
        (date(2026, 11, 24), True),
    ],
)
def test_a_business_day_is_a_weekday_that_is_no_holiday(day, working):
    assert business_day(day) is working
