"""Issue 37: the step's hand-over is strictly typed (seed 002 §4.4, §5). ``needs_next_loop`` and
``fit`` are JSON booleans; 「yes」, ``"true"``, ``1`` are invalid LLM output, handled as the
product handles any: the one retry with guidance, then the clarification; nothing executed."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from loop_fakes import LOOK, Chain, text, tool_call

from shared_lib import loop
from shared_lib.loop.hand_over import hand_over_problem
from shared_lib.turn.proposal import Proposal


def complete_資料(hand_over: dict) -> dict:
    return tool_call(
        "chatwork_task_complete", {"task_query": "資料を作る"}, loop=hand_over
    )  # an effect: whether it ran is visible in the tasks


@pytest.mark.parametrize(
    "hand_over",
    [
        {"needs_next_loop": "yes"},
        {"needs_next_loop": "true"},
        {"needs_next_loop": "True"},
        {"needs_next_loop": 1},
        {"needs_next_loop": 0},
        {"needs_next_loop": "false"},
        {"needs_next_loop": "はい"},
        {"needs_next_loop": None},
        {"needs_next_loop": False, "fit": "no", "suggested_route": "PLAN"},
        {"needs_next_loop": False, "questions_for_user": "どれを完了にするウル？"},
        {"needs_next_loop": False, "risk": "critical"},
        {"needs_next_loop": False, "risk": "HIGH"},
        {"needs_next_loop": False, "next_actions": ["a", "b", "c", "d"]},
        {"propose_next_loop": "yes", "route": "PLAN"},
    ],
)
def test_an_invalid_hand_over_is_refused_twice_then_clarified_and_nothing_runs(hand_over):
    # GIVEN a model that answers both attempts with the same mistyped hand-over
    chain = Chain([complete_資料(hand_over), complete_資料(hand_over)])
    # WHEN the user asks for the completion
    reply, turn = chain.say("資料作るタスク、終わったから完了にしといて〜")
    # THEN the retry named the field, nothing ran, and the user got the clarification
    _first, second = chain.proposals()
    guidance = str(second.messages[-1]["content"])
    assert "loop." in guidance
    assert chain.tasks("done") == [] and turn.execution.results == []
    assert reply == chain.rt.persona.message("parse_error")
    assert {e.code for e in turn.errors} >= {"invalid_tool_call", "parse_error"}


def test_a_retry_that_fixes_the_hand_over_runs_once():
    chain = Chain(
        [
            complete_資料({"needs_next_loop": "no"}),
            complete_資料({"needs_next_loop": False, "why": "これで最後"}),
        ]
    )
    _, turn = chain.say("資料のタスク完了で！")
    assert len(chain.proposals()) == 2
    assert chain.tasks("done") == ["資料を作る"] and turn.loop.stop_reason == "done"


def test_a_yes_never_counts_as_asking_for_another_step_even_where_the_brain_let_it_through():
    # GIVEN a proposal that reached the controller with a mistyped block (an older envelope)
    chain = Chain([tool_call("chatwork_task_search", {"assignee_name": "自分"}, loop=LOOK)])
    _, turn = chain.say("自分のタスク確認して")
    mistyped = tool_call(
        "chatwork_task_search", {"assignee_name": "自分"}, loop={**LOOK, "needs_next_loop": "yes"}
    )
    turn.proposal.proposal = Proposal.model_validate(mistyped)
    decided = loop.decide(turn, loop.LoopLimits(), datetime.now(UTC))
    # THEN the controller fails the step closed, never takes another
    assert (decided.action, decided.reason) == ("stop", "worker_failure")
    assert decided.error.startswith("invalid_worker_output: loop.needs_next_loop")


@pytest.mark.parametrize(
    "hand_over",
    [
        None,
        {},
        {
            "needs_next_loop": True,
            "why": "検索結果を見て決める",
            "next_actions": ["対象を選ぶ"],
            "risk": "low",
        },
        {"needs_next_loop": False, "questions_for_user": ["どっち？"], "risk": "medium", "fit": True},
        {"propose_next_loop": True, "route": "PLAN", "reason": "段取りから", "confidence": 0.9},
        {"needs_next_loop": False, "result": "2件見つけた", "confidence": 1},
    ],
)
def test_well_typed_hand_overs_pass(hand_over):
    assert hand_over_problem(hand_over) is None


def test_a_text_answer_with_a_well_typed_hand_over_is_unchanged():
    chain = Chain([text("おつかれさまウル🐺", loop={"needs_next_loop": False})])
    reply, _turn = chain.say("今日も一日おつかれ〜")
    assert reply == "おつかれさまウル🐺" and len(chain.proposals()) == 1
