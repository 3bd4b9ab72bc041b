"""The one date reader (``shared_lib.dates.read``) on a table of expressions and clocks.

Each row: ``text | clock | date | time | end_date | flags``. ``flags`` holds ``P`` when the
reading is past, ``A`` when it is ambiguous and ``D`` when it is in doubt (the guardian asks). A text starting with ``=`` is read whole
(the tool-parameter path); others are searched. ``date`` ``none`` means nothing was read;
``!code`` means ``read_or_error`` raises a ``DateError`` with that code (and ``read`` gives
``None``). Clocks are in Tokyo:

    W  Tue 2026-11-24 10:00    E  Tue 2026-11-24 20:00    S  Sat 2026-11-28 10:00
    J  Wed 2026-01-28 12:00    Y  Thu 2026-12-31 10:00    F  Tue 2028-02-15 10:00 (leap year)
    M  Sun 2027-01-31 10:00
"""

from __future__ import annotations

from datetime import date, datetime, time

import pytest

from shared_lib.dates import JST, DateError, read, read_or_error

CLOCKS = {
    "W": datetime(2026, 11, 24, 10, 0, tzinfo=JST),
    "E": datetime(2026, 11, 24, 20, 0, tzinfo=JST),
    "S": datetime(2026, 11, 28, 10, 0, tzinfo=JST),
    "J": datetime(2026, 1, 28, 12, 0, tzinfo=JST),
    "Y": datetime(2026, 12, 31, 10, 0, tzinfo=JST),
    "F": datetime(2028, 2, 15, 10, 0, tzinfo=JST),
    "M": datetime(2027, 1, 31, 10, 0, tzinfo=JST),
}

