"""The legacy keyword brain: a real matcher over the registry, the same proposal model."""

from __future__ import annotations

import pytest

from shared_lib.brain import legacy
from shared_lib.brain.config import load_brain_config
from shared_lib.brain.validation import validate_proposal
from shared_lib.persona.catalogue import load_persona
from shared_lib.turn.proposal import ClarificationProposal, TextResponseProposal, ToolCallProposal
from shared_lib.wiring.features import tool_registry

REGISTRY = tool_registry()
PERSONA = load_persona()
CFG = load_brain_config()


def propose(text: str):
    return legacy.propose(text, registry=REGISTRY, persona=PERSONA)


@pytest.mark.parametrize(
    "text, tool, params",
    [
        (
            "田中さんに見積書作成のタスクを明日までにお願い",
            "chatwork_task_create",
            {"body": "見積書作成", "assignee_name": "田中", "limit_date": "明日"},
        ),
        ("私のタスクを教えて", "chatwork_task_search", {"assignee_name": "私"}),
        ("覚えておいて：私はコーヒーはブラック派", "save_memory", {"content": "私はコーヒーはブラック派"}),
        (
            "全員に「明日の会議は10時から」とアナウンスして",
            "announce",
            {"message": "明日の会議は10時から", "recipients": "all"},
        ),
        ("全社員の一覧を見せて", "view_all_users", {}),
        (
            "山田さんの権限をレベル6に変更して",
            "change_permission",
            {"target_user_name": "山田", "new_level": 6},
        ),
    ],
)
def test_given_a_request_with_keywords_when_proposed_then_the_tool_and_parameters_are_extracted(
    text, tool, params
):
    proposal = propose(text)
    root = proposal.root
    assert isinstance(root, ToolCallProposal)
    assert root.tool_calls[0].tool_name == tool
    assert {k: v for k, v in root.tool_calls[0].parameters.items() if k in params} == params
    assert 0.5 <= proposal.confidence <= 0.85


def test_given_any_legacy_tool_call_when_validated_like_an_llm_answer_then_it_is_valid():
    # The legacy brain produces the same, valid proposal model (it is the shadow's control arm)
    for text in (
        "田中さんに見積書作成のタスクを明日までにお願い",
        "覚えておいて：猫が好き",
        "全社員の一覧を見せて",
    ):
        proposal = propose(text)
        assert validate_proposal(proposal.model_dump(mode="json"), REGISTRY) == proposal


def test_given_a_negative_keyword_when_scored_then_the_other_intent_wins():
    # 「タスク」 alone would suggest creating one; 「教えて」 is a negative word for creation
    ranked = legacy.rank("田中さんのタスクを教えて", REGISTRY, CFG)
    assert ranked[0].spec.name == "chatwork_task_search"


def test_given_missing_required_parameters_when_proposed_then_it_asks_for_them():
    proposal = propose("タスク追加して")
    assert isinstance(proposal.root, ClarificationProposal)
    question = proposal.root.clarification_question
    assert "担当者" in question and "assignee_name" not in question and proposal.confidence < 0.5


def test_given_no_keyword_when_proposed_then_a_small_talk_text_with_its_own_confidence():
    proposal = propose("今日はいい天気ですね")
    assert isinstance(proposal.root, TextResponseProposal)
    assert proposal.root.text_response == PERSONA.message("legacy_smalltalk") and proposal.confidence == 0.6


@pytest.mark.parametrize(
    "text, key", [("おはよう！", "fast_good_morning"), ("ありがとうございます、助かった", "fast_thanks")]
)
def test_given_a_greeting_when_proposed_then_the_greeting_template(text, key):
    proposal = propose(text)
    assert proposal.root.text_response == PERSONA.message(key)  # type: ignore[union-attr]


def test_given_two_tools_tied_when_proposed_then_it_asks_which_one():
    # GIVEN a message that hits two tools equally
    a, b = legacy.rank("目標を削除して記憶を削除", REGISTRY, CFG)[:2]
    assert a.score - b.score < legacy.CLEAR_LEAD
    proposal = propose("目標を削除して記憶を削除")
    assert isinstance(proposal.root, ClarificationProposal) and len(proposal.root.options) == 2
