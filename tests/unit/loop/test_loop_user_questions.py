"""Issue 37: what a step says to the user always reaches the user (seed 002 §3.2): a step's
questions for the user or ``risk`` high stop the loop with ``need_user_confirmation`` and are
sent, whatever else the step said. Through the in-process chain, as people write."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from loop_fakes import LOOK, Chain, text, tool_call

from shared_lib import loop

SEARCH_MINE = ("chatwork_task_search", {"assignee_name": "自分"})


@pytest.mark.parametrize(
    ("message", "question"),
    [
        (
            "自分のタスク確認して！どれから片付けたらいいか相談したい🙏",
            "急ぎなのは見積書と資料のどっちウル？",
        ),
        ("ｵﾚのﾀｽｸ見せて〜、今週中に終わらせなあかんのどれやったっけ", "今週中というのは金曜までのことウル？"),
        (
            "部長、恐れ入りますが私のタスク一覧を確認いただけますか。優先度も教えてください",
            "優先度は期限の近い順でよいウル？",
        ),
    ],
)
def test_a_question_with_no_next_loop_reaches_the_user_and_stops_for_confirmation(message, question):
    # GIVEN a step that searches, says no next step is needed and asks the user something
    hand_over = {
        "needs_next_loop": False,
        "why": "どれを優先するかはユーザーが決める",
        "questions_for_user": [question],
    }
    chain = Chain([tool_call(*SEARCH_MINE, loop=hand_over)])
    # WHEN the user asks
    reply, turn = chain.say(message)
    # THEN the loop stops to ask, the question is in the one reply, and no step followed
    assert turn.loop.stop_reason == "need_user_confirmation"
    assert turn.loop.stop_detail == "questions_for_user"
    assert question in reply and chain.replies() == [reply]
    assert len(chain.proposals()) == 1
    stop = next(e for e in turn.loop.events if e["event"] == "loop.stop")
    assert stop["stop_reason"] == "need_user_confirmation" and stop["needs_next_loop"] is False


def test_risk_high_with_no_next_loop_asks_before_going_on():
    # GIVEN a step that ran and declares a high risk while saying it is finished
    hand_over = {"needs_next_loop": False, "why": "全員に影響するので慎重に", "risk": "high"}
    chain = Chain([tool_call(*SEARCH_MINE, loop=hand_over)])
    reply, turn = chain.say("チーム全員のタスク、期限過ぎてるやつ確認しといて。まとめて延長するかも")
    # THEN the user is asked before anything else, in the persona's words
    assert turn.loop.stop_reason == "need_user_confirmation" and turn.loop.stop_detail == "risk=high"
    assert chain.rt.persona.message("loop_stop_ask") in reply


def test_a_text_answer_carrying_a_question_sends_it_once():
    # GIVEN a text answer whose hand-over asks a question its text does not ask
    answer = text(
        "会議室の予約状況は見られないけど、代わりに段取りを考えるウル🐺",
        loop={"needs_next_loop": False, "questions_for_user": ["何人くらいで使う予定ウル？"]},
    )
    chain = Chain([answer])
    reply, turn = chain.say("来週の定例、会議室おさえといてくれる？")
    # THEN the question is added to the reply and the loop says why it stopped
    assert turn.loop.stop_reason == "need_user_confirmation"
    assert reply.startswith("会議室の予約状況は見られないけど") and "何人くらいで使う予定ウル？" in reply


def test_a_question_the_text_already_asks_is_not_asked_twice():
    # GIVEN a text that already asks the question (other punctuation, an emoji) and a hand-over with it
    answer = text(
        "了解ウル！何人くらいで使う予定ウル?🐺",
        loop={"needs_next_loop": False, "questions_for_user": ["何人くらいで使う予定ウル？"]},
    )
    chain = Chain([answer])
    reply, turn = chain.say("来週の定例の会議室、おさえといて")
    # THEN the reply asks it once
    assert turn.loop.stop_reason == "need_user_confirmation"
    assert reply.count("何人くらい") == 1


def test_a_question_wins_over_a_reroute_the_same_step_asks_for():
    # GIVEN a step that asks the user and also says another route would fit better
    answer = text(
        "集計の前に確認させてほしいウル",
        loop={
            "fit": False,
            "suggested_route": "ANALYZE",
            "questions_for_user": ["対象は先月分だけでいいウル？"],
        },
    )
    chain = Chain([answer, text("分析したウル")])
    reply, turn = chain.say("先月の売上のタスク、傾向まとめて")
    # THEN the user is asked first: no second step, no re-route
    assert len(chain.proposals()) == 1 and not turn.loop.reroute_used
    assert turn.loop.stop_reason == "need_user_confirmation" and "対象は先月分だけでいいウル？" in reply


def test_a_question_of_a_step_with_a_next_loop_also_stops_there():
    chain = Chain(
        [tool_call(*SEARCH_MINE, loop={**LOOK, "questions_for_user": ["資料のタスクで合ってる？"]})]
    )
    reply, turn = chain.say("自分のタスク確認して、資料のやつ完了にしといて")
    assert len(chain.proposals()) == 1 and turn.loop.stop_reason == "need_user_confirmation"
    assert "資料のタスクで合ってる？" in reply


def test_where_no_further_step_could_run_the_question_still_stops_the_loop():
    # GIVEN a finished step with a question, decided where no brain could take another step
    hand_over = {"needs_next_loop": False, "questions_for_user": ["どっちを先にやるウル？"]}
    chain = Chain([tool_call(*SEARCH_MINE, loop=hand_over)])
    _, turn = chain.say("タスク確認よろしく")
    now = datetime.now(UTC)
    # WHEN the controller decides as for the legacy arm, a kill switch or local-only
    decided = loop.decide(turn, loop.LoopLimits(), now, can_continue=False)
    # THEN it still stops for the user, and a step without a question is simply done
    assert (decided.action, decided.reason) == ("stop", "need_user_confirmation")
    plain = Chain([tool_call(*SEARCH_MINE, loop={"needs_next_loop": False})])
    _, other = plain.say("タスク確認よろしく")
    assert loop.decide(other, loop.LoopLimits(), now, can_continue=False).reason == "done"


def test_a_blank_question_asks_nothing_and_the_step_is_simply_done():
    chain = Chain(
        [tool_call(*SEARCH_MINE, loop={"needs_next_loop": False, "questions_for_user": ["  ", "　"]})]
    )
    reply, turn = chain.say("タスク一覧ちょうだい")
    assert turn.loop.stop_reason == "done" and "教えてほしいウル" not in reply
