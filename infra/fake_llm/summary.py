"""The scripted model's summaries: answers compaction's summary calls (``context.summary_prompt``).

A summary call is recognised by its system text (「…要約してください。」) and its input, which
ends in 「要約:」. The answer is a real shortening of what it was given, deterministic: for a
conversation, the start of each of the person's lines (what they asked, decided or preferred)
and the assistant's last line; for earlier summaries (level 3), the start of each of them. It
speaks as the persona when the prompt names sentence endings.

>>> text = "会話:\\nユーザー（11/25 10:00）: 見積書の期限は金曜にしたい\\nアシスタント（11/25 10:00）: 金曜で登録したウル\\n\\n要約:"
>>> summarise("あなたはソウルくんです。以下の会話をソウルくんの視点で要約してください。\\n- 一人称は「私」、文末は「ウル」", text)
'ユーザーの話: 見積書の期限は金曜にしたい。私の返答: 金曜で登録したウル。…とまとめたウル'
"""

from __future__ import annotations

import re

from infra.fake_llm.scenario import MessagesRequest

_LINE = re.compile(r"^(ユーザー|アシスタント)（[^）]*）: (.*)$")
CLIP = 24


def summary_input(request: MessagesRequest) -> str | None:
    """The text to summarise of a summary call, else ``None``."""
    text = request.last_user_text()
    if request.tool_names() or "要約してください" not in request.system_text() or not text.endswith("要約:"):
        return None
    return text


def _clip(text: str) -> str:
    text = text.strip().rstrip("。")
    return text if len(text) <= CLIP else text[:CLIP] + "…"


def summarise(system: str, text: str) -> str:
    said, answered, earlier = [], "", []
    for line in text.splitlines():
        if found := _LINE.match(line):
            if found.group(1) == "ユーザー":
                said.append(_clip(found.group(2)))
            else:
                answered = _clip(found.group(2))
        elif line.startswith(("- ", "これまでの要点: ")):
            earlier.append(_clip(line.split(": ", 1)[-1] if line.startswith("これまで") else line[2:]))
    parts = []
    if earlier:
        parts.append("要点: " + "／".join(earlier[-6:]))
    if said:
        parts.append("ユーザーの話: " + "／".join(said[-6:]))
    if answered:
        parts.append(("私の返答: " if "一人称は「私」" in system else "返答: ") + answered)
    body = "。".join(parts) or "特記事項なし"
    return f"{body}。…とまとめたウル" if "文末は「ウル」" in system else f"{body}。"
