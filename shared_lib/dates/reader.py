"""``read``: the one reader of date and time expressions (see the package docstring)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from shared_lib.dates.business import BUSINESS_ATOMS
from shared_lib.dates.days import ATOMS as DAY_ATOMS
from shared_lib.dates.days import BARE_DAY, RANGE_SEP, Part, Reader, checked, weekday_index
from shared_lib.dates.model import JST, DateError, Kind, Reading, fold, number
from shared_lib.dates.named import NAMED_ATOMS
from shared_lib.dates.times import TIME_ATOMS, TimePart, read_time

ATOMS = DAY_ATOMS + BUSINESS_ATOMS + NAMED_ATOMS
# what a parameter value may carry after its expression: 「明日まで」「3/5(木)に」「15時頃」
# 「今日中」「金曜中」 (by the end of that day: the deadline is the day), 「15日〆で」「朝イチで」,
# 「1月1日付で」, and a polite ending 「明日中にお願いします」「金曜までによろしく」
_TAIL = re.compile(
    r"\s?(?:中|いっぱい)?(?:までに|まで|迄に|迄|頃まで|頃|ごろ|くらい|ぐらい|に|で|締め切り|締切り?|〆切り?|〆|"
    r"締め|期限|厳守|必着|付け?)*"
    r"(?:だと|でも|が|を|で)?(?:お願い(?:します|いたします|致します|できますか|できますでしょうか|したいです)?|"
    r"よろしく(?:お願いします|です)?|大丈夫(?:です)?|助かります|嬉しいです|うれしいです|希望(?:です)?|"
    r"(?:OK|ok|オッケー|いい|良い)(?:です)?|(?:して)?(?:ください|下さい)|です|ね|よ|でしょうか)*"
    r"[\s。.!！?？~〜♪☆★\u2600-\u27bf\U0001f300-\U0001faff]*"
)
# 「12.10」: a value written month.day (not in free text, where 「1.5倍」 is a number)
_DOTTED = re.compile(r"(\s*\d{1,2})\.(\d{1,2})(?![\d.])")
_WEEKDAY_END = re.compile(r"([月火水木金土日])(?:曜日?)?(?![\d/月末初中旬])")
_JOIN = re.compile(r"\s?(?:の|T|\s)?\s?")


@dataclass(frozen=True, slots=True)
class _Found:
    start: int
    end: int
    part: Part | None
    time: TimePart | None


def _longest(
    atoms: tuple[tuple[re.Pattern[str], Reader], ...], text: str, pos: int
) -> tuple[re.Match[str], Reader] | None:
    best: tuple[re.Match[str], Reader] | None = None
    for pattern, reader in atoms:
        m = pattern.match(text, pos)
        if m and m.end() > m.start() and (best is None or m.end() > best[0].end()):
            best = (m, reader)
    return best


def _time_at(text: str, pos: int) -> re.Match[str] | None:
    found = [m for p in TIME_ATOMS if (m := p.match(text, pos)) and m.end() > m.start()]
    return max(found, key=lambda m: m.end()) if found else None


def _range_end(text: str, pos: int, start: Part, now: datetime) -> tuple[date, int] | None:
    sep = RANGE_SEP.match(text, pos)
    if not sep:
        return None
    hit = _longest(ATOMS, text, sep.end())
    if start.kind == "weekday" and (wd := _WEEKDAY_END.match(text, sep.end())):
        # 「来週月〜水」「月曜〜金曜」: the end weekday of the start's week (or the one after it)
        end = start.date + timedelta(days=(weekday_index(wd[1]) - start.date.weekday()) % 7)
        return end, wd.end()
    if hit is not None:
        m, reader = hit
        if reader.__name__ == "_month_day":  # a year-less end follows the start's year
            end = checked(start.date.year, number(m[1]), number(m[2]), m[0])
            if end.month < start.date.month:  # 「12/28〜1/5」 crosses the year end
                end = checked(start.date.year + 1, number(m[1]), number(m[2]), m[0])
        elif reader.__name__ == "_day_only" and not m[1]:  # 「3/5〜7日」: the start's month
            end = checked(start.date.year, start.date.month, number(m[2]), m[0])
        else:
            end = reader(m, now).date
        stop = m.end()
    elif (bare := BARE_DAY.match(text, sep.end())) and start.kind == "absolute":
        end, stop = checked(start.date.year, start.date.month, int(bare[1]), bare[0]), bare.end()
    else:
        return None
    if end < start.date:
        raise DateError("date.range_reversed", "範囲の終わりが始まりより前です", expression=text[pos:stop])
    return end, stop


def _in_progress(text: str, pos: int, start: Part, now: datetime) -> tuple[Part, tuple[date, int]] | None:
    """A year-less range that began a year before the next such start and has not ended
    (「11/20〜11/30」 on 11/24) is the one in progress, not next year's."""
    try:
        earlier = Part(start.date.replace(year=start.date.year - 1), note=None)
        ranged = _range_end(text, pos, earlier, now)
    except (ValueError, DateError):
        return None
    return (earlier, ranged) if ranged and ranged[0] >= now.date() else None


