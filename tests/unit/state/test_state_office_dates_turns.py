"""Office dates through an in-process turn (issue 34), at an injected clock: the guardian and
the executor read a deadline the same way, a date the reader cannot read is the guardian's
question in ソウルくん's voice (never the executor's error), and a date given in answer to it
fills the action."""

from __future__ import annotations

from datetime import datetime

import pytest

from shared_lib.dates import JST
from tests.unit.policy.policy_fakes import ORG, Pipeline, pipeline, tool_call


def task(limit: str, body: str = "見積書を作成") -> object:
    return tool_call("chatwork_task_create", {"body": body, "assignee_name": "田中", "limit_date": limit})


def tasks(pipe: Pipeline) -> list[dict]:
    return [doc for _, doc in pipe.rt.store.query(f"orgs/{ORG}/tasks")]


@pytest.fixture
def pipe(monkeypatch: pytest.MonkeyPatch) -> Pipeline:
    return pipeline(monkeypatch)


def test_given_monday_night_when_a_task_is_due_monday_then_it_is_next_monday(pipe):
    # GIVEN Monday 2026-11-23 at 23:30 in Tokyo
    pipe.clock.now = datetime(2026, 11, 23, 23, 30, tzinfo=JST)
    ask = "田中さんに見積書を月曜までにお願いします"
    pipe.script[ask] = task("月曜")
    # WHEN the task is asked for
    reply = pipe.say(ask)
    # THEN it is created for next Monday, shown as users read dates, with no confirmation
    [created] = tasks(pipe)
    assert str(created["limit_date"]).startswith("2026-11-30"), created
    assert "確認" not in reply and "過去" not in reply


def test_given_12_28_late_evening_when_a_task_is_due_the_15th_then_it_is_january_15th(pipe):
    # GIVEN Monday 2026-12-28 at 22:00 in Tokyo
    pipe.clock.now = datetime(2026, 12, 28, 22, 0, tzinfo=JST)
    ask = "山田さんの経費精算、１５日〆でお願い"
    pipe.script[ask] = task("１５日〆で", body="経費精算")
    # WHEN the task is asked for
    reply = pipe.say(ask)
    # THEN it is due next January 15th: no false "past date" confirmation showing 12/15
    [created] = tasks(pipe)
    assert str(created["limit_date"]).startswith("2027-01-15"), created
    assert "12月15日" not in reply and "過去" not in reply


def test_given_today_ni_when_a_task_is_due_kyoujuu_then_it_is_today(pipe):
    # GIVEN Friday 2026-11-27 at 15:00
    pipe.clock.now = datetime(2026, 11, 27, 15, 0, tzinfo=JST)
    ask = "田中さんに議事録を今日中によろしく🙏"
    pipe.script[ask] = task("今日中", body="議事録")
    # WHEN the task is asked for
    pipe.say(ask)
    # THEN it is due today (the executor reads the deadline word, no input error)
    [created] = tasks(pipe)
    assert str(created["limit_date"]).startswith("2026-11-27"), created


def test_given_a_deadline_the_reader_cannot_read_then_the_guardian_asks_and_an_answer_fills_it(pipe):
    # GIVEN a task whose deadline is a mood, not a date
    pipe.clock.now = datetime(2026, 11, 24, 10, 0, tzinfo=JST)
    ask = "田中さんに見積書、手が空いたらでいいのでお願い"
    pipe.script[ask] = task("手が空いたら")
    # WHEN it is asked for
    question = pipe.say(ask)
    # THEN nothing is done: the guardian asks when, in ソウルくん's voice, never an executor error
    assert tasks(pipe) == []
    assert "いつにするウル？" in question and "「手が空いたら」" in question
    assert "解釈できません" not in question
    # WHEN a mere 「はい」 answers the question
    again = pipe.say("はい")
    # THEN it is asked again (a yes is no date)
    assert tasks(pipe) == [] and "いつにするウル？" in again
    # WHEN the person answers with a date as people write it
    done = pipe.say("じゃあ来週の金曜までで！")
    # THEN the task is created with that date, shown 「12月4日（金）」
    [created] = tasks(pipe)
    assert str(created["limit_date"]).startswith("2026-12-04"), created
    assert "12月4日（金）" in done


def test_given_a_weekday_that_is_not_the_dates_then_the_guardian_asks_showing_the_reading(pipe):
    pipe.clock.now = datetime(2026, 11, 24, 10, 0, tzinfo=JST)
    ask = "田中さんに資料作成を12月3日(金)までにお願いします"
    pipe.script[ask] = task("12月3日(金)", body="資料作成")
    question = pipe.say(ask)
    assert tasks(pipe) == []
    assert "12月3日（木）" in question and "ウル" in question
    pipe.say("はい")
    [created] = tasks(pipe)
    assert str(created["limit_date"]).startswith("2026-12-03"), created
