"""The scripted model's reading of an answer to its own numbered question (``infra.fake_llm.choice``,
seed 000 §15.2): after 「佐藤さんは2人いるウル！… 1. 佐藤一郎 2. 佐藤花子」 a person's 「2」 is their
request with 佐藤花子 in it, read only from the conversation the request carries."""

from __future__ import annotations

import pytest

from tests.unit.test_fake_llm_handover import proposal_for

REQUEST = "12/25までに年末調整の書類を出すタスク、佐藤さんに振っといて〜"
# as the product renders the history: a reply's lines joined on one line (context.render._clip)
ASKED = (
    "【直近の会話】（出典: 会話の記憶）\n"
    f"- user: {REQUEST}\n"
    "- assistant: 佐藤さんは2人いるウル！佐藤一郎さんと佐藤花子さんのどちらにお願いするウル？ "
    "1. 佐藤一郎 2. 佐藤花子\n\n"
    "【現在日時】\n2026年11月30日（月）21時05分（日本時間）"
)


@pytest.mark.parametrize(
    ("said", "person"),
    [
        ("2", "佐藤花子"),
        ("２", "佐藤花子"),
        ("②でお願いします🙏", "佐藤花子"),
        ("じゃあ1番で！", "佐藤一郎"),
        ("花子さんの方でよろしく", "佐藤花子"),
        ("一郎さんで", "佐藤一郎"),
    ],
)
def test_an_answer_to_the_numbered_question_is_the_request_with_the_chosen_person(said, person):
    # GIVEN the conversation the context carries: the request, then the question with its options
    # WHEN the person answers by number or by name THEN the task is proposed for that person
    proposal = proposal_for(said, ASKED)
    assert proposal["output_type"] == "tool_call", proposal
    call = proposal["tool_calls"][0] if "tool_calls" in proposal else proposal["tool_call"]
    assert call["tool_name"] == "chatwork_task_create"
    params = call["parameters"]
    assert params["assignee_name"] == person and "年末調整" in params["body"]


@pytest.mark.parametrize(
    "said",
    [
        "2時から会議室押さえといて",  # a number, but a request of its own
        "花子さんに明日の件伝えといて",
        "3",  # no third option
        "佐藤さん",  # the name the question was about, not one of its options
    ],
)
def test_what_does_not_answer_the_question_is_not_read_as_a_choice(said):
    proposal = proposal_for(said, ASKED)
    calls = proposal.get("tool_calls") or [proposal.get("tool_call") or {}]
    assert not any(
        (c.get("parameters") or {}).get("assignee_name") in ("佐藤一郎", "佐藤花子") for c in calls
    ), proposal


def test_without_the_question_in_its_context_a_bare_number_is_not_understood():
    # GIVEN a context that lost the conversation WHEN the person answers 「2」 THEN no task is guessed
    proposal = proposal_for("2", "【現在日時】\n2026年11月30日（月）21時05分（日本時間）")
    assert proposal["output_type"] != "tool_call", proposal
