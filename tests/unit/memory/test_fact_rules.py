"""The fixed rules that pick the facts of messages leaving a conversation's window (seed 001
§19.7): each kind of statement, as people write it in a team's chat, and what is not a fact."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from shared_lib.memory.facts import extract, normalised

SAID_AT = datetime(2025, 11, 25, 1, 30, tzinfo=UTC)  # 11月25日（火） 10:30 JST


def facts_of(*lines: str, role: str = "user"):
    return extract(
        [{"role": role, "text": t, "at": SAID_AT, "seq": f"s{i:02d}"} for i, t in enumerate(lines)]
    )


@pytest.mark.parametrize(
    ("said", "kind"),
    [
        ("じゃあ来週から経費はクラウド精算で決定で", "decision"),
        ("議事録のフォーマットはNotionに統一することになりました。", "decision"),
        ("新しいロゴはB案で決まり！🎉", "decision"),
        ("来月から在宅は週２で決まりや", "decision"),
        ("ほな、それでいこか", "decision"),
        ("ﾘﾘｰｽ手順はこのチェックリストでいきます", "decision"),
        ("締切は12/5（金）厳守でお願いします", "commitment"),
        ("了解です、見積書は明日までに送ります！", "commitment"),
        ("請求書の件、わたしがやっておきます🙋‍♀️", "commitment"),
        ("Slackの通知、夜はやめてほしい🙏", "preference"),
        ("資料はPDFじゃなくてスライドのほうがいいです", "preference"),
        ("ぼくは朝イチの会議が苦手なんよね", "preference"),
        ("覚えておいて：A社の窓口は佐藤さん", "remember"),
        ("これ重要なんですが、検収は月末締めです", "remember"),
        ("来週の月曜10時から定例MTGです", "date"),
    ],
)
def test_each_kind_of_important_statement_is_a_fact(said, kind):
    # GIVEN a line as a member of the team writes it
    # WHEN the rules read it
    found = facts_of(said)
    # THEN it is kept, for that reason
    assert len(found) == 1 and kind in found[0].kinds, found


@pytest.mark.parametrize(
    "said",
    [
        "今日は暑いね〜",
        "お疲れさまです！",
        "会議は水曜にする？",
        "これで決定でいいですか",
        "明日の打ち合わせって何時からだっけ",
        "よろしくお願いします🙇",
        "ありがと〜助かるわ",
        "ｗｗｗ",
    ],
)
def test_small_talk_and_questions_are_not_facts(said):
    assert facts_of(said) == []


def test_a_decision_that_points_back_keeps_what_it_decided():
    # GIVEN a proposal and a short 「それで決定」
    found = facts_of("打ち上げは12/19（金）の19時から、場所は駅前の焼肉屋でどう？", "それで決定で！👍")
    # THEN the decision carries the proposal it agreed to
    assert len(found) == 1 and "駅前の焼肉屋" in found[0].text and found[0].kinds[0] == "decision"


def test_a_relative_date_is_kept_with_the_day_it_meant_when_it_was_said():
    found = facts_of("打ち合わせは木曜の15時からにしましょう")
    assert found[0].text.endswith("［木曜の15時＝11月27日（木）15時］")


def test_the_assistant_reporting_what_it_did_is_a_tool_result_and_its_small_talk_is_not():
    done = facts_of("「見積書の送付」のタスクを田中さんに登録したウル🐺", role="assistant")
    chat = facts_of("どういたしましてウル！", role="assistant")
    assert [f.kinds for f in done] == [("tool_result",)] and chat == []


def test_two_ways_of_typing_one_fact_normalise_alike():
    assert normalised("経費は クラウド精算 で決定！！") == normalised("経費はｸﾗｳﾄﾞ精算で決定。")
    assert normalised("締切は12/5") != normalised("締切は12/6")


def test_a_later_change_supersedes_what_it_changes_and_nothing_else():
    # GIVEN a delivery day set, then moved, and another decision on another subject in between
    found = facts_of(
        "納品は12/20で確定です",
        "議事録はNotionに統一することになりました",
        "すみません、先方都合で納品は12/24に変更になりました🙇",
    )
    # THEN the later day wins and the decision on the other subject stays
    texts = [f.text for f in found]
    assert not [t for t in texts if "12/20" in t], texts
    assert [t for t in texts if "12/24" in t] and [t for t in texts if "Notion" in t], texts
