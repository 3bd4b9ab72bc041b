"""What a user reads of a tool call or its result: Japanese labels and values, never internal names.

The names come from the registry's data (``config/tools.json``: ``display_name``,
``parameter_display``, ``value_display``); the values are shown the way ソウルくん says them:
a date 「11月25日（水）」 (``shared_lib.dates.display_date``; the year only when it is not this
year's), a time 「15時30分」, an enumerated value by its label (``preference`` → 「好み」), a list
joined with 「、」, nothing as 「なし」. Values that are not dates are shown as they are.

>>> from datetime import date
>>> from shared_lib.tools.builtin import builtin_registry
>>> reg = builtin_registry()
>>> parameter_lines(reg, "chatwork_task_create",
...     {"assignee_name": "田中太郎", "limit_date": "2026-11-25"}, today=date(2026, 11, 24))
['担当者: 田中太郎', '期限: 11月25日（水）']
>>> show_value(reg, "save_memory", "category", "preference")
'好み'
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import date, datetime, time
from typing import Any

from shared_lib.dates import display_date, display_time
from shared_lib.tools.registry import ToolRegistry

MAX_VALUE_CHARS = 200
NOTHING = "なし"
ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
ISO_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?$")
CLOCK = re.compile(r"^(\d{1,2}):(\d{2})(?::\d{2})?$")


def show_value(
    registry: ToolRegistry, tool: str, param: str, value: Any, *, today: date | None = None
) -> str:
    """One value as a user reads it (clipped to ``MAX_VALUE_CHARS``)."""
    text = _show(registry, tool, param, value, today)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def _show(registry: ToolRegistry, tool: str, param: str, value: Any, today: date | None) -> str:
    if value is None or value == "":
        return NOTHING
    if isinstance(value, bool):
        return "はい" if value else "いいえ"
    label = registry.value_label(tool, param, value)
    if label is not None:
        return label
    if isinstance(value, list | tuple):
        return "、".join(_show(registry, tool, param, v, today) for v in value) or NOTHING
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, default=str)
    return show_plain(value, today=today)


def show_plain(value: Any, *, today: date | None = None) -> str:
    """A scalar as a user reads it: dates, date-times and clock times in Japanese, else ``str``."""
    if isinstance(value, datetime):
        return display_date(value.date(), today=today) + display_time(value.time())
    if isinstance(value, date):
        return display_date(value, today=today)
    if isinstance(value, time):
        return display_time(value)
    text = str(value)
    if ISO_DATE.match(text):
        try:
            return display_date(date.fromisoformat(text), today=today)
        except ValueError:
            return text
    if ISO_DATETIME.match(text):
        try:
            return show_plain(datetime.fromisoformat(text.replace("Z", "+00:00")), today=today)
        except ValueError:
            return text
    clock = CLOCK.match(text)
    if clock and int(clock.group(1)) < 24 and int(clock.group(2)) < 60:
        return display_time(time(int(clock.group(1)), int(clock.group(2))))
    return text


def parameter_lines(
    registry: ToolRegistry,
    tool: str,
    params: Mapping[str, Any],
    *,
    today: date | None = None,
    before: Mapping[str, Any] | None = None,
) -> list[str]:
    """「担当者: 田中太郎」, one line per parameter; with ``before``, a changed value as ``old → new``."""
    lines = []
    old = before if before is not None else params
    for key in [*old, *(k for k in params if k not in old)]:
        was, now = old.get(key), params.get(key)
        shown = show_value(registry, tool, key, now, today=today)
        if was != now:
            shown = f"{show_value(registry, tool, key, was, today=today)} → {shown}"
        lines.append(f"{registry.parameter_label(tool, key)}: {shown}")
    return lines


def labels_text(registry: ToolRegistry, tool: str, params: list[str]) -> str:
    """Parameter names as one phrase for a user: 「担当者、期限」."""
    return "、".join(dict.fromkeys(registry.parameter_label(tool, p) for p in params))


def shown_result(registry: ToolRegistry, tool: str, result: Any, *, today: date | None = None) -> Any:
    """A handler's result with every value displayed (keys kept): what the phrasing step reads."""
    if isinstance(result, dict):
        return {
            k: shown_result(registry, tool, v, today=today)
            if isinstance(v, dict | list)
            else _result_value(registry, tool, str(k), v, today)
            for k, v in result.items()
        }
    if isinstance(result, list):
        return [shown_result(registry, tool, v, today=today) for v in result]
    return (
        result
        if result is None or isinstance(result, bool | int | float)
        else show_plain(result, today=today)
    )


def _result_value(registry: ToolRegistry, tool: str, key: str, value: Any, today: date | None) -> Any:
    if value is None or isinstance(value, bool | int | float):
        return value
    label = registry.value_label(tool, key, value)
    return label if label is not None else show_plain(value, today=today)


def name_tools(registry: ToolRegistry, text: str) -> str:
    """Free text (the proposer's reasoning shown in a confirmation) with every registered tool
    name written as a user reads it: 「save_memory を使う」 → 「「記憶の保存」を使う」."""
    names = sorted(registry.names(), key=len, reverse=True)
    if not names or not text:
        return text
    pattern = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(map(re.escape, names)) + r")(?![A-Za-z0-9_])")
    return pattern.sub(lambda m: f"「{registry.display_name(m.group(1))}」", text)
