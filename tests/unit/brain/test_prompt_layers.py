"""The prompt's three layers (seed 004 §3, issue 17.5): Base → route → Specialised → Main, the
stable part first so the prompt cache keeps hitting across the turns of a conversation, at most
4 cache breakpoints, and the Specialised block chosen by code from the turn (the table in
``shared_lib/brain/specialised.py``)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from brain_fakes import tool_call, turn

from shared_lib.brain.agent_state_prompt import render_agent_state
from shared_lib.brain.prompt import assemble, proposal_request, stable_system
from shared_lib.brain.specialised import choose_specialised
from shared_lib.brain.steps_prompt import history_messages
from shared_lib.persona.catalogue import load_persona
from shared_lib.ports import LLMRequest
from shared_lib.routing import load_routing_config
from shared_lib.turn.envelope import RouteSection, ToolResult, Turn
from shared_lib.turn.proposal import Proposal
from shared_lib.wiring.features import tool_registry

NOW = datetime(2026, 1, 30, 1, 0, tzinfo=UTC)
SEARCH = tool_call("chatwork_task_search", {"assignee_name": "自分"})


def _turn(
    message: str,
    *,
    route: str = "ANALYZE",
    state: dict[str, Any] | None = None,
    summary: str = "",
    found: list[str] | None = None,
) -> Turn:
    """A turn of one conversation; ``found`` makes it step 1 after a search that found those tasks."""
    t = turn(message)
    t.route = RouteSection(route=route, source="rules")
    t.context.agent_state = dict(state or {})
    t.context.summary = summary
    if found is not None:  # step 0 searched and succeeded; the loop controller handed over step 1
        t.proposal.proposal = Proposal.model_validate(SEARCH)
        t.execution.results = [
            ToolResult(tool_name="chatwork_task_search", call_index=0, ok=True, result={"tasks": found})
        ]
        t.loop.steps.append(t.current_step())
        t.step = 1
    return t


def request_of(t: Turn) -> LLMRequest:
    """The proposal request the LLM arm sends for ``t`` (its route's instructions and history)."""
    registry = tool_registry()
    route_prompt = load_routing_config().profile(t.route.route).instructions()
    prompt = assemble(t, persona=load_persona(), registry=registry, now=NOW, route_prompt=route_prompt)
    if t.loop.steps:
        history = history_messages(t.loop.steps, registry=registry, today=NOW.date(), vault=prompt.vault)
        prompt = replace(prompt, history=history)
    return proposal_request(prompt, model="m", max_tokens=1000, stream=False)


def cached_prefix(request: LLMRequest) -> str:
    """The serialized tools and system blocks up to and including the last cached one."""
    last = max(i for i, b in enumerate(request.system) if "cache_control" in b)
    return json.dumps([request.tools, request.system[: last + 1]], ensure_ascii=False)


def breakpoints(request: LLMRequest) -> int:
    blocks = [*request.tools, *request.system]
    for m in request.messages:
        blocks += m["content"] if isinstance(m["content"], list) else []
    return sum("cache_control" in b for b in blocks)


def test_the_stable_prefix_is_byte_identical_across_the_turns_of_a_conversation():
    # GIVEN one conversation on the ANALYZE route: different messages, contexts and agent states,
    # first steps and a second step after a completed search
    first = [
        _turn("先月のタスクの件数を出して", summary="昨日は見積書の話をした"),
        _turn(
            "部署ごとに分けて",
            state={"goal": "先月の件数をまとめる", "step": "EXECUTION"},
            summary="別の要約",
        ),
    ]
    second = [
        _turn("資料のタスクを探して", state={"goal": "資料を探す"}, found=["資料を作る"]),
        _turn(
            "見積のタスクを探して", state={"plan_brief": ["探す", "まとめる"]}, found=["見積書を送る", "x"]
        ),
    ]
    requests = [request_of(t) for t in first + second]
    # THEN tools, Base and the route's block are the same bytes in every request
    base = json.dumps([requests[0].tools, requests[0].system[:2]], ensure_ascii=False)
    for r in requests:
        assert json.dumps([r.tools, r.system[:2]], ensure_ascii=False) == base
        assert r.system[0] == stable_system(load_persona())
    # AND turns choosing the same specialised block share the whole cached prefix through it
    assert [choose_specialised(t) for t in first + second] == [None, None, "summarise", "summarise"]
    assert cached_prefix(requests[0]) == cached_prefix(requests[1]) == base
    assert cached_prefix(requests[2]) == cached_prefix(requests[3]) != base
    assert requests[2].system[2]["text"] == load_persona().specialised("summarise")
    # AND every volatile part comes after the last cached system block: Main is last and uncached,
    # and no message, summary, state or result reaches the cached prefix
    for r in requests:
        assert "cache_control" not in r.system[-1] and "【エージェント状態】" in r.system[-1]["text"]
        assert all("cache_control" in b for b in r.system[:-1])
    volatile = [
        "先月のタスク",
        "部署ごと",
        "昨日は見積書",
        "別の要約",
        "先月の件数",
        "資料を作る",
        "見積書を送る",
        "まとめる",
    ]
    for r in requests:
        assert not [v for v in volatile if v in cached_prefix(r)]
    # AND at most 4 breakpoints even on a routed, specialised second step (the last one on its result)
    assert [breakpoints(r) for r in requests] == [2, 2, 4, 4]
    assert requests[2].messages[-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}


def test_a_chat_turn_with_a_specialised_block_has_base_then_the_block_then_main():
    # GIVEN a CHAT turn (no route block) whose agent state waits for the user
    t = _turn("明日の件だけど", route="CHAT", state={"open_questions": ["どの会議の話か"]})
    request = request_of(t)
    # THEN Base, clarify, Main; the clarify text is the persona's, not the state's
    base, special, main = request.system
    assert base == stable_system(load_persona())
    assert special == {
        "type": "text",
        "text": load_persona().specialised("clarify"),
        "cache_control": {"type": "ephemeral"},
    }
    assert "どの会議の話か" in main["text"] and "どの会議の話か" not in special["text"]


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ({}, None),
        ({"route": "PLAN"}, "plan"),
        ({"state": {"step": "planning"}}, "plan"),
        ({"state": {"open_questions": ["締め切りはいつか"]}}, "clarify"),
        ({"state": {"open_questions": ["", "  "]}}, None),
        ({"state": {"status": "REQUIRES_USER_INPUT"}, "route": "PLAN"}, "clarify"),
        ({"pending": {"question": "送ってよい？"}}, "confirm_gate"),
        ({"state": {"pending_gate": True, "open_questions": ["どれか"]}}, "confirm_gate"),
        ({"found": ["資料を作る"]}, "summarise"),
        ({"found": ["資料を作る"], "route": "PLAN"}, "summarise"),
        ({"found": ["資料を作る"], "pending": {"question": "送ってよい？"}}, "confirm_gate"),
        ({"failed_step": True, "route": "PLAN"}, "plan"),
        ({"failed_step": True}, None),
    ],
)
def test_the_specialised_block_is_chosen_by_the_table(case: dict[str, Any], expected: str | None):
    # GIVEN a turn with the case's route, agent state, pending confirmation or finished step
    t = _turn(
        "次どうする？", route=case.get("route", "CHAT"), state=case.get("state"), found=case.get("found")
    )
    t.context.pending_action = case.get("pending")
    if case.get("failed_step"):  # a later step whose earlier step's tool failed: nothing to summarise
        t.execution.results = [ToolResult(tool_name="chatwork_task_search", call_index=0, ok=False)]
        t.loop.steps.append(t.current_step())
        t.step = 1
    # WHEN / THEN
    assert choose_specialised(t) == expected
    system = assemble(t, persona=load_persona(), registry=tool_registry(), now=NOW).system
    texts = [b["text"] for b in system]
    assert (load_persona().specialised(expected) in texts) if expected else len(system) == 2


