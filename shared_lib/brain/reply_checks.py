"""What a user-facing text must never show, found by code: a mask placeholder (「[PHONE_1]」,
「[EMAIL]」: the sanitizer's own patterns), an ISO date (the persona shows 「11月25日（水）」) and
an internal tool or parameter name (``chatwork_task_create``, ``new_level``).

The evaluator's rule axis (``features.best_of_n.steps_evaluator``) and the eval harness (``evals``) both read
replies with these, so they agree on what a leak is.

>>> placeholders("電話は[PHONE_1]、メールは[EMAIL]ウル"), iso_dates("期限は2026-11-25ウル")
(['[PHONE_1]', '[EMAIL]'], ['2026-11-25'])
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from shared_lib.privacy.sanitizer import PLACEHOLDER, STORED_PLACEHOLDER
from shared_lib.tools.registry import ToolRegistry

MASKS = re.compile(f"{PLACEHOLDER.pattern}|{STORED_PLACEHOLDER.pattern}")
ISO_DATE = re.compile(r"(?<!\d)\d{4}-\d{2}-\d{2}(?!\d)")


def placeholders(text: str) -> list[str]:
    return [m.group(0) for m in MASKS.finditer(text)]


def iso_dates(text: str) -> list[str]:
    return [m.group(0) for m in ISO_DATE.finditer(text)]


def internal_names(registry: ToolRegistry) -> list[str]:
    """What a reply must not show: tool names and the snake_case parameter names."""
    params = {p for spec in registry for p in spec.params.model_fields if "_" in p}
    return sorted({spec.name for spec in registry} | params)


def names_in(text: str, names: Iterable[str]) -> list[str]:
    return sorted({n for n in names if n in text})
