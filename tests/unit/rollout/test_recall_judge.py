"""The recall gate's judge (``shared_lib.rollout.recall``): fixed rules first, then an evaluator peer.

The replies are what a candidate might really say to 「〇〇さんとの打ち合わせのこと、忘れてないよね？…」:
paraphrases, full-width digits, katakana/hiragana, a confession, a question back, another fact.
"""

from __future__ import annotations

import random

import pytest

from shared_lib.errors import LLMError
from shared_lib.ports import LLMRequest, LLMResponse
from shared_lib.rollout.recall import RecallCode, RecallProbe, judge, make_probe, normalise

PROBE = RecallProbe(
    run_id="b-42",
    topic="佐々木さんとの打ち合わせ",
    seed_turns=(
        "来週の佐々木さんとの打ち合わせ、場所は304号室に決まったよ。ノートPCを持っていくのも忘れないでね🙏",
        "ありがとう、助かる！",
    ),
    question="佐々木さんとの打ち合わせのこと、忘れてないよね？場所と持っていくもの、言ってみて",
    key_terms=("304", "ノートPC"),
)


@pytest.mark.parametrize(
    "reply",
    [
        "佐々木さんとの打ち合わせのことは安心して任せてほしいウル！304号室で、ノートPCを持っていくウル🐺",
        "もちろん覚えてるウル！来週は304号室、ノートPC忘れずに持っていくウル",
        "場所は３０４号室、持ち物はノートＰＣウル！ばっちりウル💪",  # full-width digits and letters
        "のーとPCを持って三〇四号室に行くウル！",  # hiragana, kanji digits
        "304号室にノートPC持参ウル。他に分からないことがあれば聞いてほしいウル！",  # an offer, not a confession
        "大丈夫ウル〜 ノート pc と 304 号室ウル",  # half-width spaces in between
        "覚えてないわけないウル！304号室にノートPCウル。また何かあったら教えてほしいウル",
    ],
)
def test_a_paraphrased_correct_answer_passes(reply):
    # GIVEN the seeded fact (304号室, ノートPC) WHEN the candidate says it in its own words
    verdict = judge(PROBE, reply)
    # THEN it is recalled
    assert verdict.code is RecallCode.RECALLED and verdict.passed, verdict


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        ("", RecallCode.NO_REPLY),
        ("  \n", RecallCode.NO_REPLY),
        ("ごめんなさいウル、何の話だったか分からないウル…", RecallCode.DOES_NOT_KNOW),
        ("すみません、わかりませんウル", RecallCode.DOES_NOT_KNOW),
        ("うーん、覚えてないウル😢", RecallCode.DOES_NOT_KNOW),
        ("304号室だったかどうか、ちょっと思い出せないウル", RecallCode.DOES_NOT_KNOW),
        ("佐々木さんとの打ち合わせってなにウル？", RecallCode.ASKS_BACK),  # the seed's NG example
        ("どの件のことウル？もう一度教えてほしいウル", RecallCode.ASKS_BACK),
        (
            "佐々木さんとの打ち合わせのことは安心して任せてほしいウル！",
            RecallCode.MISSING_TERMS,
        ),  # says nothing
        ("405号室でノートPCを持っていくウル！", RecallCode.MISSING_TERMS),  # a wrong room
        ("304号室で、見積書を持っていくウル！", RecallCode.MISSING_TERMS),  # a wrong thing
    ],
)
def test_a_reply_that_does_not_show_the_fact_fails(reply, code):
    # GIVEN the seeded fact WHEN the candidate replies without it, or says it does not know
    verdict = judge(PROBE, reply)
    # THEN the rule that caught it is the verdict's code
    assert verdict.code is code and not verdict.passed, verdict


def test_a_wrong_name_fails():
    # GIVEN a fact about a person WHEN the reply names another person's meeting and not the fact
    probe = RecallProbe(
        "b-43", "高橋さんとの打ち合わせ", ("…",), "高橋さんとの打ち合わせのこと、覚えてる？", ("高橋", "512")
    )
    # THEN a reply with the right room but the wrong name fails, and names what is missing
    verdict = judge(probe, "髙木さんとの打ち合わせは512号室ウル！")
    assert verdict.code is RecallCode.MISSING_TERMS and verdict.missing == ("高橋",)


def test_missing_terms_are_named_in_the_message():
    verdict = judge(PROBE, "ノートPCを持っていくウル！")
    assert verdict.missing == ("304",) and verdict.message.endswith("(missing: 304)")


def test_each_run_draws_its_own_fact_and_a_stale_answer_fails():
    # GIVEN two runs of the gate
    first, second = make_probe("b-1", random.Random(1)), make_probe("b-2", random.Random(2))
    # THEN their facts differ, no key term is in the question, and every key term is in the seed
    assert first.key_terms != second.key_terms
    for probe in (first, second):
        assert not any(normalise(t) in normalise(probe.question) for t in probe.key_terms)
        assert all(t in probe.seed_turns[0] for t in probe.key_terms)
    # AND a reply that names the first run's fact does not pass the second run
    stale = f"{first.key_terms[0]}号室で{first.key_terms[1]}を持っていくウル！"
    assert judge(first, stale).passed and not judge(second, stale).passed


class ScriptedEvaluator:
    """A peer that answers the evaluation call with a fixed text (or fails), and keeps the requests."""

    def __init__(self, text: str = "", error: LLMError | None = None) -> None:
        self.text, self.error, self.requests = text, error, []

    name, local, max_context_tokens, supports_parallel = "judge", False, 200_000, False

    def complete(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        if self.error:
            raise self.error
        return LLMResponse(
            content=[{"type": "text", "text": self.text}], stop_reason="end_turn", model=request.model
        )


GOOD = "佐々木さんとの打ち合わせは304号室、ノートPCを持っていくウル！"


def test_the_evaluator_is_asked_only_after_the_fixed_rules_pass():
    # GIVEN an evaluator peer WHEN the reply fails a fixed rule THEN the peer is not called
    peer = ScriptedEvaluator('{"remembered": true, "reason": "ok"}')
    assert judge(PROBE, "分からないウル", evaluator=peer, model="m").code is RecallCode.DOES_NOT_KNOW
    assert peer.requests == []
    # WHEN it passes them THEN the peer sees the conversation, the question and the reply, and agrees
    verdict = judge(PROBE, GOOD, evaluator=peer, model="m")
    assert verdict.passed and verdict.evaluator == "agreed"
    body = peer.requests[0].messages[0]["content"]
    assert PROBE.seed_turns[0] in body and PROBE.question in body and GOOD in body
    assert peer.requests[0].call_type == "evaluation"


def test_an_evaluator_that_says_no_refuses_the_candidate():
    peer = ScriptedEvaluator('判定です {"remembered": false, "reason": "質問を言い換えただけ"}')
    verdict = judge(PROBE, GOOD, evaluator=peer, model="m")
    assert verdict.code is RecallCode.EVALUATOR_REFUSED and not verdict.passed
    assert verdict.evaluator == "refused: 質問を言い換えただけ"


@pytest.mark.parametrize(
    "peer",
    [ScriptedEvaluator("はい、覚えています"), ScriptedEvaluator(error=LLMError("llm_unavailable", "down"))],
)
def test_an_evaluator_that_cannot_answer_leaves_the_fixed_rules_verdict(peer):
    verdict = judge(PROBE, GOOD, evaluator=peer, model="m")
    assert verdict.code is RecallCode.RECALLED and verdict.evaluator.startswith("unavailable")
