"""The context's token budget and its fixed truncation order (seed 004 §11).

Seed 004 §11 cuts, in a fixed order: the evidence, then the conversation summary, then the
open questions, then the plan's moves. Charter's order is exactly that for its first five
names — the evidence (recalled episodes first: priority 4 like knowledge, but Truth 4,
conversation memory, below knowledge's 2; then knowledge), the summary, the agent state's
open questions, its plan — and only then goes on by the seed 000 §6.1 priority (lowest first)
and, within a priority, by Truth order (least trusted first): preferences, goals, tasks, the
oldest messages, the company values, people and, last, the teachings. The agent state's other
fields, session state, pending action, who is speaking and the date are never cut. The
agent state is shown by the prompt's own block, not in the context's text (its sections are
``shown=False``), but the budget counts it, so what it cuts never reaches the prompt.
Within a section the least relevant item goes first (the last one listed: the plan's later
moves; for the conversation, the oldest). The order is configuration
(``CHARTER_CONTEXT_DROP_ORDER``), the estimate a cheap character count.

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
    "open_questions",
    "plan_brief",
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
    ascii_chars = len(text.encode("ascii", "ignore"))  # the ASCII characters, counted in C
    return math.ceil(ascii_chars / 4) + (len(text) - ascii_chars)


@dataclass(frozen=True)
class Fitted:
    sections: list[Section]
    rendered: str
    tokens: int
    dropped: dict[str, int]
    over_budget: bool


def _counted(sections: list[Section]) -> tuple[str, int]:
    """The context's text and the tokens of it and of what the prompt shows apart."""
    rendered = render(sections)
    apart = "\n\n".join(t for t in (s.text() for s in sections if not s.shown) if t)
    return rendered, estimate_tokens(rendered) + estimate_tokens(apart)


def fit(sections: list[Section], budget: int, drop_order: tuple[str, ...] = DEFAULT_DROP_ORDER) -> Fitted:
    """Drop items in ``drop_order`` until the rendering (and what the prompt shows apart)
    fits ``budget`` tokens."""
    by_name = {s.name: s for s in sections}
    dropped: dict[str, int] = {}
    rendered, tokens = _counted(sections)
    for name in drop_order:
        section = by_name.get(name)
        if section is None or not section.droppable:
            continue
        while tokens > budget and section.lines:
            section.lines.pop(0 if section.oldest_first else -1)
            dropped[name] = dropped.get(name, 0) + 1
            rendered, tokens = _counted(sections)
        if tokens <= budget:
            break
    return Fitted(sections, rendered, tokens, dropped, tokens > budget)
