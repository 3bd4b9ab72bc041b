"""What a user reads (issue 18): tools, parameters and dates in Japanese in the persona's
voice, and never a mask placeholder — through the real in-process pipeline, the responder's
one choke point included. The brain's proposals are scripted."""

from __future__ import annotations

import re
from datetime import datetime

import pytest

from shared_lib.brain import legacy
from shared_lib.dates import JST
from shared_lib.persona.catalogue import load_persona
from shared_lib.wiring.features import tool_registry
from tests.unit.policy.policy_fakes import Pipeline, pipeline, text_answer, tool_call

PLACEHOLDER = re.compile(r"\[[A-Z][A-Z_]*(?:_\d+)?\]")
ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@pytest.fixture
def pipe(monkeypatch: pytest.MonkeyPatch) -> Pipeline:
    return pipeline(monkeypatch)


def test_a_guardian_confirmation_for_announce_names_the_operation_in_japanese(pipe):
    # GIVEN the brain proposes an announcement to everyone
    ask = "全員に明日の会議は10時からと伝えて"
    pipe.script[ask] = tool_call("announce", {"message": "明日の会議は10時からです", "recipients": "all"})
    # WHEN the guardian asks for a confirmation
    reply = pipe.say(ask)
    # THEN the reason (everyone: seed 000 §5.3.3b, announce itself is no dangerous operation), the
    # preview and the impact name 「アナウンスの送信」 and its labels, in ウル
    assert "全員に送ることになるウル" in reply and "【操作の要約】\nアナウンスの送信（" in reply
    assert "・アナウンスの送信" in reply and "宛先: 全員" in reply and "お知らせの本文: 明日の会議" in reply
    # AND no internal tool or parameter name, and no です/ます sentence of the catalogue
    for internal in ("announce", "recipients", "message:", "all", "操作です", "送信します"):
        assert internal not in reply, internal


def test_a_past_date_is_confirmed_as_a_japanese_date_never_iso(pipe):
    # GIVEN today is Tuesday 24 November 2026 and a task is asked for by 11/20
    pipe.clock.now = datetime(2026, 11, 24, 10, 0, tzinfo=JST)
    ask = "田中さんに11/20までに見積書を作成するタスクをお願い"
    pipe.script[ask] = tool_call(
        "chatwork_task_create", {"body": "見積書を作成", "assignee_name": "田中", "limit_date": "2026-11-20"}
    )
    # WHEN the guardian asks about the past date
    reply = pipe.say(ask)
    # THEN the date reads 「11月20日（金）」 in the reason and in the preview, never 2026-11-20
    assert "日付（11月20日（金））は過去の日付ウル" in reply
    assert "期限: 11月20日（金）" in reply and "担当者: 田中" in reply
    assert not ISO_DATE.search(reply) and "limit_date" not in reply and "assignee_name" not in reply


def test_missing_parameters_are_asked_for_by_their_labels(pipe):
    # GIVEN a task proposal whose assignee is missing and whose deadline cannot be read
    ask = "見積書のタスクを作って"
    pipe.script[ask] = tool_call("chatwork_task_create", {"body": "見積書を作成", "limit_date": 20261120})
    # WHEN it is executed
    reply = pipe.say(ask)
    # THEN the user is asked about 「担当者」 and 「期限」, never assignee_name / limit_date
    assert "担当者" in reply and "期限" in reply and reply.endswith("🐺"), reply
    assert "assignee_name" not in reply and "limit_date" not in reply


def test_the_legacy_brain_asks_for_missing_parameters_by_their_labels():
    proposal = legacy.propose("タスク追加して", registry=tool_registry(), persona=load_persona())
    question = proposal.root.clarification_question
    assert question.startswith("「タスクの作成」のために") and "担当者" in question
    assert "assignee_name" not in question and "chatwork_task_create" not in question


def test_the_reply_gives_back_only_the_writers_own_value_and_never_a_placeholder(pipe):
    # GIVEN the LLM's text names the user's own phone, another number and a label of its own
    ask = "私の電話は090-1234-5678です。覚えておいてね"
    pipe.script[ask] = text_answer(
        "電話は[PHONE_1]ウル。[PHONE_2]は知らないウル。[NAME_1]さんにも伝えるウル🐺"
    )
    # WHEN the responder sends the reply
    reply = pipe.say(ask)
    # THEN the writer reads their own number; the others read as words, never as placeholders
    assert "090-1234-5678" in reply and "（電話番号・非表示）" in reply and "（伏せた情報）" in reply
    assert not PLACEHOLDER.search(reply), reply


def test_a_placeholder_in_a_tool_result_never_reaches_the_user_through_a_template(pipe):
    # GIVEN a memory whose text carries a placeholder that is not the user's own value
    ask = "メモして：連絡先は[EMAIL_2]と[PHONE]"
    pipe.script[ask] = tool_call("save_memory", {"content": "連絡先は[EMAIL_2]と[PHONE]"})
    # WHEN it is saved and the template reports the result
    reply = pipe.say(ask)
    # THEN the reply shows words where the values were
    assert "（メールアドレス・非表示）" in reply and "（電話番号・非表示）" in reply, reply
    assert not PLACEHOLDER.search(reply)


def test_a_placeholder_in_a_template_value_never_reaches_the_user(pipe):
    # GIVEN a clarification question (a fixed template) filled with a placeholder of another turn
    ask = "あの人に連絡して"
    pipe.script[ask] = text_answer("[EMAIL_1]と[CUSTOMER_3]のどちらに連絡するウル？🐺")
    # WHEN the reply is sent THEN the user reads words, never [EMAIL_1] nor [CUSTOMER_3]
    reply = pipe.say(ask)
    assert reply.startswith("（メールアドレス・非表示）と（伏せた情報）のどちら"), reply
