"""When a completed turn deserves an episode (seed 001 §22.2, pattern 2), from its facts.

``TurnFacts`` is what the turn-completed hook knows: who said what, what the assistant
answered, and each tool result's name, success and result. A turn is worth an episode when:

* ``remember``: the person asked to remember it (「覚えておいて」「これ重要」「忘れないで」…);
* ``task_done``: a task was marked done (``chatwork_task_complete`` succeeded, not a preview);
* ``goal_reached``: a goal's progress reached 100 % (``goal_progress_report`` succeeded).

>>> trigger_of(TurnFacts("t1", "u1", "これ重要なので覚えておいて", "はいウル", datetime(2026, 11, 25)))
'remember'
>>> trigger_of(TurnFacts("t2", "u1", "ありがとう", "どういたしましてウル", datetime(2026, 11, 25)))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

Trigger = Literal["remember", "task_done", "goal_reached"]
REMEMBER_PHRASES = (
    "覚えておいて",
    "覚えといて",
    "覚えておいてね",
    "これ重要",
    "これは重要",
    "忘れないで",
    "記憶しておいて",
)
TRIGGER_LABELS: dict[str, str] = {
    "remember": "覚えておいてほしいと頼まれたこと",
    "task_done": "タスクが完了したこと",
    "goal_reached": "目標を達成したこと",
}
_TEXT_CHARS = 1500


@dataclass(frozen=True)
class ToolFact:
    name: str
    ok: bool
    result: dict[str, Any] = field(default_factory=dict)
    dry_run: bool = False


@dataclass(frozen=True)
class TurnFacts:
    """A completed turn, as an event episode needs it (texts may be masked or not: the
    episode is masked before it is stored)."""

    turn_id: str
    user_id: str
    text: str  # what the person said
    reply: str  # what the assistant answered
    at: datetime
    user_name: str = ""
    tools: tuple[ToolFact, ...] = ()

    def prompt(self, trigger: str) -> str:
        """The user message of the episode call: what happened and why it is kept."""
        done = "\n".join(
            f"- {t.name}: {'成功' if t.ok else '失敗'} {_facts(t.result)}".rstrip() for t in self.tools
        )
        return (
            f"覚えておく理由: {TRIGGER_LABELS.get(trigger, trigger)}\n"
            f"{self.user_name or 'メンバー'}: {self.text[:_TEXT_CHARS]}\n"
            f"あなた: {self.reply[:_TEXT_CHARS]}" + (f"\n行った操作:\n{done}" if done else "")
        )


def _facts(result: dict[str, Any]) -> str:
    shown = [
        f"{k}={v}" for k, v in result.items() if isinstance(v, str | int | float) and not k.endswith("_id")
    ]
    return "（" + "、".join(shown[:5]) + "）" if shown else ""


def trigger_of(facts: TurnFacts) -> Trigger | None:
    """Why ``facts`` deserve an episode, else ``None`` (the first reason of the list above)."""
    if any(p in facts.text for p in REMEMBER_PHRASES):
        return "remember"
    for tool in facts.tools:
        if not tool.ok or tool.dry_run:
            continue
        if tool.name == "chatwork_task_complete" and tool.result.get("status") == "done":
            return "task_done"
        if tool.name == "goal_progress_report" and _percent(tool.result.get("progress")) >= 100:
            return "goal_reached"
    return None


def _percent(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0
