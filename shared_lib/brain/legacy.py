"""The legacy keyword brain (seed 000 §2.2.1): the control arm of shadow mode and the
fallback when no LLM is configured or the kill switch is on.

A real matcher: each enabled registry tool scores by the keywords it declares found in
the message (longer keywords weigh more); the best tool above a threshold becomes a
``tool_call`` proposal with simple rule-based parameter extraction, otherwise a
``text_response``. It produces the same ``Proposal`` model as the LLM brain.
"""

from __future__ import annotations

import re
from typing import Any

from shared_lib.persona import Persona
from shared_lib.proposal import Proposal
from shared_lib.tools.registry import ToolRegistry, ToolSpec

MIN_SCORE = 2
_DATE_WORDS = ("今日", "明日", "明後日", "月末")


def _score(spec: ToolSpec, text: str) -> int:
    return sum(len(k) for k in spec.keywords if k in text)


def _extract(spec: ToolSpec, text: str) -> dict[str, Any]:
    fields = spec.params.model_fields
    params: dict[str, Any] = {}
    name = re.search(r"([一-龥ァ-ヶー]{1,8})(さん|くん|様)", text)
    date = next((w for w in _DATE_WORDS if w in text), None)
    if "assignee_name" in fields:
        params["assignee_name"] = name.group(1) if name else "自分"
    if "target_user_name" in fields and name:
        params["target_user_name"] = name.group(1)
    if "limit_date" in fields and date:
        params["limit_date"] = date
    for key in ("body", "content", "message", "task_query"):
        if key in fields:
            params[key] = text
    if "recipients" in fields and "全員" in text:
        params["recipients"] = "all"
    return params


def propose(text: str, *, registry: ToolRegistry, persona: Persona) -> Proposal:
    ranked = sorted(((_score(s, text), s) for s in registry.enabled()), key=lambda x: -x[0])
    if ranked and ranked[0][0] >= MIN_SCORE:
        score, spec = ranked[0]
        params = _extract(spec, text)
        try:
            spec.params.model_validate(params)
            confidence = min(0.5 + 0.1 * score, 0.85)
        except Exception:
            confidence = 0.35
        return Proposal.model_validate({
            "output_type": "tool_call",
            "reasoning": {"intent_understanding": f"キーワード一致（スコア{score}）: {', '.join(spec.keywords)}",
                          "tool_selection_reason": f"レガシー脳のキーワード規則で {spec.name} を選択"},
            "confidence": {"overall": confidence, "intent": confidence, "parameters": confidence},
            "tool_calls": [{"tool_name": spec.name, "parameters": params,
                            "parameter_sources": {k: "user_message" for k in params}}],
        })
    return Proposal.model_validate({
        "output_type": "text_response",
        "reasoning": {"intent_understanding": "登録された機能のキーワードに一致しない発言",
                      "no_tool_reason": "レガシー脳はキーワード一致がない場合に雑談応答を返す"},
        "confidence": {"overall": 0.8},
        "text_response": f"{persona.name}ウル🐺 お話ありがとうウル！",
    })
