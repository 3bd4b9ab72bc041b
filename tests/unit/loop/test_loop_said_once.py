"""Issue 37: a turn stopped at the loop's limit says once what was done. Three steps that found
the same tasks are told once, by the phrasing call and by the templates alike."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from loop_fakes import SEARCH, Chain

from shared_lib.brain.integration import once
from shared_lib.errors import LLMError
from shared_lib.ports import LLMRequest, LLMResponse


def _templates_only(chain: Chain) -> None:
    """The phrasing call fails (the persona's templates tell the results)."""
    scripted = chain.llm.default
    assert callable(scripted)

    def answer(request: LLMRequest) -> LLMResponse:
        if request.call_type == "integration":
            raise LLMError("llm_unavailable", "down")
        return scripted(request)

    chain.llm.default = answer


@pytest.mark.parametrize(
    "message", ["自分のタスクを確認し続けて", "ずっとタスク確認し続けてて！更新あったら知りたい"]
)
def test_a_loop_stopped_at_max_loops_tells_the_same_finding_once_by_the_templates(message):
    chain = Chain([SEARCH, SEARCH, SEARCH])
    _templates_only(chain)
    reply, turn = chain.say(message)
    assert turn.loop.stop_reason == "max_loops" and len(turn.loop.steps) == 2
    # THEN the search's line is said once, then the stop note
    lines = [line for line in reply.split("\n") if "件ある" in line]
    assert len(lines) == 1, reply
    assert "3段階" in reply


def _slow(seconds: int) -> tuple[list[Any], Any]:
    """Search steps that each take ``seconds`` on the chain's clock, and that clock."""
    now = [datetime(2026, 11, 24, 1, 0, tzinfo=UTC)]

    def slow(request: LLMRequest) -> dict[str, Any]:
        now[0] += timedelta(seconds=seconds)
        return SEARCH

    return [slow, slow, slow], lambda: now[0]


def test_a_loop_stopped_at_the_time_limit_says_its_finding_once():
    steps, clock = _slow(50)  # the second step ends past 90 s
    chain = Chain(steps, clock=clock)
    _templates_only(chain)
    reply, turn = chain.say("タスクの確認、し続けてくれる？締切近いのあったら教えて")
    assert turn.loop.stop_reason == "max_millis" and len(turn.loop.steps) == 1
    assert len([line for line in reply.split("\n") if "件ある" in line]) == 1, reply
    assert chain.rt.persona.message("loop_stop_max_millis") in reply


def test_the_phrasing_call_sees_each_finding_once():
    steps, clock = _slow(25)
    chain = Chain(steps, clock=clock)
    reply, turn = chain.say("自分のタスク確認し続けて〜")
    assert turn.loop.stop_reason == "max_loops"
    (phrasing,) = chain.llm.calls("integration")
    prompt = json.dumps(phrasing.messages, ensure_ascii=False)
    assert prompt.count("資料を作る") == 1, prompt
    assert reply.count("確認して片づけたウル🐺") == 1


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "田中太郎さんのタスクは0件あるウル🐺\n田中太郎さんのタスクは0件あるウル🐺\n田中太郎さんのタスクは0件あるウル🐺",
            "田中太郎さんのタスクは0件あるウル🐺",
        ),
        (
            "鈴木さんのタスクは1件あるウル🐺\n- 資料を作る\n田中さんのタスクは1件あるウル🐺\n- 資料を作る",
            "鈴木さんのタスクは1件あるウル🐺\n- 資料を作る\n田中さんのタスクは1件あるウル🐺\n- 資料を作る",
        ),
        (
            "見つけたウル！\n見つけたウル！\n1. 資料を作る\n1. 資料を作る",
            "見つけたウル！\n1. 資料を作る\n1. 資料を作る",
        ),
        ("完了にしたウル🐺\n完了にしたウル🐺  \n続きは？", "完了にしたウル🐺\n続きは？"),
        ("一行目ウル\n\n二行目ウル", "一行目ウル\n\n二行目ウル"),
        ("0件あるウル🐺\n0件あるウル🐺", "0件あるウル🐺"),
    ],
)
def test_once_keeps_each_line_once_in_order(text, said):
    assert once(text) == said
