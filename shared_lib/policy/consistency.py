"""Priority 7 of the guardian tree: parameter consistency and dates (seed 000 §5.3.3b).

Fixable inconsistencies are corrected by fixed rules (``consistency.fixes``): strings
trimmed, duplicate list entries removed, amounts written as text made numbers, absolute
dates written another way made ISO. Unfixable ones (an impossible date, an unreadable or
negative amount, a range that ends before it starts) need the user. Dates are read by the
one reader (``shared_lib.dates``, whole value) in the policy's time zone at the turn's clock,
so 「来週金曜」「月末」「今日中」「12/5」 are checked too, exactly as the executor will read them.
What the reader cannot read at all (「そのうち」) is ``unreadable``: a question to the user,
never an executor error. A reading in doubt (a weekday that is not the date's, a year-less
date recently past read as next year's) is ``doubtful``: the user confirms it. Before today
is ``date.past`` (a year-less date is the next one, so only dates with a year, relative words
and dates a written weekday pins to the past get here), beyond the horizon ``date.far_future``.

>>> from datetime import date
>>> cfg = load_policy_config()
>>> check_call({"amount": "5,000円", "limit_date": "2025/1/5"}, cfg, date(2025, 1, 1)).corrected
{'amount': 5000, 'limit_date': '2025-01-05'}
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from shared_lib.dates import Reading
from shared_lib.policy.config import PolicyConfig, load_policy_config
from shared_lib.policy.values import as_number, is_calendar_date_text, iso_date_text, read_value


@dataclass
class CallCheck:
    corrected: dict[str, Any]
    changed: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # catalogue messages, already filled
    past: list[tuple[str, date]] = field(default_factory=list)
    far: list[tuple[str, date, int]] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (key, value as said)
    doubtful: list[tuple[str, str, Reading]] = field(default_factory=list)


def _dedupe(values: list[Any]) -> list[Any]:
    seen: list[Any] = []
    for v in values:
        if v not in seen:
            seen.append(v)
    return seen


def _fix(key: str, value: Any, cfg: PolicyConfig) -> Any:
    fixes = cfg.consistency.fixes
    if "strip_strings" in fixes:
        if isinstance(value, str):
            value = value.strip()
        elif isinstance(value, list):
            value = [v.strip() if isinstance(v, str) else v for v in value]
    if (
        "dedupe_lists" in fixes
        and isinstance(value, list)
        and key in (*cfg.parameters.recipient_keys, *cfg.parameters.delete_count_keys)
    ):
        value = _dedupe(value)
    if "amount_numbers" in fixes and key in cfg.parameters.amount_keys and isinstance(value, str):
        number = as_number(value)
        if number is not None:
            value = int(number) if number.is_integer() else number
    if "iso_dates" in fixes and key in cfg.consistency.date_keys:
        value = iso_date_text(value) or value
    return value


def check_call(params: dict[str, Any], cfg: PolicyConfig | None, clock: date | datetime) -> CallCheck:
    """``clock``: the turn's local time (a date alone is read at its midnight)."""
    cfg = cfg or load_policy_config()
    today = clock.date() if isinstance(clock, datetime) else clock
    corrected = {k: _fix(k, v, cfg) for k, v in params.items()}
    check = CallCheck(corrected=corrected, changed=[k for k in params if corrected[k] != params[k]])
    for key in cfg.parameters.amount_keys:
        if key in corrected and corrected[key] is not None:
            number = as_number(corrected[key])
            if number is None:
                check.problems.append(cfg.message("consistency.problem.unreadable_amount", key=key))
            elif number < 0:
                check.problems.append(cfg.message("consistency.problem.negative_amount", key=key))
    dates: dict[str, date] = {}
    for key in cfg.consistency.date_keys:
        if key not in corrected:
            continue
        value = corrected[key]
        if isinstance(value, datetime):
            value = value.date()
        found = value if isinstance(value, date) else read_value(value, clock)
        if isinstance(found, Reading | date):
            day = found if isinstance(found, date) else found.deadline
        else:
            day = None
        if day is None:
            if found is not None and is_calendar_date_text(value):
                check.problems.append(cfg.message("consistency.problem.invalid_date", key=key, value=value))
            elif found is not None:
                check.unreadable.append((key, str(value).strip()))
            continue
        dates[key] = day
        if isinstance(found, Reading) and found.doubt is not None:
            check.doubtful.append((key, str(value).strip(), found))
        elif day < today:
            check.past.append((key, day))
        elif (day - today).days > cfg.consistency.far_future_days:
            check.far.append((key, day, (day - today).days))
    for start, end in cfg.consistency.date_ranges:
        if start in dates and end in dates and dates[start] > dates[end]:
            check.problems.append(cfg.message("consistency.problem.range_reversed", start=start, end=end))
    return check