TABLE = """
11/20                  | W | 2027-11-20 | -     | -          | AD
11/20までに            | W | 2027-11-20 | -     | -          | AD
11月20日               | W | 2027-11-20 | -     | -          | AD
１１／２０             | W | 2027-11-20 | -     | -          | AD
11/24                  | W | 2026-11-24 | -     | -          |
11/25                  | W | 2026-11-25 | -     | -          |
12/5                   | W | 2026-12-05 | -     | -          |
12／5                  | W | 2026-12-05 | -     | -          |
12月5日(土)            | W | 2026-12-05 | -     | -          |
12月5日（土）          | W | 2026-12-05 | -     | -          |
12月5日(金)            | W | 2026-12-05 | -     | -          | AD
2026-03-05             | W | 2026-03-05 | -     | -          | P
2026/3/5               | W | 2026-03-05 | -     | -          | P
2026年3月5日           | W | 2026-03-05 | -     | -          | P
2027-03-05             | W | 2027-03-05 | -     | -          |
2027/3/5               | W | 2027-03-05 | -     | -          |
2027年3月5日           | W | 2027-03-05 | -     | -          |
２０２７年３月５日     | W | 2027-03-05 | -     | -          |
2027.3.5               | W | 2027-03-05 | -     | -          |
3/5                    | W | 2027-03-05 | -     | -          | A
3月5日                 | W | 2027-03-05 | -     | -          | A
5/20                   | W | 2027-05-20 | -     | -          | A
6/1                    | W | 2027-06-01 | -     | -          | A
今日                   | W | 2026-11-24 | -     | -          |
本日                   | W | 2026-11-24 | -     | -          |
明日                   | W | 2026-11-25 | -     | -          |
明後日                 | W | 2026-11-26 | -     | -          |
明々後日               | W | 2026-11-27 | -     | -          |
しあさって             | W | 2026-11-27 | -     | -          |
昨日                   | W | 2026-11-23 | -     | -          | P
一昨日                 | W | 2026-11-22 | -     | -          | P
おととい               | W | 2026-11-22 | -     | -          | P
3日後                  | W | 2026-11-27 | -     | -          |
１０日後               | W | 2026-12-04 | -     | -          |
2週間後                | W | 2026-12-08 | -     | -          |
1か月後                | W | 2026-12-24 | -     | -          |
3ヶ月後                | W | 2027-02-24 | -     | -          |
1ヶ月後                | M | 2027-02-28 | -     | -          | A
金曜                   | W | 2026-11-27 | -     | -          |
金曜日                 | W | 2026-11-27 | -     | -          |
火曜                   | W | 2026-11-24 | -     | -          |
月曜                   | W | 2026-11-30 | -     | -          |
今週金曜               | W | 2026-11-27 | -     | -          |
今週月曜               | W | 2026-11-23 | -     | -          | P
来週金曜               | W | 2026-12-04 | -     | -          |
来週の金曜日           | W | 2026-12-04 | -     | -          |
再来週の月曜           | W | 2026-12-07 | -     | -          |
再来週月曜             | W | 2026-12-07 | -     | -          |
次の金曜               | W | 2026-11-27 | -     | -          |
次の火曜               | W | 2026-12-01 | -     | -          |
先週金曜               | W | 2026-11-20 | -     | -          | P
月末                   | W | 2026-11-30 | -     | -          |
今月末                 | W | 2026-11-30 | -     | -          |
来月末                 | W | 2026-12-31 | -     | -          |
月初                   | W | 2026-12-01 | -     | -          |
来月初め               | W | 2026-12-01 | -     | -          |
週明け                 | W | 2026-11-30 | -     | -          |
今週中                 | W | 2026-11-27 | -     | -          |
来週中                 | W | 2026-12-04 | -     | -          |
今月中                 | W | 2026-11-30 | -     | -          |
年内                   | W | 2026-12-31 | -     | -          |
年度末                 | W | 2027-03-31 | -     | -          |
上旬                   | W | 2026-12-01 | -     | 2026-12-10 |
中旬                   | W | 2026-12-11 | -     | 2026-12-20 |
下旬                   | W | 2026-11-21 | -     | 2026-11-30 |
来月上旬               | W | 2026-12-01 | -     | 2026-12-10 |
12月中旬               | W | 2026-12-11 | -     | 2026-12-20 |
3月下旬                | W | 2027-03-21 | -     | 2027-03-31 | A
3/5〜3/7               | W | 2027-03-05 | -     | 2027-03-07 | A
12/5〜12/7             | W | 2026-12-05 | -     | 2026-12-07 |
12/5から12/7まで       | W | 2026-12-05 | -     | 2026-12-07 |
12/5~12/7              | W | 2026-12-05 | -     | 2026-12-07 |
12/5～12/7             | W | 2026-12-05 | -     | 2026-12-07 |
12/5-12/7              | W | 2026-12-05 | -     | 2026-12-07 |
12/28〜1/5             | W | 2026-12-28 | -     | 2027-01-05 |
12/5〜7日              | W | 2026-12-05 | -     | 2026-12-07 |
明日から金曜まで       | W | 2026-11-25 | -     | 2026-11-27 |
11/20〜11/30           | W | 2026-11-20 | -     | 2026-11-30 |
11/1〜11/10            | W | 2027-11-01 | -     | 2027-11-10 | AD
15:30                  | W | -          | 15:30 | -          |
１５：３０             | W | -          | 15:30 | -          |
15時                   | W | -          | 15:00 | -          |
15時半                 | W | -          | 15:30 | -          |
3時半                  | W | -          | 15:30 | -          | A
３時半                 | W | -          | 15:30 | -          | A
午前3時半              | W | -          | 03:30 | -          |
午後3時                | W | -          | 15:00 | -          |
午前10時               | W | -          | 10:00 | -          |
10時                   | W | -          | 10:00 | -          |
8時                    | W | -          | 08:00 | -          |
7時                    | W | -          | 19:00 | -          | A
1時                    | W | -          | 13:00 | -          | A
12時                   | W | -          | 12:00 | -          |
0時                    | W | -          | 00:00 | -          |
03:30                  | W | -          | 03:30 | -          |
3:30                   | W | -          | 15:30 | -          | A
9:05                   | W | -          | 09:05 | -          |
正午                   | W | -          | 12:00 | -          |
夕方                   | W | -          | 17:00 | -          | A
朝一                   | W | -          | 09:00 | -          |
夜                     | W | -          | 19:00 | -          | A
午前中                 | W | -          | 12:00 | -          |
夜8時                  | W | -          | 20:00 | -          |
夜2時半                | W | -          | 02:30 | -          |
夜の9時                | W | -          | 21:00 | -          |
夜12時                 | W | -          | 00:00 | -          |
晩8時                  | W | -          | 20:00 | -          |
深夜2時                | W | -          | 02:00 | -          |
深夜１１時             | W | -          | 23:00 | -          |
夜中の3時              | W | -          | 03:00 | -          |
早朝5時                | W | -          | 05:00 | -          |
明け方4:30             | W | -          | 04:30 | -          |
夜22時                 | W | -          | 22:00 | -          |
午後12時               | W | -          | 12:00 | -          |
10時15分               | W | -          | 10:15 | -          |
明日15時               | W | 2026-11-25 | 15:00 | -          |
明日の15時             | W | 2026-11-25 | 15:00 | -          |
明日 15:00             | W | 2026-11-25 | 15:00 | -          |
今日15時               | W | 2026-11-24 | 15:00 | -          |
今日9時                | W | 2026-11-24 | 09:00 | -          | P
来週金曜の午後3時      | W | 2026-12-04 | 15:00 | -          |
12/5 10:00             | W | 2026-12-05 | 10:00 | -          |
2026-12-05T10:00       | W | 2026-12-05 | 10:00 | -          |
明日の件ですが         | W | 2026-11-25 | -     | -          |
田中さんに明日までにお願い | W | 2026-11-25 | -  | -          |
会議は来週金曜の15時からです | W | 2026-12-04 | 15:00 | -      |
資料は12/5までに       | W | 2026-12-05 | -     | -          |
納期は月末です         | W | 2026-11-30 | -     | -          |
3時半に集合            | W | -          | 15:30 | -          | A
明日香さんに連絡       | W | none       | -     | -          |
いつか                 | W | none       | -     | -          |
よろしくお願いします   | W | none       | -     | -          |
3時間かかります        | W | none       | -     | -          |
3日間の出張            | W | none       | -     | -          |
2/30                   | W | !date.nonexistent | - | -       |
2026-02-30             | W | !date.nonexistent | - | -       |
13/40                  | W | !date.nonexistent | - | -       |
4/31                   | W | !date.nonexistent | - | -       |
25:00                  | W | !time.nonexistent | - | -       |
12:75                  | W | !time.nonexistent | - | -       |
午前15時               | W | !time.nonexistent | - | -       |
12/7〜12/5             | W | !date.range_reversed | - | -    |
=明日の件              | W | !date.unreadable | -  | -        |
=明日まで              | W | 2026-11-25 | -     | -          |
=12/5(土)に            | W | 2026-12-05 | -     | -          |
=来週金曜までに        | W | 2026-12-04 | -     | -          |
=　明日　              | W | 2026-11-25 | -     | -          |
=15時頃                | W | -          | 15:00 | -          |
=明日15時まで          | W | 2026-11-25 | 15:00 | -          |
=いつか                | W | !date.unreadable | -  | -        |
月末                   | F | 2028-02-29 | -     | -          |
今月中                 | F | 2028-02-29 | -     | -          |
下旬                   | F | 2028-02-21 | -     | 2028-02-29 |
2/29                   | F | 2028-02-29 | -     | -          |
2028-02-29             | F | 2028-02-29 | -     | -          |
2027-02-29             | F | !date.nonexistent | - | -       |
来月末                 | F | 2028-03-31 | -     | -          |
年度末                 | F | 2028-03-31 | -     | -          |
2週間後                | F | 2028-02-29 | -     | -          |
来週月曜               | Y | 2027-01-04 | -     | -          |
来週金曜               | Y | 2027-01-08 | -     | -          |
1/5                    | Y | 2027-01-05 | -     | -          | A
明日                   | Y | 2027-01-01 | -     | -          |
週明け                 | Y | 2027-01-04 | -     | -          |
年内                   | Y | 2026-12-31 | -     | -          |
来月末                 | Y | 2027-01-31 | -     | -          |
今週中                 | Y | 2027-01-01 | -     | -          |
12/31                  | Y | 2026-12-31 | -     | -          |
12/25                  | Y | 2027-12-25 | -     | -          | AD
金曜                   | Y | 2027-01-01 | -     | -          |
1月上旬                | Y | 2027-01-01 | -     | 2027-01-10 | A
12/28〜1/5             | Y | 2026-12-28 | -     | 2027-01-05 |
3日後                  | Y | 2027-01-03 | -     | -          |
年度末                 | Y | 2027-03-31 | -     | -          |
12/28                  | J | 2026-12-28 | -     | -          | AD
1/5                    | J | 2027-01-05 | -     | -          | AD
年度末                 | J | 2026-03-31 | -     | -          |
15日                   | J | 2026-02-15 | -     | -          | A
3日                    | J | 2026-02-03 | -     | -          | A
30日                   | J | 2026-01-30 | -     | -          |
来月10日               | J | 2026-02-10 | -     | -          |
週明け                 | J | 2026-02-02 | -     | -          |
月初                   | J | 2026-02-01 | -     | -          |
今週中                 | S | 2026-11-27 | -     | -          | PA
週明け                 | S | 2026-11-30 | -     | -          |
金曜                   | S | 2026-12-04 | -     | -          |
次の土曜               | S | 2026-12-05 | -     | -          |
土曜                   | S | 2026-11-28 | -     | -          |
今日15時               | E | 2026-11-24 | 15:00 | -          | P
今日21時               | E | 2026-11-24 | 21:00 | -          |
明日9時                | E | 2026-11-25 | 09:00 | -          |
"""


