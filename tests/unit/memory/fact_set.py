"""The fact set (``fact_set.json``) and its score: precision and recall of kept facts by kind.

A case is a snippet of chat (role, text), the facts it must keep (a kind and a marker the kept
text holds) and markers no kept fact may hold (questions, chit-chat, hypotheticals, others'
undecided ideas, a decision reversed later). A kept fact is right when it holds a marker the
case keeps and none it drops; a kind's precision counts the kept facts of that kind, its
recall the facts of that kind the case keeps. Run as a script to print both parts:
``python tests/unit/memory/fact_set.py``.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

SET = Path(__file__).with_name("fact_set.json")
SAID_AT = datetime(2025, 11, 25, 1, 30, tzinfo=UTC)  # 11月25日（火） 10:30 JST
KINDS = ("remember", "decision", "commitment", "preference", "date", "error_fix", "tool_result")
# what a keeper gives back for messages: (kinds, text) of each kept fact
Keeper = Callable[[list[dict[str, Any]]], Sequence[tuple[Sequence[str], str]]]


def cases(part: str) -> list[dict[str, Any]]:
    return list(json.loads(SET.read_text(encoding="utf-8"))[part])


def messages(case: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"role": role, "text": text, "at": SAID_AT + timedelta(minutes=i), "seq": f"s{i:03d}"}
        for i, (role, text) in enumerate(case["lines"])
    ]


def folded(text: str) -> str:
    return "".join(unicodedata.normalize("NFKC", text).lower().split())


def score(part: str, keeper: Keeper) -> dict[str, Any]:
    """Per kind: kept (facts of that kind), right (of them), wanted, found; and the misses."""
    table = {k: {"kept": 0, "right": 0, "wanted": 0, "found": 0} for k in KINDS}
    misses: list[str] = []
    for case in cases(part):
        kept = [(tuple(kinds), folded(text)) for kinds, text in keeper(messages(case))]
        keep = [(kind, folded(marker)) for kind, marker in case.get("keep", [])]
        drop = [folded(marker) for marker in case.get("drop", [])]
        for kinds, text in kept:
            right = any(m in text for _, m in keep) and not any(m in text for m in drop)
            for kind in kinds:
                table[kind]["kept"] += 1
                table[kind]["right"] += right
            if not right:
                misses.append(f"kept {kinds} {text!r} of {case['lines']}")
        for kind, marker in keep:
            table[kind]["wanted"] += 1
            hit = any(kind in kinds and marker in text for kinds, text in kept)
            table[kind]["found"] += hit
            if not hit:
                misses.append(f"missed {kind} {marker!r} of {case['lines']}")
    totals = {f: sum(row[f] for row in table.values()) for f in ("kept", "right", "wanted", "found")}
    return {"kinds": table, "all": totals, "misses": misses}


def ratio(a: int, b: int) -> float:
    return a / b if b else 1.0


def report(part: str, keeper: Keeper) -> str:
    s = score(part, keeper)
    rows = [f"{part}: kind        precision  recall"]
    for kind, r in [*s["kinds"].items(), ("all", s["all"])]:
        p, c = ratio(r["right"], r["kept"]), ratio(r["found"], r["wanted"])
        rows.append(
            f"  {kind:<12} {p:5.2f} ({r['right']}/{r['kept']})  {c:5.2f} ({r['found']}/{r['wanted']})"
        )
    return "\n".join(rows + [f"  - {m}" for m in s["misses"]])


def rules(msgs: list[dict[str, Any]]) -> list[tuple[Sequence[str], str]]:
    from shared_lib.memory.fact_merge import kept_facts

    return [(f.kinds, f.text) for f in kept_facts(msgs)]


if __name__ == "__main__":
    print(report("tuned", rules))
    print(report("heldout", rules))
