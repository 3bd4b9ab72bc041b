"""The scripted model's answers to the background memory calls (``shared_lib.memory``), so the
demo and the local stack can run the daily digest, event episodes and the tagging job.

A memory call's system text starts with ``[[charter-memory:JOB]]`` (``memory.answers.marker``).
Every answer is derived from the call's input, never a constant:

* ``daily_digest``: the log's speakers are the characters, the most frequent terms of what
  they said the topics and tags, a few words set the mood; the story, in ソウルくん's voice,
  says who talked about what and how many messages the day had.
* ``event_driven``: the reason given (「覚えておく理由」) and what the person said.
* ``interests``: the diary's most frequent terms.
* ``tagging``: per ``<item id="i">``, its most frequent terms (confidence by rank) and every
  interest the item mentions.

>>> terms("見積書の確認と見積書の送付、それから請求書の確認")[:3]
['見積書', '確認', '送付']
"""

from __future__ import annotations

import json
import re
from collections import Counter

from infra.fake_llm.scenario import JSON, MessagesRequest, Reply

_MARKER = re.compile(r"\[\[charter-memory:([a-z_]+)\]\]")
_TERM = re.compile(r"[ァ-ヴー]{2,}|[一-龥々]{2,}|[A-Za-z][A-Za-z0-9]{2,}")
_LINE = re.compile(r"^\[(\d{2}:\d{2})\] ([^:]+): (.*)$", re.MULTILINE)
_ITEM = re.compile(r'<item id="(\d+)">\n(.*?)\n</item>', re.DOTALL)
_PERSONA = re.compile(r"あなたは(.+?)です")
_STOP = {"今日", "自分", "こちら", "それ", "これ", "ウル", "ください", "お願い", "メンバー", "関心事", "なし"}
_MOODS = (
    (("ありがとう", "助か", "感謝"), "感謝"),
    (("完了", "できた", "達成", "終わ"), "達成感"),
    (("困", "エラー", "障害", "遅れ"), "困惑"),
    (("重要", "覚えて"), "緊張感"),
)


def terms(text: str, limit: int = 10) -> list[str]:
    """The most frequent content words of ``text`` (katakana, kanji runs, Latin words), first seen first on ties."""
    words = [w for w in _TERM.findall(re.sub(r"\[[A-Z_]+\]", " ", text)) if w not in _STOP]
    counts = Counter(words)
    order = {w: i for i, w in reversed(list(enumerate(words)))}
    return sorted(counts, key=lambda w: (-counts[w], order[w]))[:limit]


def _moods(text: str) -> list[str]:
    return [mood for words, mood in _MOODS if any(w in text for w in words)] or ["落ち着き"]


def _first_user_text(request: MessagesRequest) -> str:
    for message in request.messages:
        if message.get("role") == "user":
            content = message.get("content", "")
            if isinstance(content, list):
                return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
            return str(content)
    return ""


def digest(log: str, persona: str) -> JSON:
    lines = _LINE.findall(log)
    people = list(dict.fromkeys(who for _, who, _ in lines if who != persona))
    said = "\n".join(text for _, who, text in lines if who != persona)  # what people talked about
    topics = terms(said, 3) or ["いろいろな話"]
    with_whom = "、".join(f"{p}さん" for p in people[:3]) or "みんな"
    story = (
        f"今日は{len(lines)}件のやり取りがあったウル。{with_whom}と「{topics[0]}」のことを話したウル。"
        + (f"「{'」「'.join(topics[1:])}」の話も出てきたウル。" if topics[1:] else "")
        + f"最後は「{lines[-1][2][:40] if lines else ''}」で一日が締めくくられたウル。明日も一緒にがんばるウル🐺"
    )
    return {
        "story_text": story,
        "metadata": {
            "mood": _moods(said),
            "topics": topics,
            "characters": people,
            "importance": round(min(1.0, 0.3 + 0.05 * len(lines)), 2),
            "tags": topics,
        },
    }


def event(text: str) -> JSON:
    reason = re.search(r"覚えておく理由: (.+)", text)
    said = re.search(r"^(.+?): (.+)$", text.split("\n", 1)[1] if "\n" in text else "", re.MULTILINE)
    who, what = (said.group(1), said.group(2)) if said else ("メンバー", text)
    topics = terms(what, 3) or ["できごと"]
    # what was said first: a reply quoting the story's start (the scripted integration) quotes it
    story = (
        f"「{what[:60]}」という話を{who}さんから聞いたウル。"
        f"{reason.group(1) if reason else '大切なこと'}だから、ちゃんと覚えておくウル🐺"
    )
    return {
        "story_text": story,
        "metadata": {
            "mood": _moods(text),
            "topics": topics,
            "characters": [who],
            "importance": 0.7,
            "tags": topics,
        },
    }


def tag_items(text: str) -> JSON:
    found = re.search(r"関心事リスト: (.*)", text)
    interests = [
        w.strip()
        for w in (found.group(1) if found else "").split(",")
        if w.strip() and w.strip() != "（なし）"
    ]
    items = []
    for item_id, body in _ITEM.findall(text):
        tags = [{"tag": t, "confidence": round(0.9 - 0.2 * i, 2)} for i, t in enumerate(terms(body, 3))]
        tags += [{"tag": w, "confidence": 0.8} for w in interests if w in body]
        items.append({"id": item_id, "tags": tags})
    return {"items": items}


def answer(request: MessagesRequest) -> Reply | None:
    """The answer to a memory call, else ``None`` (not one)."""
    system = request.system_text()
    job = _MARKER.search(system)
    if job is None:
        return None
    text = _first_user_text(request)
    persona = _PERSONA.search(system)
    result: JSON
    match job.group(1):
        case "daily_digest":
            result = digest(text, persona.group(1) if persona else "")
        case "event_driven":
            result = event(text)
        case "interests":
            result = {"interests": terms(text, 8)}
        case "tagging":
            result = tag_items(text)
        case _:
            return None
    return Reply(
        content=[{"type": "text", "text": json.dumps(result, ensure_ascii=False)}], stop_reason="end_turn"
    )
