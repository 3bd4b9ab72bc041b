"""The facts compaction keeps: the rules' (``facts.extract``) and the model's, merged once.

The summary call of the messages leaving the window (``context.summary_prompt``) also lists
the important facts it read (``proposed``: a kind and a text, strict schema); nothing else
is asked of the model and no round trip is added. What is kept:

1. every fact the rules found, oldest first, except what a later decision reversed: a later
   decision that says it changes something (「やっぱ」「変更」「なしで」「取り消し」…) and shares
   a subject word (「納品」「焼肉」「搬入」) with an earlier decision, day or promise supersedes
   it — the later one wins;
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

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from shared_lib.memory.facts import Fact, extract, normalised

ProposedKind = Literal["remember", "decision", "commitment", "preference", "date", "error_fix"]
REVERSAL = re.compile(
    r"やっぱ|やはり|変更|撤回|取り消|取りやめ|とりやめ|キャンセル|中止|白紙|なしで|無しで|なしに|に変わ"
    r"|差し替え|じゃなくて|ではなく|やめて|見送り|延期|訂正|間違い"
)
# words that say when or how, not what: two decisions sharing only these are not about one thing
_NOT_SUBJECTS = frozenset(
    [
        "今日",
        "明日",
        "昨日",
        "今週",
        "来週",
        "先週",
        "今月",
        "来月",
        "先月",
        "今回",
        "次回",
        "前回",
        "先方",
        "変更",
        "決定",
        "確定",
        "都合",
        "予定",
        "みなさん",
    ]
)
_SUBJECT = re.compile(r"[一-龯々]{2,}|[ァ-ヴー]{2,}|[a-z0-9]{2,}")
ALIKE = 0.6  # character pairs two statements of one fact share (Dice), beyond which they are one


class Proposed(BaseModel):
    """One fact the model read in the departing messages."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: ProposedKind
    text: str = Field(min_length=2, max_length=300)


def subjects(text: str) -> set[str]:
    """The subject words of a statement (kanji and katakana runs, Latin words), folded."""
    return {w for w in _SUBJECT.findall(normalised(text)) if w not in _NOT_SUBJECTS}


def _reverses(later: Fact, earlier: Fact) -> bool:
    """``later`` changes what ``earlier`` settled (a decision, a day, a promise) on one subject."""
    settled = {"decision", "date", "commitment"} & set(earlier.kinds)
    if "decision" not in later.kinds or not settled or "remember" in earlier.kinds:
        return False
    return bool(REVERSAL.search(later.text)) and bool(subjects(later.text) & subjects(earlier.text))


def supersede(facts: Sequence[Fact]) -> tuple[list[Fact], list[Fact]]:
    """``facts`` (oldest first) without the decisions a later one reversed, and those."""
    kept: list[Fact] = []
    gone: list[Fact] = []
    for f in facts:
        gone += [g for g in kept if _reverses(f, g)]
        kept = [g for g in kept if not _reverses(f, g)] + [f]
    return kept, gone


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
    rules, gone = supersede(extract(messages))
    last = messages[-1] if messages else {}
    when = at or (last.get("at") if isinstance(last.get("at"), datetime) else None)
    seq = str(last.get("seq") or "")
    out = list(rules)
    for p in proposed:
        if any(alike(p.text, f.text) for f in [*out, *gone]):
            continue
        out.append(Fact((p.kind,), p.text, seq, when, "model"))
    return out
