"""The scripted model's judge: answers Best-of-N's evaluation call (``shared_lib.features.best_of_n.steps_evaluator``)
with a JSON verdict that discriminates, so the demo and the e2e can run with Best-of-N on.

The call frames every candidate as ``<candidate index="i">…</candidate>`` inside
``<candidates>``; each is scored 1-10 by what a careful reader would check: persona (the share
of sentences ending in 「ウル」, the wolf emoji), rules (a forbidden phrase, a mask placeholder,
an ISO date or a snake_case name drops it to 2) and quality (the facts it quotes, its length).

>>> verdict(["タスクを作成したウル！結果は「見積書」だウル。", "タスクを作成しました。期限は2026-11-25です。"])["scores"][1]
{'index': 2, 'quality': 5, 'persona': 1, 'rules': 2}
"""

from __future__ import annotations

import re

from infra.fake_llm.scenario import JSON, MessagesRequest

_CANDIDATES = re.compile(r"<candidates>\n(.*)\n</candidates>", re.DOTALL)
_CANDIDATE = re.compile(r'<candidate index="(\d+)">\n(.*?)\n</candidate>', re.DOTALL)
_BREAKS = re.compile(r"[^。！？!?\n]+[。！？!?]*")
_RULE_BREAKS = re.compile(
    r"しなさい|すべき|自分で考えて|\[[A-Z][A-Z_]*(?:_\d+)?\]|\d{4}-\d{2}-\d{2}|\b[a-z]+_[a-z_]+\b"
)


def judge_input(request: MessagesRequest) -> list[str] | None:
    """The candidates of a judge call (in index order), else ``None``."""
    if request.tool_names():
        return None
    found = _CANDIDATES.search(request.last_user_text())
    if not found:
        return None
    return [text for _, text in sorted(_CANDIDATE.findall(found.group(1)), key=lambda m: int(m[0]))]


def _persona(text: str) -> int:
    sentences = [s.strip(" 　🐺") for s in _BREAKS.findall(text) if s.strip(" 　🐺")]
    if not sentences:
        return 1
    ended = sum(s.rstrip("。！？!?…").endswith("ウル") for s in sentences) / len(sentences)
    return max(1, min(10, round(1 + 8 * ended) + ("🐺" in text)))


def _quality(text: str) -> int:
    quotes = text.count("「")
    return max(1, min(10, 5 + min(quotes, 3) + (40 <= len(text) <= 400) - (len(text) > 600)))


def verdict(candidates: list[str]) -> JSON:
    return {
        "scores": [
            {
                "index": i,
                "quality": _quality(text),
                "persona": _persona(text),
                "rules": 2 if _RULE_BREAKS.search(text) else 9,
            }
            for i, text in enumerate(candidates, 1)
        ]
    }
