"""The dialog policy (seed 004 §9, issue 17.6): one clarifying question per reply and at most
three options, enforced by code through the one retry with guidance, then by a cut; the rules
only the model can follow are instructions in Base and the specialised prompts."""

from __future__ import annotations

import pytest
from brain_fakes import FakeLLM, clarification, decision, runtime, text, turn

from shared_lib.brain import dialog_policy
from shared_lib.brain.dialog_policy import count_questions, keep_first_question
from shared_lib.layers import brain
from shared_lib.persona.catalogue import load_persona
from shared_lib.turn.proposal import ClarificationProposal, Proposal, TextResponseProposal


@pytest.mark.parametrize(
    ("said", "questions"),
    [
        ("どちらの佐藤さんウル？", 1),
        ("明日の会議は何時からですか。", 1),  # a question ending without ？
        ("どちらの会議ウル？ それと、時間はいつがいいウル？", 2),
        ("会議はどれですか。時間はいつでしょうか。", 2),
        ("本当ウル？！ どれにするウル？", 2),  # a run of marks ends one sentence
        ("「明日ですか？」と聞かれたウル。どう答えるウル？", 1),  # a quoted question is not ours
        ("『いつやるか？今でしょ』という本ウル。読んでみるウル🐺", 0),
        ("その案、とてもいいのではないでしょうか。進めるウル🐺", 0),  # rhetorical, no ？
        ("それは前に決めたことじゃないですか。確認するウル🐺", 0),
        ("明日じゃないですか？", 1),  # with ？ it asks
        ("Which meeting do you mean? And what time works?", 2),
        ("See https://example.com/a?b=1 for details. Which one?", 1),  # a ? inside an address
        ("了解したウル🐺 登録しておくウル！", 0),
        ("「締め切りは？", 1),  # an unclosed quote cannot hide a question
    ],
)
def test_the_question_counter(said: str, questions: int):
    assert count_questions(said) == questions


def test_keeping_the_first_question_keeps_the_other_sentences():
    said = "どちらの会議ウル？ 時間はいつウル？ 決まったら登録するウル🐺 「場所は？」とも聞かれたウル。"
    kept = keep_first_question(said)
    assert kept == "どちらの会議ウル？ 決まったら登録するウル🐺 「場所は？」とも聞かれたウル。"
    assert count_questions(kept) == 1


def test_check_finds_two_questions_or_too_many_options_and_passes_one_question_with_ab():
    two = Proposal.model_validate(clarification("どの会議ウル？ 何時ウル？"))
    problem = dialog_policy.check(two)
    assert problem is not None and problem.code == "dialog.too_many_questions"
    assert "質問は1つまで" in problem.guidance
    many = Proposal.model_validate({**clarification(), "options": ["A", "B", "C", "D"]})
    assert (
        dialog_policy.check(many) is not None and dialog_policy.check(many).code == "dialog.too_many_options"
    )  # type: ignore[union-attr]
    assert dialog_policy.check(Proposal.model_validate(clarification())) is None  # one question, A/B
    assert dialog_policy.check(Proposal.model_validate(text("暑いウル？ 寒いウル？"))) is not None


def test_two_questions_are_retried_once_with_guidance_and_the_retry_is_used():
    # GIVEN the model asks two questions, then one
    llm = FakeLLM(
        decision(clarification("どちらの佐藤さんウル？ それと期限はいつウル？")),
        decision(clarification("どちらの佐藤さんウル？")),
    )
    rt, t = runtime(llm), turn("佐藤さんにタスクをお願い")
    # WHEN
    brain.run(t, rt)
    # THEN the retry carries the Japanese guidance as the tool's error, and the second answer is used
    result = llm.requests[1].messages[2]["content"][0]
    assert result["is_error"] and "1回の返答で聞く質問は1つまで" in result["content"]
    root = t.proposal.proposal.root  # type: ignore[union-attr]
    assert isinstance(root, ClarificationProposal) and root.clarification_question == "どちらの佐藤さんウル？"
    assert t.proposal.attempts == 2 and [e.code for e in t.errors] == ["invalid_tool_call"]
    assert t.errors[0].details.get("kind") == "dialog.too_many_questions"


def test_a_retry_that_still_asks_two_keeps_only_the_first_question_and_three_options():
    # GIVEN the model asks two questions with five options, twice
    asked = {
        **clarification("どちらの佐藤さんウル？ 期限はいつウル？ 分かったら登録するウル🐺"),
        "options": ["佐藤一郎", "佐藤花子", "佐藤次郎", "佐藤三郎", "佐藤四郎"],
    }
    llm = FakeLLM(decision(asked), decision(asked))
    rt, t = runtime(llm), turn("佐藤さんにタスクをお願い")
    # WHEN
    outcome = brain.run(t, rt)
    # THEN no parse error: the code keeps the first question and the first three options
    root = t.proposal.proposal.root  # type: ignore[union-attr]
    assert isinstance(root, ClarificationProposal)
    assert root.clarification_question == "どちらの佐藤さんウル？ 分かったら登録するウル🐺"
    assert root.options == ["佐藤一郎", "佐藤花子", "佐藤次郎"]
    assert t.proposal.attempts == 2 and "parse_error" not in [e.code for e in t.errors]
    assert "trimmed=dialog.too_many_questions,dialog.too_many_options" in outcome.detail


def test_a_text_reply_with_two_questions_is_cut_the_same_way_after_the_retry():
    two = text("暑いウルね🐺 水は飲んだウル？ 帽子はあるウル？")
    rt, t = runtime(FakeLLM(decision(two), decision(two))), turn("暑いね")
    brain.run(t, rt)
    root = t.proposal.proposal.root  # type: ignore[union-attr]
    assert isinstance(root, TextResponseProposal) and root.text_response == "暑いウルね🐺 水は飲んだウル？"


def test_the_rules_only_the_model_can_follow_are_instructed_in_base_and_the_specialised_prompts():
    persona = load_persona()
    base = persona.prompt("instructions")
    assert "質問は1回の返答で1つまで" in base and "A案・B案の2つ（多くても3つ）" in base
    assert "短い要約のあとに次の一手を1つ" in base and "実行の前には必ずチャーターが同意を取る" in base
    assert "次の一手を1つだけ示す" in persona.specialised("summarise")
    assert "1つだけ聞く" in persona.specialised("clarify")
