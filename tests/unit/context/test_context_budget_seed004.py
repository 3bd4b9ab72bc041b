"""Issue 37: the token budget cuts in seed 004 §11's order — the evidence, the conversation
summary, then the agent state's open questions, then its plan's moves — before anything else,
the recent messages included; what it cuts of the agent state never reaches the prompt."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.brain.agent_state_prompt import render_agent_state
from shared_lib.context.budget import fit
from shared_lib.context.builder import ContextBuilder, ContextConfig, ContextInput
from shared_lib.context.render import agent_state_sections, build_sections
from shared_lib.context.sources import SourceSpec
from shared_lib.tools.task_backend import StoreTaskBackend

NOW = datetime(2026, 11, 25, 9, 30, tzinfo=UTC)
STATE = {
    "goal": "来週の取引先訪問の準備を終える",
    "why_now": "訪問が来週水曜に決まったため",
    "constraints": ["見積は部長の承認が要る"],
    "plan_brief": ["訪問先の担当者を確認する", "見積書の下書きを作る", "部長に承認をお願いする"],
    "open_questions": ["訪問は午前と午後どっち？", "同行者は誰にする？"],
    "step": "PLANNING",
    "status": "IN_PROGRESS",
}


def values() -> dict[str, Any]:
    return {
        "user": {"user_id": "u1", "name": "鈴木一郎"},
        "knowledge": [{"title": "出張規程", "snippet": "日帰り出張の日当は2000円。" * 6}],
        "episodes": [{"when": "2026-11-20", "content": "先週も同じ取引先に見積を出した。" * 4}],
        "summary": "訪問準備の相談をしている。\n見積の金額で迷っている。",
        "recent_messages": [
            {"role": "user", "text": "来週の訪問、準備手伝って〜"},
            {"role": "assistant", "text": "任せてほしいウル🐺 まず担当者を確認するウル"},
            {"role": "user", "text": "担当は山田さんやったはず"},
        ],
        "agent_state": dict(STATE),
    }


def sections_of(v: dict[str, Any]) -> list:
    sections = build_sections(v, {}, now=NOW, degraded=[], fallback_user={"user_id": "u1"})
    return sections + agent_state_sections(v["agent_state"])


def cut_order(budget: int) -> list[str]:
    return list(fit(sections_of(values()), budget).dropped)


def test_the_cuts_follow_seed_004_in_its_order_before_the_recent_messages():
    full = fit(sections_of(values()), 100_000)
    assert full.dropped == {}
    # WHEN the budget shrinks step by step
    seen: list[str] = []
    for budget in range(full.tokens, 100, -5):
        for name in cut_order(budget):
            if name not in seen:
                seen.append(name)
        if "recent_messages" in seen:
            break
    # THEN the evidence goes first, then the summary, the open questions, the plan, and only
    # then the recent messages
    assert seen[:5] == ["episodes", "knowledge", "summary", "open_questions", "plan_brief"], seen
    assert seen.index("recent_messages") > seen.index("plan_brief")


def test_a_plan_is_cut_from_its_later_moves_and_questions_from_the_last():
    # GIVEN budgets that cut the first open question, then the first move of the plan
    one_question = next(b for b in range(450, 100, -1) if cut_of(b, "open_questions") == 1)
    one_move = next(b for b in range(450, 100, -1) if cut_of(b, "plan_brief") == 1)
    # THEN the last item goes first, and no move goes while a question is left
    kept = {s.name: s.lines for s in fit(sections_of(values()), one_question).sections}
    assert kept["open_questions"] == STATE["open_questions"][:1] and kept["plan_brief"] == STATE["plan_brief"]
    kept = {s.name: s.lines for s in fit(sections_of(values()), one_move).sections}
    assert kept["open_questions"] == [] and kept["plan_brief"] == STATE["plan_brief"][:2]
    assert kept["agent_state"] and kept["recent_messages"]  # the goal and the talk are still there


def cut_of(budget: int, name: str) -> int:
    return fit(sections_of(values()), budget).dropped.get(name, 0)


def test_the_agent_state_is_counted_but_never_shown_in_the_context_text():
    fitted = fit(sections_of(values()), 100_000)
    assert "訪問は午前と午後どっち？" not in fitted.rendered
    assert "訪問先の担当者を確認する" not in fitted.rendered
    without = fit(build_sections(values(), {}, now=NOW, degraded=[], fallback_user={}), 100_000)
    assert fitted.tokens > without.tokens


@pytest.mark.parametrize(("budget", "questions", "moves"), [(268, 1, 3), (240, 0, 2), (210, 0, 0)])
def test_what_the_builder_cut_of_the_state_never_reaches_the_prompt(budget, questions, moves):
    v = values()
    specs = [SourceSpec(name, 1, 2, lambda r, value=value: value) for name, value in v.items()]
    builder = ContextBuilder(ContextConfig(token_budget=budget), sources=specs)
    store = MemoryStore()
    built = builder.build(
        ContextInput(
            store=store,
            tasks=StoreTaskBackend(store),
            org_id="acme",
            user_id="u1",
            room_id="r1",
            conversation_key="acme/r1/u1",
            text="来週の訪問の準備、どこまで進んだっけ？",
            now=NOW,
        )
    )
    state = built.values["agent_state"]
    shown = render_agent_state(state)
    # THEN the state the prompt gets holds what the budget kept, in order, and nothing more
    assert state["open_questions"] == STATE["open_questions"][:questions]
    assert state["plan_brief"] == STATE["plan_brief"][:moves]
    for name in ("open_questions", "plan_brief"):
        for item in STATE[name][len(state[name]) :]:
            assert item not in shown
    assert STATE["goal"] in shown and STATE["constraints"][0] in shown
