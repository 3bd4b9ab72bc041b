"""Heartbeat tasks of the scripted model (issue 38): set one, then run it.

A person's message that names a recurring time (毎週, 毎朝, 毎日, 平日, 毎月, 月末, ごとに) and
asks for something (「毎週月曜9時に、今週の締め切りをチームに共有して」) is
``schedule_heartbeat_task``: the schedule as said (the words up to the first 「に」 after the
time) and the rest as the instruction; the product reads the schedule itself. A run's turn
carries the product's marker 【定期タスク】 before its instruction; the model looks at the
creator's own tasks (``chatwork_task_search``, 自分), the one read the run needs.
"""

from __future__ import annotations

import re

from infra.fake_llm.jobs import _call, _reasoning
from infra.fake_llm.scenario import JSON

RUN_MARKER = "【定期タスク】"  # the product's marker of a run's turn (same text, not imported)
# a recurring time (月末 only as a time of its own, not 「月末までに」, a one-off deadline)
# two weekdays (「月曜と木曜の朝に」「土日の10時に」) are a week's too, as the product reads them
_RECURRING = re.compile(
    r"毎週|毎朝|毎日|平日|営業日|毎月|毎晩|ごとに|月末(?!まで)|[月火水木金土日]曜日?\s*(?:と|・|、)\s*[月火水木金土日]曜|土日の"
)
_ASKS = ("して", "教えて", "送って", "まとめて", "共有")
_NOT_MINE = ("さんに", "覚えて", "記憶して")  # a task for someone, a memory to keep
_SPLIT = re.compile(r"^(?P<schedule>.+?)に[、,，\s]*(?P<instruction>.+)$")


def is_run(text: str) -> bool:
    return text.startswith(RUN_MARKER)


def is_request(text: str) -> bool:
    if is_run(text) or any(w in text for w in _NOT_MINE):
        return False
    return _RECURRING.search(text) is not None and any(w in text for w in _ASKS)


def schedule(text: str) -> JSON:
    found = _SPLIT.match(text.strip())
    said, instruction = (found["schedule"], found["instruction"]) if found else (text, text)
    return _call(
        "schedule_heartbeat_task",
        {"schedule": said.strip(), "instruction": instruction.strip()},
        _reasoning(
            "決まった日時にくり返しする仕事の登録依頼", "くり返しの仕事なので定期的な仕事の登録を使う"
        ),
    )


def run(text: str) -> JSON:
    return _call(
        "chatwork_task_search",
        {"assignee_name": "自分"},
        _reasoning("登録された定期的な仕事の実行", "締め切りを共有するには、まずタスクを確認する"),
    )
