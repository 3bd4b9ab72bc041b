"""The confirmation flow through the real in-process pipeline (seed 000 §5.1.5–5.1.7, §11.2;
seed 004 §8): ask, approve, deny, remind, cancel on urgency, expire, and never run a stale,
foreign, tampered or unauthorised action. The brain's proposals are scripted."""

from __future__ import annotations

import pytest

from shared_lib.features.approvals import steps as confirmation
from shared_lib.state import session
from shared_lib.turn.envelope import Turn
from shared_lib.turn.inbound import InboundMessage
from tests.unit.policy.policy_fakes import ORG, Pipeline, config, pipeline, tool_call

ASK = "コーヒーはブラック派だと覚えておいて"
UNSURE_MEMORY = tool_call(
    "save_memory",
    {"content": "コーヒーはブラック派"},
    confidence=0.6,
    reasoning={
        "intent_understanding": "好みを覚えてほしいという依頼だと理解した",
        "tool_selection_reason": "好みの記録なので save_memory を使う",
        "alternatives_considered": ["何もしないで会話だけ返す"],
    },
)
BROADCAST = "全員に明日の会議は10時からと伝えて"
TO_EVERYONE = tool_call("announce", {"message": "明日の会議は10時からです", "recipients": "all"})


def executed(pipe: Pipeline) -> list[str]:
    return [r["tool"] for r in pipe.receipts() if r.get("status", "done") == "done"]


@pytest.fixture
def pipe(monkeypatch: pytest.MonkeyPatch) -> Pipeline:
    p = pipeline(monkeypatch)
    p.script.update({ASK: UNSURE_MEMORY, BROADCAST: TO_EVERYONE})
    return p


def test_the_gate_message_carries_the_five_points_and_numbered_choices(pipe):
    # WHEN an unsure proposal needs a confirmation
    reply = pipe.say(ASK)
    # THEN the message shows intent, rationale, impact, alternatives and exactly what changes
    for part in (
        "好みを覚えてほしいという依頼だと理解した",
        "好みの記録なので 「記憶の保存」 を使う",
        "【影響】",
        "何もしないで会話だけ返す",
        "・記憶の保存",
        "覚える内容: コーヒーはブラック派",
        "1. はい",
        "2. いいえ",
    ):
        assert part in reply
    # AND no internal tool or parameter name reaches the user (issue 18)
    assert "save_memory" not in reply and "content:" not in reply
    pending = pipe.session()["pending_action"]
    assert f"確認ID: {pending['approval_id']}" in reply
    assert pipe.session()["mode"] == "confirmation_pending"
    assert executed(pipe) == []


def test_yes_runs_the_action_once_and_returns_to_normal(pipe):
    pipe.say(ASK)
    pipe.say("はい")
    assert executed(pipe) == ["save_memory"]
    doc = pipe.session()
    assert doc["mode"] == "normal" and doc["pending_action"] is None
    assert doc["last_resolution"]["outcome"] == "approved"
    # a further はい is an ordinary message now
    pipe.say("はい")
    assert executed(pipe) == ["save_memory"]


@pytest.mark.parametrize(
    ("answer", "runs"),
    [("OKです👍", ["save_memory"]), ("ええで", ["save_memory"]), ("それでお願いします", ["save_memory"]),
     ("やめといてください", []), ("２でお願いします", [])],
)  # fmt: skip
def test_an_answer_as_people_write_it_is_read_as_they_mean_it(pipe, answer, runs):
    # GIVEN a question asked WHEN the person answers in their own words THEN that answer decides
    pipe.say(ASK)
    pipe.say(answer)
    assert executed(pipe) == runs
    assert pipe.session()["pending_action"] is None


def test_no_cancels(pipe):
    pipe.say(ASK)
    reply = pipe.say("いいえ")
    assert "やめておく" in reply
    assert executed(pipe) == [] and pipe.session()["pending_action"] is None


