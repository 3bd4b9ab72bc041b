"""Japan's national holidays (国民の祝日に関する法律, as in force since 2020), computed: no table to
keep up to date, no download.

* Fixed days: 元日 1/1, 建国記念の日 2/11, 天皇誕生日 2/23, 昭和の日 4/29, 憲法記念日 5/3,
  みどりの日 5/4, こどもの日 5/5, 山の日 8/11, 文化の日 11/3, 勤労感謝の日 11/23.
* Happy Monday: 成人の日 (2nd Monday of January), 海の日 (3rd of July), 敬老の日 (3rd of
  September), スポーツの日 (2nd of October).
* 春分の日 and 秋分の日 by the usual approximation (exact for 1980–2099 against the almanac's
  announcements so far).
* 振替休日: a holiday on a Sunday moves the rest to the next day that is not a holiday.
  国民の休日: a day between two holidays is one (2026's 9/22).

The one-off changes of 2020 and 2021 (the Olympics) are not kept: a deadline is in the future.

>>> from datetime import date
>>> [d.isoformat() for d in sorted(holidays(2026)) if d.month in (5, 9)]
['2026-05-03', '2026-05-04', '2026-05-05', '2026-05-06', '2026-09-21', '2026-09-22', '2026-09-23']
>>> is_holiday(date(2026, 11, 3)), is_holiday(date(2026, 11, 4))
(True, False)
"""

from __future__ import annotations

from datetime import date, timedelta
from functools import lru_cache

_FIXED = ((1, 1), (2, 11), (2, 23), (4, 29), (5, 3), (5, 4), (5, 5), (8, 11), (11, 3), (11, 23))
_HAPPY_MONDAYS = ((1, 2), (7, 3), (9, 3), (10, 2))  # (month, which Monday)


def _nth_monday(year: int, month: int, n: int) -> date:
    first = date(year, month, 1)
    return first + timedelta(days=(0 - first.weekday()) % 7 + 7 * (n - 1))


def _equinox(year: int, base: float) -> int:
    return int(base + 0.242194 * (year - 1980) - (year - 1980) // 4)


@lru_cache(maxsize=64)
def holidays(year: int) -> frozenset[date]:
    """Every national holiday of ``year``, substitute and in-between days included."""
    days = {date(year, m, d) for m, d in _FIXED}
    days |= {_nth_monday(year, m, n) for m, n in _HAPPY_MONDAYS}
    days |= {date(year, 3, _equinox(year, 20.8431)), date(year, 9, _equinox(year, 23.2488))}
    for day in sorted(days):  # 振替休日: the next day that is not a holiday
        if day.weekday() == 6:
            moved = day + timedelta(days=1)
            while moved in days:
                moved += timedelta(days=1)
            days.add(moved)
    between = {
        day + timedelta(days=1)
        for day in days
        if day + timedelta(days=2) in days and day + timedelta(days=1) not in days
    }
    days |= {d for d in between if d.weekday() != 6}  # 国民の休日 (a Sunday stays a Sunday)
    return frozenset(d for d in days if d.year == year)


def is_holiday(day: date) -> bool:
    return day in holidays(day.year)