def test_the_agent_state_is_first_in_main_masked_clipped_to_the_seed_limits_and_never_cut():
    # GIVEN a state with a secret, an over-long goal and too many list items, and a long context
    state = {
        "goal": "見積書を taro@example.com に送る" + "あ" * 400,
        "constraints": ["社外秘は送らない", "今日中", "三つ目は落ちる"],
        "open_questions": ["宛先は正しいか", "添付はどれか", "三つ目"],
        "status": "IN_PROGRESS",
    }
    t = _turn("続けて", route="CHAT", state=state)
    t.context.rendered = "【直近の会話】（出典: 会話の記憶）\n" + "\n".join(f"- 発言{i}" for i in range(300))
    main = assemble(t, persona=load_persona(), registry=tool_registry(), now=NOW).system[-1]["text"]
    # THEN the block comes first and whole, before the context the builder's budget may cut
    block = render_agent_state(state)
    assert main.startswith(block.replace("taro@example.com", "[EMAIL_1]"))
    assert "taro@example.com" not in main
    goal = next(line for line in block.splitlines() if line.startswith("目標: "))
    assert len(goal) == len("目標: ") + 200 and goal.endswith("…")
    assert "制約: 社外秘は送らない／今日中\n" in block and "三つ目" not in block
    assert main.index("【エージェント状態】") < main.index("【現在のコンテキスト】") < main.index("発言299")


def test_an_empty_agent_state_is_one_line():
    assert render_agent_state({}) == "【エージェント状態】まだなし"
    assert (
        render_agent_state({"goal": "", "open_questions": [], "pending_gate": False})
        == "【エージェント状態】まだなし"
    )
