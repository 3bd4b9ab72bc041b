"""The one reader of Japanese date and time expressions (issue 18): pure functions, no store.

``read(text, now, tz=Asia/Tokyo)`` gives a ``Reading`` (date, time, end_date of a range,
is_past, ambiguous + ambiguity, expression, kind) or ``None``; ``read_or_error`` raises a
``DateError`` whose ``code`` tells "not a date" (``date.unreadable``) from "a date that does
not exist" (``date.nonexistent``, ``time.nonexistent``, ``date.range_reversed``).

Two ways to read:

* ``whole=False`` (the default) *searches*: the first expression anywhere in the text
  (「明日の件ですが」 reads 明日). For free text (the legacy brain, the operator command).
* ``whole=True``: the text must be one expression, optionally followed by a tolerated tail
  (までに, まで, 中に, に, 頃; a weekday note such as 「(水)」 belongs to the date). For tool
  parameters (``tools.normalize``, ``policy.values``): 「明日の件」 is not a date there.

House readings (where the brief was silent):

* Past is never moved. A year-less date is the *nearest* one (last, this or next year; ties
  forward): 「11/20」 on 11/24 is this year's with ``is_past``; 「1/5」 on 12/31 is next
  January (ambiguous: another year). 「15日」 alone likewise picks the nearest month.
* Weekdays: a bare 「金曜」 is the coming one, today included; 今週/来週/再来週/先週 count
  Monday-based weeks (今週月曜 may be past); 次の/今度の is the next one strictly after today.
* 週明け: the next Monday after today. 今週中: this week's Friday (the working week); said
  on a Saturday or Sunday it is past and ambiguous. 今月中/月末: the month's last day;
  月初: the next 1st (today on a 1st). 年内: 12/31. 年度末: 3/31 ending the fiscal year
  (April–March). 上旬/中旬/下旬: ranges 1–10, 11–20, 21–end. Nか月後 on a day the month
  lacks: its last day (ambiguous).
* Ranges (「3/5〜3/7」「3/5から3/7まで」「明日から金曜」): ``date`` is the first day,
  ``end_date`` the last, ``deadline`` the last; ``is_past`` when the last day is past.
* Times: see ``dates.times`` (working hours 9–18: 「3時半」 is 15:30, ambiguous).
* Display: ``display_date`` 「11月25日（水）」, ``display_time`` 「15時30分」,
  ``display_reading``.

>>> from datetime import datetime
>>> r = read("11/20", datetime(2026, 11, 24, 10, 0, tzinfo=JST))
>>> r.date.isoformat(), r.is_past, display_reading(r)
('2026-11-20', True, '11月20日（金）')
>>> read("3時半", datetime(2026, 11, 24, 10, 0, tzinfo=JST)).time.isoformat()
'15:30:00'
"""

from __future__ import annotations

from shared_lib.dates.display import display_date, display_reading, display_time
from shared_lib.dates.model import JST, WEEKDAYS, DateError, Reading
from shared_lib.dates.reader import at_midnight, find, read, read_or_error

__all__ = [
    "JST",
    "WEEKDAYS",
    "DateError",
    "Reading",
    "at_midnight",
    "display_date",
    "display_reading",
    "display_time",
    "find",
    "read",
    "read_or_error",
]
