"""The context's token budget and its fixed truncation order (seed 004 §11).

Seed 004 cuts, in a fixed order, evidence first, then the conversation summary, then
open questions, then the plan. Charter's order starts the same way — the evidence, then the
summary: of the evidence, recalled episodes first (priority 4 like knowledge, but Truth 4,
conversation memory, below knowledge's 2), then knowledge — and continues by the seed 000 §6.1
priority (lowest first) and, within a priority, by Truth order (least trusted first): preferences, goals,
tasks, then the oldest messages, the company values, people and, last, the teachings.
Session state, pending action, who is speaking and the date are never cut. Within a
section the least relevant item goes first (the last one listed; for the conversation,
the oldest). The order is configuration (``CHARTER_CONTEXT_DROP_ORDER``), the estimate
a cheap character count.

>>> estimate_tokens("hello world") , estimate_tokens("こんにちは")
(3, 5)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from shared_lib.context.render import Section, render

DEFAULT_DROP_ORDER: tuple[str, ...] = (
    "episodes",
    "knowledge",
    "summary",
    "preferences",
    "goals",
    "tasks",
    "recent_messages",
    "company_values",
    "persons",
    "teachings",
)
DROPPABLE = frozenset(DEFAULT_DROP_ORDER)


def estimate_tokens(text: str) -> int:
    """About four ASCII characters per token, one token per Japanese character (conservative)."""
    ascii_chars = sum(1 for ch in text if ord(ch) < 128)
    return math.ceil(ascii_chars / 4) + (len(text) - ascii_chars)


@dataclass(frozen=True)
class Fitted:
    sections: list[Section]
    rendered: str
    tokens: int
    dropped: dict[str, int]
    over_budget: bool


def fit(sections: list[Section], budget: int, drop_order: tuple[str, ...] = DEFAULT_DROP_ORDER) -> Fitted:
    """Drop items in ``drop_order`` until the rendering fits ``budget`` tokens."""
    by_name = {s.name: s for s in sections}
    dropped: dict[str, int] = {}
    rendered = render(sections)
    tokens = estimate_tokens(rendered)
    for name in drop_order:
        section = by_name.get(name)
        if section is None or not section.droppable:
            continue
        while tokens > budget and section.lines:
            section.lines.pop(0 if section.oldest_first else -1)
            dropped[name] = dropped.get(name, 0) + 1
            rendered = render(sections)
            tokens = estimate_tokens(rendered)
        if tokens <= budget:
            break
    return Fitted(sections, rendered, tokens, dropped, tokens > budget)
