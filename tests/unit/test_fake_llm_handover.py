"""The scripted model's hand-over check (``infra.fake_llm.handover``, seed 001 §14.5): it answers
「〇〇のこと、忘れてないよね？」 from the conversation its request carries, and without that
conversation it does not know and asks back — it never reads the store."""

from __future__ import annotations

from typing import Any

import pytest

from infra.fake_llm.scenario import MessagesRequest
from infra.fake_llm.scripted import PROPOSAL_TOOL, answer, proposal_rule_for

TOOLS = [{"name": PROPOSAL_TOOL, "description": "decide", "input_schema": {"type": "object"}}]
FORCED = {"type": "tool", "name": PROPOSAL_TOOL}
HISTORY = (
    "【直近の会話】（出典: 会話の記憶）\n"
    "- user: 月曜の中村さんとの打ち合わせ、場所は517号室に決まったよ。会社案内のパンフレットを持っていくのも忘れないでね🙏\n"
    "- assistant: 了解ウル！\n"
    "- user: ありがとう、助かる！"
)


def proposal_for(said: str, context: str = "") -> dict[str, Any]:
    blocks = [{"type": "text", "text": f"【現在のコンテキスト】\n\n{context}"}] if context else []
    body = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 512,
        "tools": TOOLS,
        "tool_choice": FORCED,
        "messages": [{"role": "user", "content": [*blocks, {"type": "text", "text": said}]}],
    }
    reply = answer(MessagesRequest(body))
    return reply.content[0]["input"]


@pytest.mark.parametrize(
    "question",
    [
        "中村さんとの打ち合わせのこと、忘れてないよね？場所と持っていくもの、言ってみて",
        "ねえ、中村さんとの打ち合わせの件忘れてへん？どこやったっけ？",
        "中村さんとの打ち合わせのこと忘れないでね！何持っていくか覚えてる？",
    ],
)
def test_a_hand_over_check_is_answered_from_the_conversation_it_is_given(question):
    # GIVEN a request whose context carries the conversation WHEN asked whether it was kept
    proposal = proposal_for(question, HISTORY)
    # THEN a text answer in the persona's voice names what was said: the room and the thing
    reply = proposal["text_response"]
    assert proposal["output_type"] == "text_response"
    assert "517号室" in reply and "会社案内のパンフレット" in reply and "ウル" in reply
    assert "忘れないで" not in reply  # what was said, not the request to keep it


def test_without_the_conversation_it_does_not_know_and_asks_back():
    # GIVEN the same question WHEN the context carries no conversation (a context that lost it)
    context = "【あなたと話している人】（出典: DB（正規データ））\n- スモークテスト（レベル1）"
    reply = proposal_for(
        "中村さんとの打ち合わせのこと、忘れてないよね？場所と持っていくもの、言ってみて", context
    )["text_response"]
    # THEN it says it does not know and asks back, naming no room
    assert "分からない" in reply and "もう一度教えて" in reply and "号室" not in reply


def test_a_conversation_about_something_else_is_not_taken_for_it():
    other = "【直近の会話】（出典: 会話の記憶）\n- user: 来週の高橋さんとの面談、資料は議事録で大丈夫かな🙏"
    reply = proposal_for("中村さんとの打ち合わせのこと、忘れてないよね？", other)["text_response"]
    assert "分からない" in reply and "議事録" not in reply


@pytest.mark.parametrize(
    ("said", "rule"),
    [
        ("来週の打ち合わせは304号室。見積書を持っていくのも忘れないでね🙏", "fallback"),  # the fact itself
        ("田中さんの電話番号なんだっけ？", "recall"),  # a kept memory: still the memory tool
    ],
)
def test_what_is_not_a_hand_over_check_keeps_its_rule(said, rule):
    proposal = proposal_for(said, HISTORY)
    assert proposal_rule_for(said).name == rule
    assert proposal.get("text_response", "").find("517号室") < 0
