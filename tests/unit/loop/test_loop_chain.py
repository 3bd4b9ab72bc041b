"""Multi-step turns on the in-process chain (issue 16, seed 002 §3): every step is proposed by
the model and judged by the guardian and the gate like a first step; the loop controller
alone decides whether another step follows. A fake LLM port answers each step from what the
request shows it (no mocks of the product)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from loop_fakes import LOOK, ORG, SEARCH, Chain, complete_found, text, tool_call, tool_results

from shared_lib.ports import LLMRequest


def test_search_then_act_is_one_turn_one_reply_one_effect_and_both_steps_recorded():
    chain = Chain([SEARCH, complete_found])
    reply, turn = chain.say("自分のタスクを確認して、資料のタスクは完了にして")
    assert chain.replies() == [reply]
    assert chain.tasks("done") == ["資料を作る"] and chain.tasks("open") == ["見積書を送る"]
    assert len(turn.loop.steps) == 1 and turn.loop.steps[0].results[0].tool_name == "chatwork_task_search"
    assert turn.execution.results[0].tool_name == "chatwork_task_complete"
    assert turn.loop.stop_reason == "done"
    names = [e["event"] for e in turn.loop.events]
    assert names == ["worker.success", "worker.success", "loop.stop", "final.route"]
    final = turn.loop.events[-1]
    assert final["worker_calls"] == 2 and final["stop_reason"] == "done" and final["reroute_used"] is False
    # both steps ran the whole chain: the trail has each layer at step 0 and at step 1
    layers = [e.layer for e in turn.trail]
    assert layers.count("guardian") == 1 and "guardian#1" in layers and "executor#1" in layers


def test_the_second_step_sees_its_first_step_in_the_messages_shape_masked_and_cached():
    chain = Chain([SEARCH, complete_found])
    chain.add_task("090-1234-5678 に資料の件で電話", "m3")
    chain.say("自分のタスクを確認して、資料のタスクは完了にして")
    first, second = chain.proposals()
    assert [m["role"] for m in first.messages] == ["user"]
    assert [m["role"] for m in second.messages] == ["user", "assistant", "user"]
    call, result = second.messages[1]["content"][0], second.messages[2]["content"][0]
    assert call["type"] == "tool_use" and call["name"] == "submit_proposal"
    assert call["input"]["tool_calls"][0]["tool_name"] == "chatwork_task_search"
    assert result["type"] == "tool_result" and result["tool_use_id"] == call["id"]
    assert result["cache_control"] == {"type": "ephemeral"}
    assert "090-1234-5678" not in json.dumps(second.messages, ensure_ascii=False)
    assert "[PHONE" in result["content"]
    # the stable prefix is the same request prefix at both steps (tools, persona system block)
    assert first.tools == second.tools and first.system[0] == second.system[0]


def test_a_step_two_tool_above_the_users_level_is_denied_like_a_first_step():
    # u2 (level 2) searches (level 1: allowed), then the model proposes the whole staff list (level 5)
    chain = Chain([SEARCH, tool_call("view_all_users", {})])
    reply, turn = chain.say("自分のタスクを確認して、全員の一覧も見せて", user="u2")
    assert turn.loop.steps[0].authorization is not None
    assert turn.loop.steps[0].authorization.result == "allowed"
    assert turn.authorization is not None and turn.authorization.result == "denied"
    assert turn.execution.results == [] and turn.execution.skipped_reason == "authorization"
    assert turn.loop.stop_reason == "denied"
    assert reply == chain.rt.persona.message("deny")


def test_a_step_two_confirmation_pauses_the_turn_and_yes_resumes_it_exactly_once():
    def delete_found(request: LLMRequest) -> dict[str, Any]:
        found = tool_results(request)[-1]["results"][0]["result"]["tasks"]
        task = next(t for t in found if "資料" in t["body"])
        return tool_call("delete_task", {"task_query": task["body"], "task_id": task["task_id"]})

    chain = Chain([SEARCH, delete_found])
    ask, paused = chain.say("自分のタスクを確認して、資料のタスクは削除して")
    assert paused.response.kind == "confirm" and paused.loop.stop_reason == "need_user_confirmation"
    assert len(chain.tasks()) == 2  # nothing deleted yet
    done, resumed = chain.say("はい")
    assert resumed.loop.resumed_from == paused.turn_id
    assert [s.results[0].tool_name for s in resumed.loop.steps] == ["chatwork_task_search"]
    assert resumed.execution.results[0].tool_name == "delete_task" and resumed.execution.results[0].ok
    assert chain.tasks() == ["見積書を送る"]
    _again, _ = chain.say("はい")  # a second yes finds nothing pending: nothing runs twice
    assert chain.tasks() == ["見積書を送る"]
    assert len(chain.replies()) == 3 and ask != done


def test_the_loop_stops_at_max_loops_with_a_useful_reply():
    chain = Chain([SEARCH, SEARCH, SEARCH, SEARCH])
    reply, turn = chain.say("自分のタスクを確認し続けて")
    assert len(chain.proposals()) == 3
    assert turn.loop.stop_reason == "max_loops" and len(turn.loop.steps) == 2
    assert "3段階" in reply and chain.replies() == [reply]
    assert [e["event"] for e in turn.loop.events][-2:] == ["loop.stop", "final.route"]


def test_the_loop_stops_at_max_millis_on_an_injected_clock():
    now = [datetime(2026, 11, 24, 1, 0, tzinfo=UTC)]

    def slow_search(request: LLMRequest) -> dict[str, Any]:
        now[0] += timedelta(seconds=91)  # the first step took 91 s
        return SEARCH

    chain = Chain([slow_search, SEARCH], clock=lambda: now[0])
    reply, turn = chain.say("自分のタスクを確認して、資料のタスクは完了にして")
    assert len(chain.proposals()) == 1
    assert turn.loop.stop_reason == "max_millis"
    assert chain.rt.persona.message("loop_stop_max_millis") in reply


@pytest.mark.parametrize(
    ("loop", "reason", "shown"),
    [
        # an invalid hand-over (four next actions, risk "critical", needs_next_loop "maybe") is
        # invalid LLM output since issue 37: refused before anything runs (test_loop_hand_over.py)
        ({**LOOK, "risk": "high"}, "need_user_confirmation", "loop_stop_ask"),
        (
            {**LOOK, "questions_for_user": ["完了にするのは資料のタスクでいい？"]},
            "need_user_confirmation",
            None,
        ),
    ],
)
def test_a_cautious_hand_over_stops_the_loop(loop, reason, shown):
    chain = Chain([tool_call("chatwork_task_search", {"assignee_name": "自分"}, loop=loop)])
    reply, turn = chain.say("自分のタスクを確認して、資料のタスクは完了にして")
    assert len(chain.proposals()) == 1 and turn.loop.stop_reason == reason
    if reason == "worker_failure":
        assert turn.loop.events[0]["event"] == "worker.fail"
    if shown:
        assert chain.rt.persona.message(shown) in reply
    if loop.get("questions_for_user"):
        assert "完了にするのは資料のタスクでいい？" in reply


def test_a_low_confidence_step_does_not_act_again_without_the_user():
    chain = Chain([tool_call("chatwork_task_search", {"assignee_name": "自分"}, overall=0.65, loop=LOOK)])
    _, turn = chain.say("自分のタスクを確認して、資料のタスクは完了にして")
    assert len(chain.proposals()) == 1 and turn.loop.stop_reason == "need_user_confirmation"


def test_a_reroute_is_taken_once_per_input():
    wrong = text("この依頼は分析に向いているウル", loop={"fit": False, "suggested_route": "ANALYZE"})
    chain = Chain([wrong, wrong])
    _, turn = chain.say("先月のタスクの傾向を分析して")
    assert len(chain.proposals()) == 2
    assert turn.route.route == "ANALYZE" and turn.loop.reroute_used
    names = [e["event"] for e in turn.loop.events]
    assert names.count("route.override") == 1
    assert (
        turn.loop.events[-1]["initial_route"] != "ANALYZE"
        and turn.loop.events[-1]["final_route"] == "ANALYZE"
    )


def test_a_single_step_turn_is_unchanged():
    chain = Chain([text("こんにちはウル🐺")])
    reply, turn = chain.say("今日はいい天気だね、調子はどう？")
    assert reply == "こんにちはウル🐺" and turn.loop.steps == [] and turn.loop.stop_reason == "done"
    assert len(chain.proposals()) == 1


@pytest.mark.parametrize("step", ["0", "1"])
def test_redelivering_every_message_of_a_step_repeats_no_effect_and_no_reply(step):
    chain = Chain([SEARCH, complete_found])
    reply, _turn = chain.say("自分のタスクを確認して、資料のタスクは完了にして")
    again = [p for p in chain.rt.bus.published if p[2].get("step") == step]  # type: ignore[attr-defined]
    assert {topic for topic, *_ in again} >= {"proposed", "authorized", "executed"}
    for topic, data, attrs, key in again:
        chain.rt.bus.publish(topic, data, attrs, key)
    assert chain.replies() == [reply]
    assert chain.tasks("done") == ["資料を作る"]
    assert len(chain.proposals()) == 2  # no step was proposed twice
    assert len(chain.rt.store.query(f"orgs/{ORG}/observability")) == 1


@pytest.mark.parametrize(("fault_injection", "steps"), [("1", 1), ("0", 3)])
def test_the_late_marker_injects_the_clock_only_under_fault_injection(fault_injection, steps):
    chain = Chain([SEARCH, SEARCH, SEARCH, SEARCH])
    chain.rt.settings = chain.rt.settings.model_copy(update={"fault_injection": fault_injection == "1"})
    _, turn = chain.say("[[late:91]] 自分のタスクを確認し続けて")
    assert len(chain.proposals()) == steps
    assert turn.loop.stop_reason == ("max_millis" if steps == 1 else "max_loops")


def test_a_reroute_keeps_the_routers_source_and_the_record_its_first_route():
    wrong = text("この依頼は分析に向いているウル", loop={"fit": False, "suggested_route": "ANALYZE"})
    chain = Chain([wrong])
    _, turn = chain.say("先月のタスクの傾向を分析して")
    record = chain.rt.store.get(f"orgs/{ORG}/observability/{turn.turn_id}")
    assert record is not None
    assert turn.route.route == "ANALYZE" and turn.route.source != "reroute"
    assert record["route"]["initial_route"] != "ANALYZE"
