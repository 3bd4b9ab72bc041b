"""Skills of the scripted model (issue 22): propose a skill, then call the approved one.

* 「受注金額の合計を計算するスキルを作って」 (スキル + 作って/にして, and 受注金額) → ``propose_skill``
  with a small code skill ``order_total`` (sums ``amounts``; two examples);
* 「通信するスキルを作って」 / 「為替レートを取ってくるスキルを作って」 (スキル + 作って, and
  為替/通信) → ``propose_skill`` with ``fx_rate``, whose code opens a network connection: the
  sandbox refuses it and the version ends ``failed``;
* 「受注金額を合計して 1200 と 3400」 (受注金額 + 合計, no スキル) → ``skill_order_total`` with
  ``amounts`` = the numbers of the message, but only when the request offers that tool (an
  approved, active skill of the organisation); otherwise a short text saying it cannot yet.
"""

from __future__ import annotations

import re
from typing import Any

from infra.fake_llm.jobs import _call

JSON = dict[str, Any]
ORDER_TOTAL_TOOL = "skill_order_total"
_MAKE = ("作って", "にして", "作成して")
_ORDER_TOTAL: JSON = {
    "name": "order_total",
    "display_name": "受注金額の合計",
    "description": "受注金額の一覧を受け取り、その合計金額を返す",
    "input_schema": {
        "type": "object",
        "properties": {
            "amounts": {
                "type": "array",
                "items": {"type": "integer", "description": "受注金額（円）"},
                "description": "受注金額の一覧（円）",
            }
        },
        "required": ["amounts"],
    },
    "parameter_display": {"amounts": "受注金額"},
    "trigger_examples": [
        "受注金額を合計して 1200 と 3400",
        "受注金額の合計を出して",
        "この受注の合計金額は？",
    ],
    "keywords": ["受注金額", "合計"],
    "kind": "code",
    "implementation": "def run(input, view):\n    return {'total': sum(input['amounts'])}\n",
    "examples": [
        {"input": {"amounts": [1200, 3400]}, "output": {"total": 4600}},
        {"input": {"amounts": []}, "output": {"total": 0}},
    ],
}
_FX_RATE: JSON = {
    "name": "fx_rate",
    "display_name": "為替レートの取得",
    "description": "外部のサイトから為替レートを取ってくる",
    "input_schema": {
        "type": "object",
        "properties": {"currency": {"type": "string", "description": "通貨の記号"}},
        "required": ["currency"],
    },
    "parameter_display": {"currency": "通貨"},
    "trigger_examples": ["ドルの為替レートを教えて", "今日の為替は？", "ユーロのレートを取ってきて"],
    "keywords": ["為替"],
    "kind": "code",
    "implementation": (
        "import socket\n"
        "def run(input, view):\n"
        "    socket.create_connection(('rates.example.com', 80), timeout=3)\n"
        "    return {'rate': 150}\n"
    ),
    "examples": [{"input": {"currency": "USD"}, "output": {"rate": 150}}],
}


def _reasoning(intent: str, why: str) -> JSON:
    return {
        "intent_understanding": intent,
        "context_used": ["ユーザーの最新メッセージの文言"],
        "tool_selection_reason": why,
        "alternatives_considered": ["毎回その場で計算して答える"],
    }


def _is_proposal(text: str) -> bool:
    return "スキル" in text and any(w in text for w in _MAKE)


def proposal(text: str, offered: list[str]) -> JSON | None:
    """The proposal for a skill message, or ``None`` when the message is not about skills."""
    if _is_proposal(text) and "受注金額" in text:
        return _call(
            "propose_skill",
            _ORDER_TOTAL,
            _reasoning(
                "受注金額の合計を毎回計算できるスキルを作りたいという依頼だと理解した",
                "スキルの提案として下書きにする",
            ),
        )
    if _is_proposal(text) and any(w in text for w in ("為替", "通信")):
        return _call(
            "propose_skill",
            _FX_RATE,
            _reasoning(
                "為替レートを取ってくるスキルを作りたいという依頼だと理解した",
                "スキルの提案として下書きにする",
            ),
        )
    if "スキル" in text or not ("受注金額" in text and "合計" in text):
        return None
    if ORDER_TOTAL_TOOL not in offered:
        return _cannot(text)
    amounts = [int(n) for n in re.findall(r"\d+", text)]
    return _call(
        ORDER_TOTAL_TOOL,
        {"amounts": amounts},
        _reasoning("受注金額をいくつか挙げて合計を求めていると理解した", "受注金額の合計のスキルで計算する"),
    )


def _cannot(text: str) -> JSON:
    return {
        "output_type": "text_response",
        "reasoning": {
            "intent_understanding": "受注金額の合計を求めているが、そのためのスキルはいま使えない",
            "response_strategy": "いまは計算できないことを伝え、スキルの提案を案内する",
            "no_tool_reason": "受注金額の合計を出せるツールが提示されていないため",
        },
        "confidence": {"overall": 0.8, "intent": 0.8, "parameters": 0.8},
        "text_response": "ごめんウル、受注金額の合計を出す方法はいま使えないウル。",
    }
