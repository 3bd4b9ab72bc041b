"""Reading parameter values the way the charter means them: amounts, dates, recipient lists.

Pure functions over the LLM's candidate values; they never raise on odd input (an
unreadable value is ``None`` and the handler's own validation deals with it).

>>> as_number("15万円"), as_number("1,200"), as_number(True)
(150000.0, 1200.0, None)
>>> from datetime import date
>>> read_date("明日", date(2025, 1, 31)), read_date("2025/2/3", date(2025, 1, 31))
(datetime.date(2025, 2, 1), datetime.date(2025, 2, 3))
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from datetime import date, datetime
from typing import Any

from shared_lib.dates import DateError, Reading, at_midnight, read_or_error

_NUMBER = re.compile(r"^[+-]?\d+(?:\.\d+)?$")
_ANY_DAY = date(2000, 1, 3)  # for questions of form only: whether a value is a date at all
_ISO = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})")
_SLASH = re.compile(r"^(\d{4})[/.年](\d{1,2})[/.月](\d{1,2})日?$")


def checked_regexes(patterns: Iterable[str]) -> None:
    """Raise ``ValueError`` (what pydantic validators report) for a pattern that does not compile."""
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from exc


def as_number(value: Any) -> float | None:
    """A number from an int/float or a numeric string ("100,000円", "¥5000", "15万")."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if not isinstance(value, str):
        return None
    text = unicodedata.normalize("NFKC", value).strip().replace(",", "").replace("¥", "").replace("円", "")
    scale = 1.0
    for unit, factor in (("億", 1e8), ("万", 1e4), ("千", 1e3)):
        if text.endswith(unit):
            text, scale = text[: -len(unit)], factor
            break
    return float(text) * scale if _NUMBER.match(text.strip()) else None


def _whole(value: str, clock: date | datetime) -> Reading | DateError:
    now = clock if isinstance(clock, datetime) else at_midnight(clock)
    try:
        return read_or_error(value, now, whole=True)
    except DateError as exc:
        return exc


def read_value(value: Any, clock: date | datetime) -> Reading | DateError | None:
    """How the one reader reads a whole parameter value at ``clock`` (a datetime: its hour counts,
    「月曜」 on a Monday night is next Monday; a date: read at its midnight): a ``Reading``, the
    ``DateError`` saying why not, or ``None`` for what is not text (``None``, a number, blank)."""
    if not isinstance(value, str) or not value.strip():
        return None
    found = _whole(value, clock)
    if isinstance(found, DateError) and found.code == "date.unreadable" and (day := _iso_day(value)):
        return _whole(day, clock)  # an ISO datetime with an offset: its day
    return found


def _iso_day(value: str) -> str | None:
    """The ``YYYY-MM-DD`` of an ISO datetime with an offset (「2026-12-05T10:00:00+09:00」)."""
    m = _ISO.match(unicodedata.normalize("NFKC", value).strip())
    if not m:
        return None
    try:
        return date(int(m.group(1)), int(m.group(2)), int(m.group(3))).isoformat()
    except ValueError:
        return None


def is_calendar_date_text(value: Any) -> bool:
    """Looks like a date (so an impossible one is an inconsistency, not noise): an absolute
    date, or any date expression the reader recognises but whose day does not exist."""
    if not isinstance(value, str):
        return False
    text = unicodedata.normalize("NFKC", value).strip()
    if _ISO.match(text) or _SLASH.match(text):
        return True
    found = _whole(text, _ANY_DAY)
    return found.code != "date.unreadable" if isinstance(found, DateError) else found.date is not None


def read_date(value: Any, clock: date | datetime) -> date | None:
    """The day a value means as a deadline, as ``shared_lib.dates`` reads the whole value at
    ``clock`` (a range gives its deadline); ``None`` when it cannot be read or does not exist.
    A year-less date already past is the next one (「7/1」 in November: next July)."""
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    found = read_value(value, clock)
    return found.deadline if isinstance(found, Reading) else None


def iso_date_text(value: Any) -> str | None:
    """``YYYY-MM-DD`` for an absolute date with its year written another way ("2025/1/5",
    「２０２５年１月５日(日)」); else ``None``. Relative and year-less expressions stay as said
    (the executor reads them with the same reader), and so does anything ambiguous."""
    if not isinstance(value, str):
        return None
    found = _whole(value, _ANY_DAY)
    if not isinstance(found, Reading) or found.date is None:
        return None
    if found.kind != "absolute" or not found.year_said or found.time is not None or found.ambiguous:
        return None
    return found.date.isoformat()


def recipients(value: Any, all_values: Iterable[str]) -> tuple[bool, int]:
    """``(is_everyone, distinct count)`` of a recipients value (a list, or a delimited string)."""
    everyone = {unicodedata.normalize("NFKC", v).strip().lower() for v in all_values}
    if isinstance(value, str):
        norm = unicodedata.normalize("NFKC", value).strip().lower()
        if norm in everyone:
            return True, 0
        items: list[Any] = [p for p in re.split(r"[,、，\s]+", value) if p.strip()]
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        return False, 0
    names = {unicodedata.normalize("NFKC", str(i)).strip().lower() for i in items}
    if names & everyone:
        return True, len(names)
    return False, len(names)


def count_items(value: Any, all_values: Iterable[str]) -> int | None:
    """How many things a deletion targets: a list's length, ``None`` for "all", 1 otherwise."""
    if isinstance(value, list | tuple):
        return len(value)
    if isinstance(value, str):
        everyone = {v.lower() for v in all_values}
        return None if value.strip().lower() in everyone else 1
    return 1


def strings_in(value: Any) -> Iterable[str]:
    """Every string inside a parameter value (nested lists and objects included)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings_in(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from strings_in(v)