def rows() -> list[tuple[str, ...]]:
    out = []
    for line in TABLE.strip().splitlines():
        text, clock, day, at, end, flags = (c.strip() for c in line.split("|"))
        out.append((text, clock, day, at, end, flags))
    return out


def _day(value: str) -> date | None:
    return None if value == "-" else date.fromisoformat(value)


def _time(value: str) -> time | None:
    return None if value == "-" else time.fromisoformat(value)


def test_the_table_has_at_least_150_expressions():
    assert len(rows()) >= 150


@pytest.mark.parametrize(
    ("text", "clock", "day", "at", "end", "flags"), rows(), ids=[r[0] + "@" + r[1] for r in rows()]
)
def test_given_an_expression_and_a_clock_when_read_then_the_reading_is_the_table_row(
    text, clock, day, at, end, flags
):
    whole = text.startswith("=")
    said, now = text.removeprefix("="), CLOCKS[clock]
    if day.startswith("!"):
        with pytest.raises(DateError) as caught:
            read_or_error(said, now, whole=whole)
        assert caught.value.code == day[1:]
        assert read(said, now, whole=whole) is None
        return
    reading = read(said, now, whole=whole)
    if day == "none":
        assert reading is None
        return
    assert reading is not None
    got = (reading.date, reading.time, reading.end_date, reading.is_past, reading.ambiguous)
    assert got == (_day(day), _time(at), _day(end), "P" in flags, "A" in flags), reading
    assert (reading.doubt is not None) == ("D" in flags), reading
    assert reading.ambiguous == (reading.ambiguity is not None)
    assert reading.expression and reading.expression in said
