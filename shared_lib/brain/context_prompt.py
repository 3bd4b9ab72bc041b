"""The Context Builder's context for the prompt, in Truth order (seed 000 §8.2
"データソース優先順位": real-time API > DB > specifications > memory > guessing, which is
forbidden).

The Context Builder renders its sections in Truth order within its token budget
(``turn.context.rendered``); the brain uses that text as it is, adding only what the
builder cannot know (results of the previous step of a multi-step turn). A turn without
a rendering (an older envelope, a unit test) is rendered here from the structured
fields, in the same order: state and CEO teachings first (§5.1.2 priority 1, §5.2.5
instruction 4), then ranks 1-5. That fallback leaves the user's permission level out.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from shared_lib.envelope import Turn

JST = ZoneInfo("Asia/Tokyo")
LIMITS = {"persons": 50, "tasks": 10, "goals": 5, "teachings": 5, "knowledge": 5, "recent": 10}
TEXT_KEYS = ("content", "text", "title", "body", "name", "summary")


def _item(value: Any, width: int = 200) -> str:
    if isinstance(value, dict):
        head = next((str(value[k]) for k in TEXT_KEYS if value.get(k)), "")
        rest = {k: v for k, v in value.items() if k not in TEXT_KEYS and not str(k).endswith("_id") and v}
        text = head + (f" ({json.dumps(rest, ensure_ascii=False, default=str)})" if rest else "")
    else:
        text = str(value)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _section(title: str, lines: list[str]) -> str:
    return f"【{title}】\n" + "\n".join(lines) if lines else ""


def _bullets(items: list[Any], limit: int, width: int = 200) -> list[str]:
    return [f"- {_item(x, width)}" for x in items[:limit]]


HEADER = "【現在のコンテキスト】"
PREAMBLE = "（以下はデータソース優先順位の順。上位の情報と下位の情報が食い違うときは上位を正とする）"


def render_context(turn: Turn, now: datetime) -> str:
    """The volatile part of the prompt (after the cached system prompt and tools)."""
    if turn.context.rendered.strip():
        step = _step_results(turn)
        previous = _section("直前のツール実行結果（出典: リアルタイムAPI）", step) if step else ""
        return "\n\n".join(p for p in (HEADER, PREAMBLE, previous, turn.context.rendered.strip()) if p)
    return _render_fields(turn, now)


def _step_results(turn: Turn) -> list[str]:
    if turn.step == 0:
        return []
    return [f"- {r.tool_name}: {_item(r.result, 400)}" for r in turn.execution.results if r.ok]


def _render_fields(turn: Turn, now: datetime) -> str:
    c = turn.context
    state: list[str] = []
    mode = c.session.get("mode")
    if mode and mode != "normal":
        state.append(f"- セッションモード: {mode}")
    if c.pending_action:
        state.append(f"- 確認待ちの操作: {_item(c.pending_action.get('question', ''))}")
    realtime = [f"- 現在日時: {now.astimezone(JST).strftime('%Y年%m月%d日 %H:%M')}（日本時間）"]
    realtime += [f"- 直前のツール実行結果 {line[2:]}" for line in _step_results(turn)]
    db: list[str] = []
    if c.user:
        dept = f"（部署: {c.user.department_id}）" if c.user.department_id else ""
        db.append(f"- 話している人: {c.user.name or c.user.user_id}{dept}")
    if c.persons:
        db.append("- 社内の人: " + "、".join(_item(p, 40) for p in c.persons[: LIMITS["persons"]]))
    db += [f"- タスク: {line[2:]}" for line in _bullets(c.tasks, LIMITS["tasks"])]
    db += [f"- 目標: {line[2:]}" for line in _bullets(c.goals, LIMITS["goals"])]
    memory: list[str] = []
    if c.preferences:
        memory.append(f"- 嗜好: {_item(c.preferences)}")
    if c.summary:
        memory.append(f"- 会話の要約: {_item(c.summary, 600)}")
    if c.recent_messages:
        memory.append("- 直近の会話:")
        memory += [
            f"  - {m.get('role')}: {_item(m.get('text', ''))}" for m in c.recent_messages[-LIMITS["recent"] :]
        ]
    parts = [
        _section("現在の状態", state),
        _section("CEO教え（最優先で従う）", _bullets(c.teachings, LIMITS["teachings"], 300)),
        PREAMBLE,
        _section("1位 リアルタイム", realtime),
        _section("2位 DB（正規データ）", db),
        _section("3位 設計書・仕様書・ナレッジ", _bullets(c.knowledge, LIMITS["knowledge"], 300)),
        _section("4位 Memory（会話の文脈）", memory),
        "【5位 推測】禁止。足りない情報は確認質問で聞く。",
        _section("取得できなかった情報（縮退モード）", [f"- {d}" for d in c.degraded]),
    ]
    return HEADER + "\n" + "\n\n".join(p for p in parts if p)
