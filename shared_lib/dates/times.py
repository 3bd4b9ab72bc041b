"""Time expressions: 「15:30」「15時半」「午後3時」「正午」「夕方」.

Working hours are 9:00–18:00 (``model.WORK_START``/``WORK_END``). An hour of 1–7 said without
午前/午後 (and not written ``03:30``) is read in the afternoon, the one that falls in or
next to working hours — 「3時半」 is 15:30 — and marked ambiguous; 8–12 stay as said.
Words (``_WORDS``, the one table; a word marked approximate makes the reading ambiguous):

=====================================  =======  ====================================
word                                   time     why
=====================================  =======  ====================================
朝一/朝イチ/朝いち, 始業                9:00     the start of work
午前中                                 12:00    a deadline "by noon"
正午/昼/お昼, 昼休み                    12:00
午後イチ/午後一/午後いち, 昼一/昼イチ  13:00    the first thing after lunch
定時, 終業                             18:00    the end of work (``WORK_END``)
朝, 午前 (approximate)                 9:00
午後, 昼過ぎ (approximate)             13:00    the afternoon begins
夕方 (approximate)                     17:00
夜 (approximate)                       19:00
=====================================  =======  ====================================

Before an hour, 午後/夕方/夜/晩 put it in the afternoon or evening, but the night runs past
midnight: 「夜2時」「晩1時半」 are 2:00 and 1:30 (the small hours), 「夜12時」 is 0:00, and
深夜/夜中/未明/明け方/早朝 keep the hours up to 6 as said (「深夜2時」 2:00, 「早朝5時」 5:00;
「深夜11時」 23:00). ``night_hour`` is that rule for a word said apart from its time (毎晩、2時).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import time

from shared_lib.dates.model import DateError


@dataclass(frozen=True, slots=True)
class TimePart:
    time: time
    note: str | None = None


def _about(word: str, hour: int) -> tuple[int, str]:
    return hour, f"「{word}」は{hour}時と読みました（おおよその時刻）"


_WORDS: dict[str, tuple[int, str | None]] = {
    "正午": (12, None),
    "お昼": (12, None),
    "昼休み": (12, None),
    "昼": (12, None),
    "朝一": (9, None),
    "朝イチ": (9, None),
    "朝いち": (9, None),
    "始業": (9, None),
    "午後一": (13, None),
    "午後イチ": (13, None),
    "午後いち": (13, None),
    "昼一": (13, None),
    "昼イチ": (13, None),
    "定時": (18, None),
    "終業": (18, None),
    "午前中": (12, None),
    "朝": _about("朝", 9),
    "午前": _about("午前", 9),
    "午後": _about("午後", 13),
    "昼過ぎ": _about("昼過ぎ", 13),
    "夕方": _about("夕方", 17),
    "夜": _about("夜", 19),
}
_PM = ("午後", "夕方", "pm", "PM")
_AM = ("午前", "朝", "am", "AM")
_NIGHT = ("夜", "晩")  # the evening, and past midnight for the small hours
_LATE = ("深夜", "夜中", "未明", "明け方", "早朝")  # the small hours
_PREFIX = "深夜|夜中|未明|明け方|早朝|午前|午後|朝|夜|晩|夕方"
CLOCK = re.compile(
    rf"(?<![\d:/.])(?:({_PREFIX}|am|AM|pm|PM)の?)?\s?(\d{{1,2}}):(\d{{2}})(?::\d{{2}}(?:\.\d+)?)?(?!\d)"
)
HOURS = re.compile(rf"(?<![\d:/.])(?:({_PREFIX})の?)?(\d{{1,2}})時(?:(\d{{1,2}})分|(半))?(?!間)")
# not a meal (朝食, 昼ご飯) nor the typeface 明朝体; the group makes the look-ahead every word's
WORD = re.compile("(?:" + "|".join(sorted(_WORDS, key=len, reverse=True)) + r")(?!食|ご飯|ごはん|体)")


def night_hour(hour: int, word: str) -> int:
    """The hour ``hour`` (0–23 as said) means after an evening or night word ``word``: 夕 and
    夕方 the evening; 夜 and 晩 the evening, or the small hours up to 4 (夜2時 is 2:00) and
    midnight for 12; 深夜, 夜中, 未明, 明け方, 早朝 the small hours up to 6, and otherwise as 夜.

    >>> [night_hour(h, "夜") for h in (2, 9, 12, 21)], night_hour(5, "早朝"), night_hour(11, "深夜")
    ([2, 21, 0, 21], 5, 23)
    """
    if hour > 12:
        return hour
    if word in _LATE:
        return 0 if hour == 12 else hour if hour <= 6 else hour + 12
    if word in _NIGHT:
        return 0 if hour == 12 else hour if hour <= 4 else hour + 12
    return hour + 12 if hour < 12 else hour


def _hour(prefix: str | None, hour: int, minute: int, padded: bool, said: str) -> TimePart:
    if minute > 59 or hour > 23 or (prefix in _AM + _PM and hour > 12):
        raise DateError("time.nonexistent", f"存在しない時刻です: {said}", expression=said)
    note = None
    if prefix in _NIGHT + _LATE:
        hour = night_hour(hour, prefix or "")
    elif prefix in _PM and hour < 12:
        hour += 12
    elif prefix in _AM and hour == 12:
        hour = 0
    elif prefix is None and 1 <= hour <= 7 and not padded:
        hour += 12
        note = (
            f"午前・午後の指定がないため業務時間として{hour}時{f'{minute}分' if minute else ''}と読みました"
        )
    return TimePart(time(hour, minute), note)


def read_time(m: re.Match[str]) -> TimePart:
    """The time of a match of ``CLOCK``, ``HOURS`` or ``WORD``."""
    if m.re is WORD:
        hour, note = _WORDS[m[0]]
        return TimePart(time(hour, 0), note)
    if m.re is CLOCK:
        return _hour(m[1], int(m[2]), int(m[3]), m[2].startswith("0") and len(m[2]) == 2, m[0])
    minute = 30 if m[4] else int(m[3] or 0)
    return _hour(m[1], int(m[2]), minute, m[2].startswith("0") and len(m[2]) == 2, m[0])


TIME_ATOMS = (CLOCK, HOURS, WORD)