def _scan_at(text: str, pos: int, now: datetime) -> _Found | None:
    """The longest date (and range, and time) expression starting at ``pos``, or a time alone."""
    hit = _longest(ATOMS, text, pos)
    if hit is None:
        t = _time_at(text, pos)
        return _Found(pos, t.end(), None, read_time(t)) if t else None
    m, reader = hit
    part, end = reader(m, now), m.end()
    if ranged := _range_end(text, end, part, now):
        if reader.__name__ == "_month_day" and (earlier := _in_progress(text, end, part, now)):
            part, ranged = earlier
        part = Part(part.date, ranged[0], "range", part.note, part.year_said, doubt=part.doubt)
        end = ranged[1]
    joined = _JOIN.match(text, end)
    t = _time_at(text, joined.end()) if joined else None
    return _Found(pos, t.end() if t else end, part, read_time(t) if t else None)


def _zone_today(now: datetime, tz: ZoneInfo) -> datetime:
    return now.astimezone(tz) if now.tzinfo else now.replace(tzinfo=tz)


def _reading(text: str, found: _Found, now: datetime) -> Reading:
    part, tpart = found.part, found.time
    day, end = (part.date, part.end) if part else (None, None)
    at = tpart.time if tpart else None
    last = end or day
    is_past = last is not None and (
        last < now.date() or (last == now.date() and at is not None and at < now.time())
    )
    notes = [n for n in (part.note if part else None, tpart.note if tpart else None) if n]
    kind: Kind = part.kind if part else "time"
    due = part.due if part else None
    if part is None and at is not None and at > now.time():  # 「17時までに」 said at 10:00: today's
        due = now.date()
    return Reading(
        date=day,
        time=at,
        end_date=end,
        is_past=is_past,
        ambiguous=bool(notes),
        ambiguity="；".join(notes) or None,
        expression=text[found.start : found.end].strip(),
        kind=kind,
        year_said=bool(part and part.year_said),
        due=due,
        doubt=part.doubt if part else None,
    )


def read_or_error(text: str, now: datetime, tz: ZoneInfo = JST, *, whole: bool = False) -> Reading:
    """Like ``read``, but a text that is not read raises ``DateError`` with its ``code``:
    ``date.unreadable`` (no expression; with ``whole``, not only one) or ``date.nonexistent``,
    ``time.nonexistent``, ``date.range_reversed`` (an expression naming what does not exist)."""
    local = _zone_today(now, tz)
    folded = fold(text)
    if whole:
        if dotted := _DOTTED.match(folded):  # same length: positions still name the text as typed
            folded = f"{dotted[1]}/{dotted[2]}{folded[dotted.end() :]}"
        pos = len(folded) - len(folded.lstrip())
        found = _scan_at(folded, pos, local)
        tail = _TAIL.fullmatch(folded, found.end) if found else None
        if found is None or tail is None:
            raise DateError("date.unreadable", f"日付「{text.strip()}」を解釈できません", expression=text)
        return _reading(text, found, local)
    for pos in range(len(folded)):
        if found := _scan_at(folded, pos, local):
            return _reading(text, found, local)
    raise DateError("date.unreadable", f"「{text.strip()}」に日付や時刻がありません", expression=text)


def read(text: str, now: datetime, tz: ZoneInfo = JST, *, whole: bool = False) -> Reading | None:
    """The first date/time expression in ``text`` (``whole``: the text must be one expression,
    with at most a tolerated tail such as までに), read against ``now`` in ``tz``; else ``None``."""
    try:
        return read_or_error(text, now, tz, whole=whole)
    except DateError:
        return None


_BY = re.compile(r"\s?(?:までに|まで|迄に|迄)")


def find(text: str, *, deadline_times: bool = False) -> str | None:
    """The first date expression of ``text`` as written (no clock needed: the syntax decides);
    with ``deadline_times`` also a time alone said as a deadline (「17時までに」: today's, while it
    is ahead, when the value is read)."""
    folded = fold(text)
    probe = datetime(2000, 1, 3, 12, tzinfo=JST)
    for pos in range(len(folded)):
        try:
            found = _scan_at(folded, pos, probe)
        except DateError as exc:  # names a day that does not exist: still an expression
            return exc.expression.strip() or None
        if found and (found.part or (deadline_times and _BY.match(folded, found.end))):
            return text[found.start : found.end].strip()
    return None


def at_midnight(day: date, tz: ZoneInfo = JST) -> datetime:
    """The start of ``day`` in ``tz`` (callers that only know today's date)."""
    return datetime.combine(day, time(0, 0), tzinfo=tz)
