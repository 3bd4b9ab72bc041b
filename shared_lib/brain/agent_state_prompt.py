"""The agent state at the top of the Main prompt (seed 004 §3.2, §5): a short fixed format.

The context layer reads the conversation's agent state into ``turn.context.agent_state``
(the fixed five ``goal``, ``why_now``, ``constraints``, ``plan_brief``, ``open_questions``;
``step``, ``status``, ``decision_log``, ``last_delta``, ``pending_gate``). The brain shows
it first in Main, every field clipped to the seed's limits (§5.1: a line of 200 characters,
at most 2 constraints, 3 plan steps and 2 open questions of 100 each), so the block is
bounded. The context's token budget counts it with the context and, in seed 004 §11's
order (evidence, summary, then the open questions, then the plan's moves), may have cut its
open questions and plan before it gets here (``context.budget``); its other fields are never
cut. An empty state is one line.
Masking is the caller's (``brain.prompt`` masks Main as a whole).

>>> print(render_agent_state({}))
【エージェント状態】まだなし
>>> print(render_agent_state({"goal": "見積書を送る", "plan_brief": ["宛先を確かめる", "送る"], "step": "PLANNING"}))
【エージェント状態】
ステップ: PLANNING／ステータス: なし
目標: 見積書を送る
なぜ今: なし
制約: なし
直近の計画: 1. 宛先を確かめる 2. 送る
未解決の問い: なし
"""

from __future__ import annotations

from typing import Any

HEADER = "【エージェント状態】"
NONE = "なし"
LINE, ITEM = 200, 100  # seed 004 §5.1: one line ≤ 200 characters, a list item ≤ 100
LIMITS = {"constraints": 2, "plan_brief": 3, "open_questions": 2, "decision_log": 3}


def render_agent_state(state: dict[str, Any]) -> str:
    """The block; the fixed five always (``なし`` when unset), the rest only when present."""
    if not any(_present(v) for v in (state or {}).values()):
        return HEADER + "まだなし"
    lines = [
        HEADER,
        f"ステップ: {_line(state.get('step'))}／ステータス: {_line(state.get('status'))}",
        f"目標: {_line(state.get('goal'))}",
        f"なぜ今: {_line(state.get('why_now'))}",
        f"制約: {_joined(state, 'constraints')}",
        f"直近の計画: {_numbered(state, 'plan_brief')}",
        f"未解決の問い: {_joined(state, 'open_questions')}",
    ]
    if _present(state.get("decision_log")):
        lines.append(f"決めたこと: {_joined(state, 'decision_log', latest=True)}")
    if _present(state.get("last_delta")):
        lines.append(f"直近の変化: {_line(state.get('last_delta'))}")
    if state.get("pending_gate"):
        lines.append("承認待ち: あり（まだ実行していない）")
    return "\n".join(lines)


def _present(value: Any) -> bool:
    if isinstance(value, list | tuple | dict):
        return any(_present(v) for v in value) if not isinstance(value, dict) else bool(value)
    return value is not None and value is not False and str(value).strip() != ""


def _clip(value: Any, width: int) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _line(value: Any) -> str:
    return _clip(value, LINE) if _present(value) else NONE


def _items(state: dict[str, Any], key: str, *, latest: bool = False) -> list[str]:
    value = state.get(key)
    values = [value] if isinstance(value, str) else list(value) if isinstance(value, list | tuple) else []
    kept = [_clip(v, ITEM) for v in values if _present(v)]
    n = LIMITS[key]
    return kept[-n:] if latest else kept[:n]


def _joined(state: dict[str, Any], key: str, *, latest: bool = False) -> str:
    return "／".join(_items(state, key, latest=latest)) or NONE


def _numbered(state: dict[str, Any], key: str) -> str:
    return " ".join(f"{i}. {v}" for i, v in enumerate(_items(state, key), 1)) or NONE
