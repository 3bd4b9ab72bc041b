"""Multi-step turns on the whole local stack (issue 16, seed 002 §3): the fake Anthropic server's
scripted model looks first and acts second (``infra/fake_llm/steps.py``); the loop controller
sends the turn back through Pub/Sub to the brain, and every step runs the whole chain."""

from __future__ import annotations

import os
import signal
import uuid
from pathlib import Path
from typing import Any

import pytest

from infra import local_stack as stack_mod
from shared_lib.delivery import idempotency

ORG = "demo"
USER = "u-suzuki"


def post(stack, text: str, room: str) -> str:
    resp = stack.send("http", text, org=ORG, room=room, user=USER)
    assert resp.status == 200, resp.body
    return str(resp.body["turn_ids"][0])


def replies(stack, room: str) -> list[str]:
    return [
        str(s.get("text", ""))
        for s in stack.fake_channel_sent()
        if s.get("channel") == "http" and s["body"].get("room_id") == room
    ]


def wait_replies(stack, room: str, n: int) -> list[str]:
    stack.wait_for(lambda: len(replies(stack, room)) >= n, stack.budgets.steps)
    return replies(stack, room)


def tasks(stack, tag: str) -> list[dict[str, Any]]:
    return [d for _, d in stack.store.query(f"orgs/{ORG}/tasks") if tag in str(d.get("body", ""))]


def layers(record: dict[str, Any]) -> list[str]:
    return [str(e["layer"]) for e in record["trail"]]


def with_task(stack, tag: str, room: str) -> None:
    """An open task of the demo user whose text holds ``tag``."""
    post(stack, f"鈴木さんに資料{tag}作成のタスクをお願い", room)
    wait_replies(stack, room, 1)
    assert len(tasks(stack, tag)) == 1


@pytest.mark.e2e
def test_look_then_act_with_a_crash_at_step_two_gives_one_reply_and_one_effect(local_stack):
    tag = f"L{uuid.uuid4().hex[:6]}"
    room = f"room-loop-{tag}"
    with_task(local_stack, tag, room)
    # GIVEN a two-step request whose executor stalls at every step
    turn = post(
        local_stack, f"[[stall:executor]] 自分のタスクを確認して、資料{tag}のタスクは完了にして", room
    )
    # WHEN the executor's worker is killed while it holds the SECOND step (redelivery at step 2)
    path = idempotency.claim_path(ORG, turn, "executor", 1)
    local_stack.wait_for(
        lambda: (c := local_stack.store.get(path)) and c.get("status") == "in_progress",
        local_stack.budgets.steps,
        interval=0.1,
    )
    comp = stack_mod.load_state(Path(local_stack.root))["components"]["executor"]
    for worker in [w for w in stack_mod.workers(comp) if w != comp["pid"]]:
        os.kill(worker, signal.SIGKILL)
    # THEN the turn is answered once, the task completed once, and the record has both steps
    record = local_stack.record(ORG, turn, local_stack.budgets.steps)
    got = wait_replies(local_stack, room, 2)
    assert len(got) == 2, got
    assert [d.get("status") for d in tasks(local_stack, tag)] == ["done"]
    trail = layers(record)
    assert trail.count("brain") == 1 and trail.count("brain#1") == 1 and "brain#2" not in trail
    assert "executor#1" in trail and record["execution_success"] is True
    assert local_stack.store.get(path)["status"] == "completed"
    steps = record["steps"]
    assert [(x["step"], x["tools"], x["verdict"], x["ok"]) for x in steps] == [
        (1, ["chatwork_task_search"], "allow", True),
        (2, ["chatwork_task_complete"], "allow", True),
    ]
    assert steps[0]["needs_next_loop"] is True and record["loop"]["stop_reason"] == "done"
    events = [e["event"] for e in record["loop"]["events"]]
    assert events.count("worker.success") == 2 and events[-2:] == ["loop.stop", "final.route"]


@pytest.mark.e2e
def test_a_step_two_confirmation_pauses_and_yes_resumes_it_once(local_stack):
    tag = f"D{uuid.uuid4().hex[:6]}"
    room = f"room-loop-{tag}"
    with_task(local_stack, tag, room)
    # GIVEN a request whose second step deletes (the charter confirms a delete)
    asked = post(local_stack, f"自分のタスクを確認して、資料{tag}のタスクは削除して", room)
    question = wait_replies(local_stack, room, 2)[-1]
    first = local_stack.record(ORG, asked)
    assert first["final_response"]
    assert len(tasks(local_stack, tag)) == 1  # paused: nothing deleted yet
    # the steps and loop events say why, should the second step not be the delete's question
    assert "はい" in question or "確認" in question, (question, first["steps"], first["loop"])
    # WHEN the user says yes
    yes = post(local_stack, "はい", room)
    done = wait_replies(local_stack, room, 3)[-1]
    # THEN the delete ran once, in the resumed turn, and a second yes runs nothing
    assert tasks(local_stack, tag) == [] or all(d.get("status") == "deleted" for d in tasks(local_stack, tag))
    record = local_stack.record(ORG, yes)
    assert record["execution_success"] is True and done != question
    assert local_stack.record(ORG, asked)["loop"]["stop_reason"] == "need_user_confirmation"
    assert record["loop"]["resumed_from"] == asked
    assert [x["tools"] for x in record["steps"]] == [["chatwork_task_search"], ["delete_task"]]
    post(local_stack, "はい", room)
    wait_replies(local_stack, room, 4)
    assert tasks(local_stack, tag) == [] or all(d.get("status") == "deleted" for d in tasks(local_stack, tag))