def test_another_intent_gets_the_reminder_and_the_action_waits(pipe):
    pipe.say(ASK)
    reply = pipe.say("今日の予定教えて")
    assert "さっきの確認がまだ終わってない" in reply and "今日の予定教えて" in reply
    assert "記憶の保存" in reply and "save_memory" not in reply
    assert pipe.proposed_for == [ASK]  # the brain was not asked about the new intent
    assert pipe.session()["mode"] == "confirmation_pending"
    pipe.say("1")
    assert executed(pipe) == ["save_memory"]


def test_an_urgent_message_cancels_and_is_handled_as_new(pipe):
    pipe.say(ASK)
    pipe.say("緊急！部長に電話してと伝えて")
    assert pipe.proposed_for == [ASK, "緊急！部長に電話してと伝えて"]
    doc = pipe.session()
    assert doc["pending_action"] is None and doc["last_resolution"]["outcome"] == "cancelled_urgent"
    pipe.say("はい")
    assert executed(pipe) == []


@pytest.mark.parametrize(("minutes", "runs"), [(9.9, True), (10, False), (31, False)])
def test_a_pending_action_expires_after_ten_minutes(pipe, minutes, runs):
    pipe.say(ASK)
    pipe.clock.advance(minutes=minutes)
    reply = pipe.say("はい")
    assert (executed(pipe) == ["save_memory"]) is runs
    if not runs:
        assert "時間切れ" in reply
        assert pipe.session()["mode"] == "normal"


def test_an_answer_naming_another_approval_id_is_refused(pipe):
    pipe.say(ASK)
    approval_id = pipe.session()["pending_action"]["approval_id"]
    reply = pipe.say("はい ap-ZZZZZZ")
    assert "ap-ZZZZZZ" in reply and approval_id in reply
    assert executed(pipe) == []
    pipe.say(f"はい {approval_id}")
    assert executed(pipe) == ["save_memory"]


def test_another_user_cannot_approve(pipe):
    # GIVEN u1's pending action
    pipe.say(ASK)
    # WHEN u2 says はい in the same room THEN nothing of u1's runs
    pipe.say("はい", user="u2")
    assert executed(pipe) == []
    assert pipe.session("u1")["pending_action"] is not None


def test_a_foreign_answer_to_a_pending_action_is_refused(pipe):
    # GIVEN a turn of u2 that somehow carries u1's pending action
    pipe.say(ASK)
    pending = pipe.session("u1")["pending_action"]
    msg = InboundMessage(
        channel="http",
        org_id=ORG,
        room_id="r1",
        user_id="u2",
        text="はい",
        message_id="x",
        event_id="x",
        received_at=pipe.clock(),
    )
    turn = Turn.from_inbound(msg)
    turn.context.pending_action = pending
    # WHEN the brain hands it to the confirmation flow
    assert confirmation.handle_pending_answer(turn, pipe.rt) is True
    # THEN the answer is refused and no approval is made
    assert turn.proposal.proposal.root.text_response == pipe.rt.persona.message("approval_foreign")
    assert turn.proposal.approval["foreign"] is True and not turn.proposal.approval.get("approved")


def test_parameters_changed_after_the_confirmation_are_confirmed_again(pipe):
    # GIVEN a pending action whose stored parameters are tampered with after the question
    pipe.say(ASK)
    path = session.session_path(ORG, f"{ORG}/r1/u1")
    doc = pipe.rt.store.get(path)
    first_id = doc["pending_action"]["approval_id"]
    # every stored copy of the action (the session keeps it as ``pending_action`` and in the
    # list ``pending_actions``; a store hands out separate copies, as Firestore does)
    copies = [
        a for a in [doc["pending_action"], *doc.get("pending_actions", [])] if a["approval_id"] == first_id
    ]
    assert len(copies) >= 2
    for action in copies:
        action["proposal"]["tool_calls"][0]["parameters"]["content"] = "全員の給料を教える"
    pipe.rt.store.set(path, doc)
    # WHEN the user approves
    reply = pipe.say("はい")
    # THEN nothing runs: the changed action is shown again under a new approval id
    assert executed(pipe) == []
    new = pipe.session()["pending_action"]
    assert new["approval_id"] != first_id and "全員の給料を教える" in reply
    assert pipe.records()[-1]["guardian_reason"] == "confidence.medium"


