"""The facts compaction keeps: the rules' (``facts.extract``) and the model's, merged once.

The summary call of the messages leaving the window (``context.summary_prompt``) also lists
the important facts it read (``proposed``: a kind and a text, strict schema); nothing else
is asked of the model and no round trip is added. What is kept:

1. every fact the rules found, oldest first, except what a later decision reversed
   (``facts.extract``: the later one wins);
2. then each fact the model proposed that says something the rules did not: not the same
   normalised text, not contained in a rule's fact or containing one, not alike by its
   character pairs, and not a restatement of a superseded decision.

A model's answer that is not the schema gives no facts, never fewer rule facts.

>>> from datetime import UTC, datetime
>>> at = datetime(2025, 11, 25, 1, 0, tzinfo=UTC)
>>> said = ["打ち上げは焼肉でいきましょう", "やっぱ焼肉はなしで、お寿司にしよう"]
>>> msgs = [{"role": "user", "text": t, "at": at, "seq": f"s{i}"} for i, t in enumerate(said)]
>>> [f.text for f in kept_facts(msgs, [Proposed(kind="preference", text="辛い物は苦手")])]
['やっぱ焼肉はなしで、お寿司にしよう', '辛い物は苦手']
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from shared_lib.memory.facts import Fact, extract_superseded, normalised

ProposedKind = Literal["remember", "decision", "commitment", "preference", "date", "error_fix"]
ALIKE = 0.6  # character pairs two statements of one fact share (Dice), beyond which they are one


class Proposed(BaseModel):
    """One fact the model read in the departing messages."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: ProposedKind
    text: str = Field(min_length=2, max_length=300)


def _pairs(text: str) -> set[str]:
    n = normalised(text)
    return {n[i : i + 2] for i in range(len(n) - 1)} or {n}


def alike(a: str, b: str) -> bool:
    """Two statements of one fact: same normalised text, one inside the other, or most pairs shared."""
    na, nb = normalised(a), normalised(b)
    if not na or not nb:
        return na == nb
    if na in nb or nb in na:
        return True
    pa, pb = _pairs(a), _pairs(b)
    return 2 * len(pa & pb) / (len(pa) + len(pb)) >= ALIKE


def kept_facts(
    messages: Sequence[dict[str, Any]], proposed: Sequence[Proposed] = (), *, at: datetime | None = None
) -> list[Fact]:
    """The rules' facts of ``messages`` with the reversed decisions superseded, then the model's
    ``proposed`` facts that add something (said ``at``: the last departing message by default)."""
    rules, gone = extract_superseded(messages)
    last = messages[-1] if messages else {}
    when = at or (last.get("at") if isinstance(last.get("at"), datetime) else None)
    seq = str(last.get("seq") or "")
    out = list(rules)
    for p in proposed:
        if any(alike(p.text, f.text) for f in [*out, *gone]):
            continue
        out.append(Fact((p.kind,), p.text, seq, when, "model"))
    return out