@pytest.mark.e2e
def test_the_loop_stops_at_three_steps_with_a_useful_reply(local_stack):
    room = f"room-loop-max-{uuid.uuid4().hex[:6]}"
    turn = post(local_stack, "自分のタスクを確認し続けて", room)
    reply = wait_replies(local_stack, room, 1)[0]
    record = local_stack.record(ORG, turn)
    assert "3段階" in reply
    trail = layers(record)
    assert "brain#2" in trail and "brain#3" not in trail
    assert len(replies(local_stack, room)) == 1
    assert record["loop"]["stop_reason"] == "max_loops" and len(record["steps"]) == 3
    assert "loop.stop" in [e["event"] for e in record["loop"]["events"]]


@pytest.mark.e2e
def test_the_loop_stops_at_ninety_seconds_on_an_injected_clock(local_stack):
    # the fault-injection marker [[late:91]] tells the loop controller the turn is 91 s old
    room = f"room-loop-late-{uuid.uuid4().hex[:6]}"
    turn = post(local_stack, "[[late:91]] 自分のタスクを確認し続けて", room)
    reply = wait_replies(local_stack, room, 1)[0]
    record = local_stack.record(ORG, turn)
    assert "時間がかかりすぎた" in reply
    assert "brain#1" not in layers(record)  # stopped after the first step
    assert record["loop"]["stop_reason"] == "max_millis" and len(record["steps"]) == 1


# -- issue 37: what a step says to the user, an explicit command, the agent state ---------------


@pytest.mark.e2e
def test_a_steps_question_reaches_the_user_though_it_says_no_next_step_is_needed(local_stack):
    room = f"room-loop-ask-{uuid.uuid4().hex[:6]}"
    # GIVEN a request whose search step finishes (needs_next_loop false) with a question for the user
    turn = post(local_stack, "自分のタスクを確認して、どれから片付けるか相談したい🙏", room)
    # WHEN it is answered
    reply = wait_replies(local_stack, room, 1)[0]
    record = local_stack.record(ORG, turn, local_stack.budgets.steps)
    # THEN the user receives the question, and the loop stopped to ask, after one step
    assert "期限が近いものから片付けるのでいいウル？" in reply, reply
    assert record["loop"]["stop_reason"] == "need_user_confirmation"
    assert record["loop"]["stop_detail"] == "questions_for_user"
    assert record["steps"][0]["needs_next_loop"] is False and len(record["steps"]) == 1
    assert "brain#1" not in layers(record) and len(replies(local_stack, room)) == 1


@pytest.mark.e2e
def test_an_explicit_chat_the_worker_tries_to_reroute_to_code_stays_chat(local_stack):
    room = f"room-loop-chat-{uuid.uuid4().hex[:6]}"
    # GIVEN the user's /chat and a model that says the route does not fit and suggests CODE
    turn = post(local_stack, "/chat 自分のタスク一覧を見せて [[fit:CODE]]", room)
    reply = wait_replies(local_stack, room, 1)[0]
    record = local_stack.record(ORG, turn, local_stack.budgets.steps)
    # THEN the turn stays CHAT: no re-route, no second step, the refusal recorded, no CODE line
    assert record["route"]["initial_route"] == "CHAT" and record["route"]["source"] == "command"
    assert record["loop"]["reroute_used"] is False
    assert record["loop"]["reroute_refused"] == "CODE: explicit_command"
    final = record["loop"]["events"][-1]
    assert final["event"] == "final.route" and final["final_route"] == "CHAT"
    assert [s["route"] for s in record["steps"]] == ["CHAT"] and "brain#1" not in layers(record)
    assert "コーディング" not in reply and "うまく理解できなかった" not in reply, reply


@pytest.mark.e2e
def test_a_step_two_approval_leaves_the_agent_state_awaiting_approval(local_stack):
    tag = f"W{uuid.uuid4().hex[:6]}"
    room = f"room-loop-wait-{tag}"
    with_task(local_stack, tag, f"{room}-setup")  # the task is made elsewhere: this room starts PLANNING
    # GIVEN a two-step turn whose first step searches and whose second step (a delete) waits for approval
    asked = post(local_stack, f"自分のタスクを確認して、資料{tag}のタスクは削除して", room)
    wait_replies(local_stack, room, 1)
    record = local_stack.record(ORG, asked, local_stack.budgets.steps)
    # THEN the store's agent state for the conversation is AWAITING_APPROVAL with the gate pending
    (state,) = [d for _, d in local_stack.store.query(f"orgs/{ORG}/agent_states") if d.get("room_id") == room]
    assert state["step"] == "AWAITING_APPROVAL" and state["pending_gate"] is True
    # AND the record took both of the code's moves, refusing none of them
    moves = [(t["from_step"], t["to_step"], t["by"]) for t in record["agent"]["transition"]]
    assert moves == [("PLANNING", "EXECUTION", "code"), ("EXECUTION", "AWAITING_APPROVAL", "code")], record[
        "agent"
    ]
    assert not [t for t in record["agent"]["refused"] if t["by"] == "code"], record["agent"]
    assert record["agent"]["step"] == "AWAITING_APPROVAL"
