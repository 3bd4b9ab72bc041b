"""Reply labels: what the reply to a case's utterance must say, must not say, and whether it
answers rather than falls back on a generic line of the persona. Scored per case and summed
as ``reply_agreement``; a small-talk, question or greeting case without a label is an error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shared_lib.errors import ConfigError
from shared_lib.evals.dataset import FALLBACKS, Case, check_cases, parse_lines
from shared_lib.evals.report import run_eval
from shared_lib.evals.runner import Brain, Observed, eval_settings
from shared_lib.evals.scoring import fallback_texts, is_fallback, score_case, summarize
from shared_lib.persona.catalogue import load_persona
from shared_lib.wiring.features import tool_registry

PERSONA = load_persona()


def _case(**expected: object) -> Case:
    return Case.model_validate(
        {"id": "talk", "category": "small_talk", "utterance": "今日めっちゃ寒ない？🥶", "expected": expected}
    )


def _seen(*replies: str) -> Observed:
    return Observed("talk", output_type="text_response", last_replies=list(replies), replies=list(replies))


@pytest.mark.parametrize(
    ("labels", "reply", "checks"),
    [
        # every item must appear; a list item by any one of its alternatives
        ({"reply_contains": ["ウル", ["寒", "冷え"]]}, "ほんとに寒いウル🐺", {"reply_contains": True}),
        ({"reply_contains": ["ウル", ["寒", "冷え"]]}, "冷えるウルね🐺", {"reply_contains": True}),
        ({"reply_contains": ["ウル", ["寒", "冷え"]]}, "そうだね！", {"reply_contains": False}),
        ({"reply_contains": ["ウル", ["寒", "冷え"]]}, "暑いウル", {"reply_contains": False}),
        # compared after NFKC and case folding: full-width and half-width are the same text
        ({"reply_contains": ["11月18日"]}, "今日は１１月１８日（水）ウル", {"reply_contains": True}),
        ({"reply_not_contains": ["晴れ", "降水確率"]}, "明日は晴れウル", {"reply_not_contains": False}),
        ({"reply_not_contains": ["晴れ", "降水確率"]}, "天気は分からないウル", {"reply_not_contains": True}),
        ({"answers_question": True}, "寒いウル！あったかくしてほしいウル🐺", {"answers_question": True}),
        ({"answers_question": True}, PERSONA.message("legacy_smalltalk"), {"answers_question": False}),
        ({"answers_question": True}, PERSONA.message("too_low_confidence"), {"answers_question": False}),
        ({"answers_question": True}, "うーん、よく分からなかったウル…", {"answers_question": False}),
        ({"answers_question": False}, PERSONA.message("legacy_what"), {"answers_question": True}),
    ],
)
def test_reply_labels_are_scored_on_the_reply(
    labels: dict[str, object], reply: str, checks: dict[str, bool]
) -> None:
    # GIVEN a case labelling its reply WHEN the product said `reply` THEN each label is one check
    assert score_case(_case(**labels), _seen(reply)).checks == checks


def test_no_reply_answers_nothing_and_contains_nothing() -> None:
    score = score_case(_case(reply_contains=["ウル"], answers_question=True), _seen())
    assert score.checks == {"reply_contains": False, "answers_question": False} and not score.passed


def test_only_the_reply_to_the_utterance_is_read() -> None:
    # GIVEN an earlier turn's reply that would satisfy the label, and a fallback now
    seen = _seen(PERSONA.message("legacy_smalltalk"))
    seen.replies = ["寒いウル🐺", *seen.last_replies]
    # THEN the label is judged on what answered the utterance
    assert score_case(_case(reply_contains=["寒"]), seen).checks == {"reply_contains": False}


def test_the_fallbacks_are_data_from_the_persona_catalogue() -> None:
    data = json.loads(FALLBACKS.read_text(encoding="utf-8"))
    assert set(data["persona_messages"]) <= set(PERSONA.messages)
    assert len(fallback_texts()) == len(data["persona_messages"]) + len(data["phrases"])
    # a greeting of the fast path or a result template is an answer, not a fallback
    for key in ("fast_good_morning", "fast_thanks", "done_knowledge_search_none", "legacy_cannot_answer"):
        assert is_fallback(PERSONA.message(key)) is (key in data["persona_messages"]), key


def test_an_unknown_fallback_key_is_a_config_error(tmp_path: Path) -> None:
    bad = tmp_path / "fallbacks.json"
    bad.write_text(json.dumps({"persona_messages": ["no_such_message"], "phrases": []}), encoding="utf-8")
    with pytest.raises(ConfigError, match="no_such_message"):
        fallback_texts(str(bad))


def test_a_case_that_only_labels_its_reply_is_valid_and_a_talk_case_must_label_it() -> None:
    labelled = parse_lines(
        [
            json.dumps(
                {
                    "id": "a",
                    "category": "greeting",
                    "utterance": "おつー",
                    "expected": {"reply_contains": ["お疲れ"]},
                }
            )
        ]
    )
    bare = Case.model_validate(
        {"id": "b", "category": "question", "utterance": "今日何日？", "expected": {"executed": False}}
    )
    found = check_cases([*labelled, bare], tool_registry())
    assert found == ["b: a question case must label its reply (reply_contains, answers_question …)"]


@pytest.mark.parametrize(
    "labels", [{"reply_contains": [[]]}, {"reply_contains": [""]}, {"reply_not_contains": [""]}]
)
def test_an_empty_label_is_refused(labels: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        parse_lines(
            [json.dumps({"id": "a", "category": "small_talk", "utterance": "おはよ", "expected": labels})]
        )


def test_reply_agreement_is_a_figure_and_a_failure_shows_the_reply() -> None:
    # GIVEN two talk cases through the legacy brain: a greeting it answers, chat it falls back on
    cases = [
        Case.model_validate(
            {
                "id": "morning",
                "category": "greeting",
                "utterance": "おはようございます！",
                "expected": {"reply_contains": ["おはよう"], "answers_question": True},
            }
        ),
        _case(reply_contains=["ウル", ["寒", "冷え"]], answers_question=True),
    ]
    result = run_eval(cases, [Brain("legacy", "legacy")], eval_settings({}))
    s = result["brains"][0]
    # THEN the first passes, the second fails on its reply labels, and the reply is shown
    assert s["reply_agreement"]["total"] == 4 and s["answers_question"]["total"] == 2
    failed = {f["id"]: f for f in s["failures"]}
    assert set(failed) == {"talk"} and "answers_question" in failed["talk"]["failed"]
    assert failed["talk"]["observed"]["reply"]


def test_a_summary_names_its_peer() -> None:
    scores = [score_case(_case(reply_contains=["ウル"]), _seen("寒いウル"))]
    summary = summarize("peer:local", scores, model="qwen2.5:32b", peer="local")
    assert (summary["peer"], summary["model"], summary["reply_agreement"]["rate"]) == (
        "local",
        "qwen2.5:32b",
        1.0,
    )
