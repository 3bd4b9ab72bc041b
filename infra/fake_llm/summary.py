"""The scripted model's summaries: answers compaction's summary calls (``context.summary_prompt``).

A summary call is recognised by its system text (「…要約してください。」) and its input, which
ends in 「要約:」. The answer is a real shortening of what it was given, deterministic: for a
conversation, the start of each of the person's lines (what they asked, decided or preferred)
and the assistant's last line; for earlier summaries (level 3), the start of each of them. It
speaks as the persona when the prompt names sentence endings. When the prompt asks for the
facts line (``<facts>``, ``shared_lib.context.summary_facts``), the answer ends with the
person's lines of the given conversation that read as a decision, a promise, a wish, a date, a
fix or a 「覚えておいて」 (a keyword table of its own, questions and wavering left out), as
written — placeholders included — never anything the conversation did not say.

>>> text = "会話:\\nユーザー（11/25 10:00）: 見積書の期限は金曜にしたい\\nアシスタント（11/25 10:00）: 金曜で登録したウル\\n\\n要約:"
>>> summarise("あなたはソウルくんです。以下の会話をソウルくんの視点で要約してください。\\n- 一人称は「私」、文末は「ウル」", text)
'ユーザーの話: 見積書の期限は金曜にしたい。私の返答: 金曜で登録したウル。…とまとめたウル'
"""

from __future__ import annotations

import json
import re

from infra.fake_llm.scenario import MessagesRequest

_LINE = re.compile(r"^(ユーザー|アシスタント)（[^）]*）: (.*)$")
CLIP = 24
FACT_CLIP = 120
MAX_FACTS = 10
# the scripted model's own reading of what is worth keeping (first match wins)
FACT_WORDS = (
    ("remember", re.compile(r"覚えて|覚えと|重要|大事|忘れな|忘れん")),
    ("error_fix", re.compile(r"(?:直っ|なおっ|直り|なおり|解決|復旧|原因)")),
    (
        "decision",
        re.compile(
            r"決定|決ま[りっ]|確定|方針|に(?:します|しましょう|しよう)|でいき|で進め|ことになり|に変更|見送"
        ),
    ),
    (
        "commitment",
        re.compile(r"までに|締切|期限|厳守|[てと](?:おき|き)ます|送ります|出します|やります|共有します"),
    ),
    ("preference", re.compile(r"好き|苦手|ほしい|欲しい|がいい|助か|ありがたい|うれしい")),
    ("date", re.compile(r"\d+\s*[/月]\s*\d+|\d+時|[月火水木金土日]曜|来週|明日|月末")),
)
UNSURE = re.compile(r"[?？]\s*$|かな|どうしよ|迷|もし|未定|決まってな|決まっていな")


def summary_input(request: MessagesRequest) -> str | None:
    """The text to summarise of a summary call, else ``None``."""
    text = request.last_user_text()
    if request.tool_names() or "要約してください" not in request.system_text() or not text.endswith("要約:"):
        return None
    return text


def _clip(text: str) -> str:
    text = text.strip().rstrip("。")
    return text if len(text) <= CLIP else text[:CLIP] + "…"


def facts_line(text: str) -> str:
    """The ``<facts>`` line for the conversation in ``text``: the person's lines worth keeping."""
    found: list[dict[str, str]] = []
    for line in text.splitlines():
        said = _LINE.match(line)
        if said is None or said.group(1) != "ユーザー" or UNSURE.search(said.group(2)):
            continue
        kind = next((k for k, rule in FACT_WORDS if rule.search(said.group(2))), None)
        if kind is not None:
            found.append({"kind": kind, "text": said.group(2).strip()[:FACT_CLIP]})
    return "<facts>" + json.dumps(found[-MAX_FACTS:], ensure_ascii=False) + "</facts>"


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
    summary = f"{body}。…とまとめたウル" if "文末は「ウル」" in system else f"{body}。"
    return f"{summary}\n{facts_line(text)}" if "<facts>" in system else summary
