"""The earlier steps of a multi-step turn, in the Messages API's own multi-turn shape.

Each finished step is the model's ``submit_proposal`` call (an ``assistant`` ``tool_use``
block with the proposal it made) followed by a ``user`` message with its ``tool_result``:
what the charter decided (the verdict, the gate) and what the tools returned, as a user
reads them (``tools.display.shown_result``: 「11月25日（水）」) and masked like any other
input, with the numbering of the user's own message. The last result carries a cache
breakpoint, so the next step reads everything before it from the cache; the tools and the
persona's system block stay the stable cached prefix of every step; what to do with a result is
in the persona's instructions (``brain_instructions.ja.md``, 複数ステップ), not in the messages.
"""

from __future__ import annotations

import json
from datetime import date
from typing import Any

from shared_lib.brain.tool_defs import CACHE, DECISION_TOOL
from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.tools.display import shown_result
from shared_lib.tools.registry import ToolRegistry
from shared_lib.turn.envelope import StepRecord


def tool_use_id(step: StepRecord) -> str:
    return f"toolu_step_{step.turn_id[-10:]}_{step.step}"


def _outcome(step: StepRecord, registry: ToolRegistry, today: date) -> dict[str, Any]:
    g, a = step.guardian, step.authorization
    return {
        "step": step.step,
        "verdict": g.action if g else None,
        "verdict_reason": g.reason_code if g else None,
        "authorization": a.result if a else None,
        "results": [
            {
                "tool": r.tool_name,
                "ok": r.ok,
                "error_code": r.error_code,
                "result": shown_result(registry, r.tool_name, r.result, today=today),
            }
            for r in step.results
        ],
    }


def history_messages(
    steps: list[StepRecord],
    *,
    registry: ToolRegistry,
    today: date,
    vault: dict[str, str],
    sanitizer: Sanitizer | None = None,
) -> list[dict[str, Any]]:
    """The messages that follow the user's message at a later step (empty at the first)."""
    s = sanitizer or Sanitizer.default()
    messages: list[dict[str, Any]] = []
    for i, step in enumerate(steps):
        if step.proposal is None:
            continue
        call = {
            "type": "tool_use",
            "id": tool_use_id(step),
            "name": DECISION_TOOL,
            "input": step.proposal.root.model_dump(mode="json", exclude_none=True),
        }
        outcome = s.mask_obj(_outcome(step, registry, today), vault)
        content = json.dumps(outcome, ensure_ascii=False, default=str)
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": call["id"], "content": content}
        if i == len(steps) - 1:
            result["cache_control"] = dict(CACHE)
        messages += [{"role": "assistant", "content": [call]}, {"role": "user", "content": [result]}]
    return messages
