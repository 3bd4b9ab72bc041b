"""The context block of the prompt: the Context Builder's rendering, framed for the brain.

The Context Builder renders its sections in Truth order within its token budget
(``turn.context.rendered``, seed 000 §8.2 "データソース優先順位": real-time API > DB >
specifications > memory > guessing, which is forbidden). The brain uses that text as it
is, adding only a header, the Truth-order note and what the builder cannot know (results
of the previous step of a multi-step turn). A turn without a rendering (an older
envelope, a unit test) is rendered from its record by the same renderer
(``shared_lib.context.render_recorded``).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from shared_lib.context import render_recorded
from shared_lib.turn.envelope import Turn

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


HEADER = "【現在のコンテキスト】"
PREAMBLE = "（以下はデータソース優先順位の順。上位の情報と下位の情報が食い違うときは上位を正とする）"


def render_context(turn: Turn, now: datetime) -> str:
    """The volatile part of the prompt (after the cached system prompt and tools)."""
    rendered = turn.context.rendered.strip() or render_recorded(
        turn.context, now=now, user_id=turn.user_id, user_name=turn.inbound.user_name
    )
    step = _step_results(turn)
    previous = "【直前のツール実行結果（出典: リアルタイムAPI）】\n" + "\n".join(step) if step else ""
    return "\n\n".join(p for p in (HEADER, PREAMBLE, previous, rendered) if p)


def _step_results(turn: Turn) -> list[str]:
    if turn.step == 0:
        return []
    return [f"- {r.tool_name}: {_item(r.result, 400)}" for r in turn.execution.results if r.ok]
