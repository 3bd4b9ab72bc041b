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

* A date without its year or month is the next one, today included (issue 34): 「7/1」 said in
  November is next July, 「15日」 on 12/28 is January 15th, 「9月末」 in February this
  September's end, a bare 「下旬」 past is next month's. A year-less date recently past
  (``RECENT_PAST_DAYS``) read a year ahead is in doubt (``doubt="next_year"``); a weekday
  written beside a date that is not its weekday is ``doubt="weekday"`` (unless it names the
  recent past such day: 「11/20(金)」 on 11/24 is that past Friday). The guardian asks about
  a doubt. Dates with a year and relative words are read as said, past or not.
* Weekdays: a bare 「金曜」 is the coming one, today included until the evening
  (``EVENING_HOUR``, 18:00): 「月曜」 said on a Monday at 23:30 is next Monday (「今日」 stays
  today). 今週/来週/再来週/先週 count Monday-based weeks (今週月曜 may be past); 次の/今度の is
  the next one strictly after today. Kana and typos: 「来週のげつよう」「金よう」.
* Deadline words (``Reading.deadline``; a deadline without a time is due by the end of that
  day): 今日中/本日中/EOD today, 明日中 tomorrow, 金曜中 the coming Friday; 今週中/週内/
  今週いっぱい this week's Friday, the last business day (said on a Saturday or Sunday it is
  past and ambiguous); 来週中 next Friday; 今月中/月内/月末 the month's last day; 月初 the next
  1st (today on a 1st); 週明け/来週頭/来週の頭 the next Monday; 年内 12/31; 年度末 3/31 (April–March).
* Office calendar words (``dates.business``): 今週末/来週末 (Saturday–Sunday, due Friday),
  年明け, GW明け, 年末年始, 第N曜日 (「来月の第2水曜」). 上旬/中旬/下旬: ranges 1–10, 11–20,
  21–end. Nか月後 on a day the month lacks: its last day (ambiguous). N日以内/N週間以内/Nか月以内
  are due the day N日後/N週間後/Nか月後 is (N年後, 半年後 in months); N営業日以内 counts business
  days; 今夜中/今晩までに is today (今夜 before an hour is not read: the guardian asks). 今年/来年/再来年 before a
  month and day (「来年1月5日」「来年の1/5」) says the year: read as said, and so does the era
  (「令和8年12月10日」「R8.12.10」). 「12月頭」「12月初め」 is that month's 1st, as 「来月頭」 is.
  A value may end politely: 「明日中にお願いします」「金曜までによろしく🙏」「1月1日付で」
  「明日中で大丈夫です」「金曜までだと助かります」「明日までにお願いできますか？」.
* Named days and halves (``dates.named``): 元日/大晦日/クリスマス, 仕事始め/正月明け, 連休明け (after the
  next run of three or more days off), お盆明け, 来週前半 (Mon–Wed)/後半 (Thu–Fri)/半ば (Wed), 月の
  前半/後半/半ば, 一両日中 (by tomorrow), 「今夜10時」 (today 22:00), 「明朝」 (tomorrow morning);
  numbers in kanji (「三日以内」「十二月三日」「三営業日以内」; a bare 「一日」 is not read: one day
  as often as the 1st); a value written 「12.10」 is 12/10. Two days or a bare week (「明日か明後日」
  「来週」) stay unread: the guardian asks.
* Ranges (「3/5〜3/7」「3/5から3/7まで」「明日から金曜」): ``date`` is the first day,
  ``end_date`` the last, ``deadline`` the last; ``is_past`` when the last day is past.
* Times: see ``dates.times``, whose table says what 朝イチ (9:00), 午後イチ (13:00), 夕方
  (17:00), 定時 (18:00) … mean (working hours 9–18: 「3時半」 is 15:30, ambiguous); a time
  joins a date: 「明後日の午後」 is the day after tomorrow at 13:00 (approximate). A time alone is
  due today while that time is ahead (「17時までに」 said at 10:00: ``deadline`` today); once it
  has passed (said at 19:00) it has no day, and the guardian asks which.
* Display: ``display_date`` 「11月25日（水）」, ``display_time`` 「15時30分」,
  ``display_reading``.

>>> from datetime import datetime
>>> r = read("12/5", datetime(2026, 11, 24, 10, 0, tzinfo=JST))
>>> r.date.isoformat(), r.is_past, display_reading(r)
('2026-12-05', False, '12月5日（土）')
>>> read("15日", datetime(2026, 12, 28, 22, 0, tzinfo=JST)).date.isoformat()
'2027-01-15'
>>> read("今週末までに", datetime(2026, 11, 24, 10, 0, tzinfo=JST)).deadline.isoformat()
'2026-11-27'
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