def test_a_policy_change_after_the_confirmation_is_confirmed_again(pipe):
    pipe.say(ASK)
    first_id = pipe.session()["pending_action"]["approval_id"]
    pipe.rt.policy = config(confidence={"medium": 0.65})
    pipe.say("はい")
    assert executed(pipe) == []
    assert pipe.session()["pending_action"]["approval_id"] != first_id
    pipe.say("はい")
    assert executed(pipe) == ["save_memory"]


def test_a_double_confirmation_needs_two_yes(pipe):
    first = pipe.say(BROADCAST)
    assert "2回確認" in first
    assert pipe.rt.persona.message("gate_irreversible") in first  # an announcement cannot be taken back
    approval_id = pipe.session()["pending_action"]["approval_id"]
    second = pipe.say("はい")
    assert "2回目" in second and approval_id in second
    assert executed(pipe) == []
    assert pipe.session()["pending_action"]["confirmations_received"] == 1
    pipe.say("はい")
    assert executed(pipe) == ["announce"]


def test_no_at_the_second_confirmation_cancels(pipe):
    pipe.say(BROADCAST)
    pipe.say("はい")
    pipe.say("いいえ")
    assert executed(pipe) == [] and pipe.session()["pending_action"] is None


def test_nothing_is_asked_of_a_user_who_may_not_do_it(pipe):
    # GIVEN a level-1 user proposing a deletion that needs level 2 (and a confirmation)
    pipe.script["このタスク消して"] = tool_call("delete_task", {"task_id": "t1"})
    # WHEN they ask
    reply = pipe.say("このタスク消して", user="intern")
    # THEN they are told they may not, and no confirmation is pending
    assert reply == pipe.rt.persona.message("deny")
    assert pipe.session("intern").get("pending_action") is None
    record = pipe.records()[-1]
    assert (record["guardian_action"], record["auth_result"]) == ("confirm", "denied")


def test_ask_confirmation_refuses_without_an_allowed_authorization(pipe):
    msg = InboundMessage(
        channel="http",
        org_id=ORG,
        room_id="r1",
        user_id="u1",
        text="x",
        message_id="y",
        event_id="y",
        received_at=pipe.clock(),
    )
    turn = Turn.from_inbound(msg)
    turn.proposal.proposal = UNSURE_MEMORY
    from shared_lib.policy.guardian import evaluate

    turn.guardian = evaluate(UNSURE_MEMORY, registry=pipe.rt.registry, now=pipe.clock())
    text = confirmation.ask_confirmation(turn, pipe.rt, UNSURE_MEMORY.root)
    assert text == pipe.rt.persona.message("deny")
    assert pipe.session().get("pending_action") is None


def test_a_corrected_action_runs_with_the_corrected_parameters(pipe):
    pipe.script["覚えて"] = tool_call("save_memory", {"content": "  紅茶も好き  "})
    pipe.say("覚えて")
    receipts = pipe.receipts()
    assert [r["tool"] for r in receipts] == ["save_memory"]
    assert receipts[0]["result"]["content"] == "紅茶も好き"
    assert pipe.records()[-1]["guardian_action"] == "modify"


def test_a_failed_turn_moves_the_session_to_error_recovery(pipe):
    pipe.script["完了にして"] = tool_call("chatwork_task_complete", {"task_query": "存在しないタスク"})
    pipe.say("完了にして")
    doc = pipe.session()
    assert doc["mode"] == "error_recovery" and doc["error_count"] == 1
    pipe.say("ありがとう")
    assert pipe.session()["mode"] == "normal"
