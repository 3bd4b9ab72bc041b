"""Reading answers to a pending confirmation (seed 000 §5.1.7): approvals and denials in
Japanese and English, numbered choices, the approval id, and urgent words."""

from __future__ import annotations

import pytest

from shared_lib.state.answers import is_urgent, read_answer


@pytest.mark.parametrize(
    "text",
    [
        "はい",
        "はい。",
        "はい！",
        "はい、お願いします",
        "お願いします🐺",
        "うん",
        "OK",
        "ｏｋ",
        "いいよ",
        "実行して",
        "承認します",
        "1",
        "１",
        "①",
        "1番",
        "yes",
        "Yes please",
        "sure",
        "do it",
        "ok thanks",
        "では、はい",
        "はい ap-7K2M9Q",
        # as people answer, words run together, casual, in dialect
        "OKです",
        "おけ",
        "おっけー👍",
        "了解です！",
        "りょ",
        "ええで",
        "それでお願いします",
        "問題ないです",
        "進めてください🙏",
        "送って",
        "よろしくお願いします",
        "はーい",
        "1番でお願いします",
    ],
)
def test_approvals(text):
    assert read_answer(text).kind == "approve"


@pytest.mark.parametrize(
    "text",
    [
        "いいえ",
        "いや",
        "やめて",
        "やめておきます",
        "キャンセル",
        "中止",
        "ダメ",
        "2",
        "２",
        "2番",
        "no",
        "No thanks",
        "cancel",
        "いいえ、結構です",
        "やっぱやめ",
        "中止で",
        "やめといてください",
        "だめです",
        "なしで🙅",
        "いらない",
        "2番でお願いします",
        "２でお願いします",
    ],
)
def test_denials(text):
    assert read_answer(text).kind == "deny"


@pytest.mark.parametrize(
    "text",
    [
        "今日の予定教えて",
        "明日10時にして",
        "はい、でも明日にして",
        "12",
        "はい いいえ",
        "1と2",
        "",
        "🐺",
        "yesterday",
        "はいはいはい言ってるけど違う",
        "ほかのタスクを見せて",
        "11",  # digits never run together into two answers
        "大丈夫です、いらないです",  # both ways: asked again, never guessed
        "ちょっと待って",
        "それで",
        "OK、でも明日にして",
    ],
)
def test_anything_else_is_another_intent(text):
    assert read_answer(text).kind == "other"


def test_the_approval_id_is_read_case_insensitively():
    assert read_answer("yes AP-7k2m9q").approval_id == "ap-7K2M9Q"
    assert read_answer("はい").approval_id is None


@pytest.mark.parametrize(
    ("text", "kind"),
    [("承認J7DHAJF", "approve"), ("却下 j7dhajf", "deny"), ("承認 Ｊ－７ＤＨＡＪＦ", "approve")],
)
def test_an_approval_id_typed_without_its_hyphen_or_in_full_width_is_read(text, kind):
    answer = read_answer(text)
    assert (answer.kind, answer.approval_id) == (kind, "J-7DHAJF")


def test_a_word_is_no_approval_id_without_its_hyphen():
    # the ids are Crockford's base 32 (no I, L, O, U): "journal" is a word, not J-OURNAL
    answer = read_answer("yes journal")
    assert (answer.kind, answer.approval_id) == ("other", None)


@pytest.mark.parametrize(
    ("text", "urgent"),
    [
        ("緊急！部長に連絡して", True),
        ("今すぐ止めて", True),
        ("ストップ", True),
        ("助けて", True),
        ("help me please", True),
        ("this is helpful", False),
        ("今日の予定教えて", False),
    ],
)
def test_urgent_words(text, urgent):
    assert is_urgent(text) is urgent
