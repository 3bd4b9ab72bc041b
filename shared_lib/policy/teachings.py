"""Company teachings ("CEO教え", seed 000 §5.3.3b priority 4): text for the prompt plus
machine-checkable conditions the guardian evaluates.

A teaching with no condition is guidance for the prompt only; it never decides. With
conditions, every given condition must hold (tools, parameters, time windows in the
policy's time zone, text patterns) for the teaching to apply to a tool call; its
``effect`` is ``block`` (a clear violation) or ``confirm`` (a possible violation shown to
the user).

>>> t = Teaching.model_validate({"id": "t1", "title": "深夜連絡なし", "text": "22時以降は全員連絡をしない",
...     "effect": "block", "when": {"tools": ["announce"], "time_windows": [{"start": "22:00", "end": "07:00"}]}})
>>> t.when.time_windows[0].contains(datetime(2025, 1, 6, 23, 0))
True
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import datetime, time
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from shared_lib.policy.values import as_number, checked_regexes

Weekday = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
WEEKDAYS: tuple[Weekday, ...] = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
Op = Literal["eq", "ne", "in", "contains", "gt", "gte", "lt", "lte", "regex", "present", "absent"]
_HHMM = r"^([01]\d|2[0-3]):[0-5]\d$"


class _T(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ParamCondition(_T):
    key: Annotated[str, Field(min_length=1)]
    op: Op
    value: Any = None

    def holds(self, params: dict[str, Any]) -> bool:
        if self.op == "present":
            return self.key in params and params[self.key] not in (None, "", [], {})
        if self.op == "absent":
            return self.key not in params or params[self.key] in (None, "", [], {})
        if self.key not in params:
            return False
        return _compare(self.op, params[self.key], self.value)


def _compare(op: Op, actual: Any, expected: Any) -> bool:
    if op in ("gt", "gte", "lt", "lte"):
        a, e = as_number(actual), as_number(expected)
        if a is None or e is None:
            return False
        return {"gt": a > e, "gte": a >= e, "lt": a < e, "lte": a <= e}[op]
    if op == "eq":
        return bool(actual == expected)
    if op == "ne":
        return bool(actual != expected)
    if op == "in":
        return isinstance(expected, list) and actual in expected
    if op == "contains":
        return (isinstance(actual, str) and isinstance(expected, str) and expected in actual) or (
            isinstance(actual, list) and expected in actual
        )
    return isinstance(actual, str) and isinstance(expected, str) and re.search(expected, actual) is not None


class TimeWindow(_T):
    """``start``-``end`` local time (``end`` before ``start`` crosses midnight) on ``weekdays``."""

    start: Annotated[str, Field(pattern=_HHMM)]
    end: Annotated[str, Field(pattern=_HHMM)]
    weekdays: list[Weekday] = Field(default_factory=list)

    def contains(self, local: datetime) -> bool:
        if self.weekdays and WEEKDAYS[local.weekday()] not in self.weekdays:
            return False
        t = local.time().replace(tzinfo=None)
        start, end = time.fromisoformat(self.start), time.fromisoformat(self.end)
        return start <= t < end if start <= end else (t >= start or t < end)


class Conditions(_T):
    tools: list[str] = Field(default_factory=list)
    parameters: list[ParamCondition] = Field(default_factory=list)
    time_windows: list[TimeWindow] = Field(default_factory=list)
    text_patterns: list[str] = Field(default_factory=list)

    @field_validator("text_patterns")
    @classmethod
    def _compile(cls, value: list[str]) -> list[str]:
        checked_regexes(value)
        return value

    @property
    def empty(self) -> bool:
        return not (self.tools or self.parameters or self.time_windows or self.text_patterns)


class Teaching(_T):
    id: Annotated[str, Field(min_length=1)]
    title: Annotated[str, Field(min_length=1)]
    text: Annotated[str, Field(min_length=1)]
    effect: Literal["block", "confirm"] = "confirm"
    when: Conditions = Field(default_factory=Conditions)

    def applies(
        self, calls: Sequence[tuple[str, dict[str, Any]]], texts: Iterable[str], local: datetime
    ) -> bool:
        """Whether this teaching's conditions hold for the proposal (``calls`` empty for text answers)."""
        w = self.when
        if w.empty:
            return False
        if w.time_windows and not any(tw.contains(local) for tw in w.time_windows):
            return False
        if w.text_patterns:
            joined = "\n".join(texts)
            if not any(re.search(p, joined) for p in w.text_patterns):
                return False
        if not (w.tools or w.parameters):
            return True
        return any(
            (not w.tools or name in w.tools) and all(c.holds(params) for c in w.parameters)
            for name, params in calls
        )


def valid_teachings(raw: Iterable[Any]) -> list[Teaching]:
    """Teachings from a less trusted source (the context): the well-formed ones, others skipped."""
    out = []
    for item in raw:
        try:
            out.append(Teaching.model_validate(item))
        except ValidationError:
            continue
    return out


def teachings_prompt(teachings: Iterable[Teaching], *, limit: int = 10) -> str:
    """The teachings as prompt text (seed 000 §5.1 context: 「CEO教え（最優先で従う）」)."""
    lines = [f"- {t.title}: {t.text}" for t in list(teachings)[:limit]]
    return "【会社の教え（最優先で従う）】\n" + "\n".join(lines) if lines else ""
