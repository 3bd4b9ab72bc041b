"""An approved skill in a turn (seed 001 §23.5), in process over the real layers and a scripted
LLM: offered to the brain, checked by the gate at its level, run by the executor in the sandbox;
gone from the next turn after a rollback."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from skill_fakes import CONFIG, NETWORK, spec

from shared_lib.features.skills import store as skills
from shared_lib.features.skills.store_examples import run_version_test
from shared_lib.ports import LLMRequest, LLMResponse
from shared_lib.turn.envelope import Turn
from shared_lib.wiring.composition import wire_inprocess
from tests.unit.brain.brain_fakes import ORG, FakeLLM, decision, inbound, runtime, served, text_answer

NOW = datetime(2026, 11, 25, 9, 0, tzinfo=UTC)
DOUBLE = "def run(input, view):\n    return {'sum': (input['a'] + input['b']) * 2}\n"


def call_skill(request: LLMRequest) -> LLMResponse:
    if request.call_type == "proposal":
        return decision(
            {
                "output_type": "tool_call",
                "reasoning": {
                    "intent_understanding": "3と4を足したいという意図だと理解した",
                    "context_used": ["ユーザーの最新メッセージ"],
                    "tool_selection_reason": "数の合計スキルがある",
                    "alternatives_considered": ["自分で計算する"],
                },
                "confidence": {"overall": 0.95, "intent": 0.95, "parameters": 0.95},
                "tool_calls": [
                    {
                        "tool_name": "skill_add_numbers",
                        "parameters": {"a": 3, "b": 4},
                        "parameter_sources": {"a": "user_message", "b": "user_message"},
                    }
                ],
            }
        )
    return text_answer("計算できたウル🐺")


def offered(llm: FakeLLM) -> set[str]:
    request = llm.calls("proposal")[-1]
    return {t["name"] for t in request.tools or []}


def tool_results(llm: FakeLLM) -> list[Any]:
    """What the phrasing step was given: the tool results, as text."""
    return [
        json.dumps(r.messages, ensure_ascii=False, default=str)
        for r in llm.requests
        if r.call_type != "proposal"
    ]


def approve(rt: Any, code: str, min_level: int = 2, expected: int = 3) -> int:
    example = [{"input": {"a": 1, "b": 2}, "output": {"sum": expected}}]
    version, _ = skills.propose(
        rt.store, ORG, spec(code, min_level=min_level, examples=example), by="model", now=NOW
    )
    tested = run_version_test(rt.store, ORG, "add_numbers", version, CONFIG, NOW)
    assert tested[1] == "tested", tested[2]
    skills.approve(rt.store, ORG, "add_numbers", version, by="ceo", now=NOW)
    return version


def chain() -> tuple[Any, FakeLLM]:
    llm = FakeLLM(default=call_skill)
    rt = runtime(llm)
    rt.store.set(f"orgs/{ORG}/users/ceo", {"name": "社長", "level": 6})
    wire_inprocess(rt)
    return rt, llm


def test_an_approved_skill_runs_through_the_executor_and_a_rollback_removes_or_restores_it():
    rt, llm = chain()
    # GIVEN no approved skill: the brain is not offered one
    served(rt, "3と4を足して", "e0")
    assert not any(name.startswith("skill_") for name in offered(llm))
    # WHEN v1 is approved and the user asks (u1 is level 3)
    approve(rt, spec().implementation)
    reply, record = served(rt, "3と4を足して", "e1")
    # THEN it was offered, allowed and run in the sandbox: its output reached the phrasing step
    assert "skill_add_numbers" in offered(llm)
    assert (record["auth_result"], record["execution_success"], record["tool_calls_executed"]) == (
        "allowed",
        True,
        1,
    )
    assert record["execution_result"][0]["result"]["result"] == {"sum": 7}
    assert '"sum": 7' in "".join(tool_results(llm)).replace('\\"', '"')
    assert "skill_add_numbers" not in reply
    # WHEN v2 is approved THEN v2 runs; WHEN rolled back THEN v1 runs again
    approve(rt, DOUBLE, expected=6)
    _, record = served(rt, "3と4を足して", "e2")
    assert record["execution_result"][0]["result"]["result"] == {"sum": 14}
    assert '"sum": 14' in "".join(tool_results(llm)).replace('\\"', '"')
    skills.rollback(rt.store, ORG, "add_numbers", by="ceo", now=NOW)
    before = len(llm.requests)
    _, record = served(rt, "3と4を足して", "e3")
    assert record["execution_result"][0]["result"]["result"] == {"sum": 7}
    later = [json.dumps(r.messages, ensure_ascii=False, default=str) for r in llm.requests[before:]]
    assert '"sum": 7' in "".join(later).replace('\\"', '"')


def test_a_member_below_the_skills_level_is_denied_by_the_gate():
    rt, llm = chain()
    approve(rt, spec().implementation, min_level=5)
    before = len(llm.requests)
    reply, record = served(rt, "3と4を足して", "e1")
    # THEN the gate denied it at the skill's level and the executor never ran it
    assert (record["auth_result"], record["auth_reason"]) == ("denied", "level.insufficient")
    assert (record["auth_user_level"], record["auth_required_level"]) == (3, 5)
    assert (record["execution_skipped_reason"], record["tool_calls_executed"]) == ("authorization", 0)
    later = "".join(json.dumps(r.messages, ensure_ascii=False, default=str) for r in llm.requests[before:])
    assert '"sum": 7' not in later.replace('\\"', '"')
    assert "skill_add_numbers" not in reply and "権限" in reply


def propose_call(code: str) -> Any:
    proposed = spec(code).model_dump(exclude={"author", "sha256", "value_display"})

    def answer(request: LLMRequest) -> LLMResponse:
        if request.call_type != "proposal":
            return text_answer("下書きにしたウル🐺")
        return decision(
            {
                "output_type": "tool_call",
                "reasoning": {
                    "intent_understanding": "足し算をスキルにしたいという意図だと理解した",
                    "context_used": ["ユーザーの最新メッセージ"],
                    "tool_selection_reason": "スキルの提案ツールで下書きにする",
                    "alternatives_considered": ["毎回計算する"],
                },
                "confidence": {"overall": 0.95, "intent": 0.95, "parameters": 0.95},
                "tool_calls": [
                    {
                        "tool_name": "propose_skill",
                        "parameters": proposed,
                        "parameter_sources": {k: "user_message" for k in proposed},
                    }
                ],
            }
        )

    return answer


def test_the_model_proposes_a_skill_it_is_only_a_draft_untested_until_the_operator_tests_it():
    for code, state in ((spec().implementation, "tested"), (NETWORK, "failed")):
        llm = FakeLLM(default=propose_call(code))
        rt = runtime(llm)
        wire_inprocess(rt)
        # WHEN the model proposes a skill in a turn
        reply, record = served(rt, "足し算をスキルにして", "e1")
        # THEN a draft was stored after the commit, and none of its code ran in the turn
        assert record["execution_success"] is True, record["execution_error"]
        doc = skills.get_version(rt.store, ORG, "add_numbers", 1)
        assert (doc["state"], doc["test"]) == ("draft", None)
        assert (doc["spec"]["author"], doc["proposed_by"]) == ("model", "u1")
        # AND nothing is enabled: it is not a tool of the next turn
        assert skills.active_skills(rt.store, ORG) == []
        assert "skill_add_numbers" not in rt.for_turn(Turn.from_inbound(inbound("x"))).registry
        assert "propose_skill" not in reply
        # WHEN the operator tests it THEN the sandbox gives its verdict
        assert run_version_test(rt.store, ORG, "add_numbers", 1, CONFIG, NOW)[1] == state


def test_a_skill_that_fails_in_the_sandbox_is_a_tool_error_the_persona_phrases():
    rt, _ = chain()
    # GIVEN an approved skill whose examples pass but which fails on the user's input
    approve(
        rt,
        "def run(input, view):\n    if input['a'] == 3:\n        raise ValueError('three')\n    return {'sum': 3}\n",
    )
    # WHEN the user's turn calls it
    reply, record = served(rt, "3と4を足して", "e1")
    # THEN the executor reports a tool error and the user reads ソウルくん, never the internals
    assert (record["auth_result"], record["execution_success"]) == ("allowed", False)
    assert (record["tool_errors"], record["execution_error"]) == (1, "execution_error")
    assert "ウル" in reply and "ValueError" not in reply and "skill_" not in reply and "three" not in reply


def test_a_proposed_skill_holding_a_secret_is_refused_and_nothing_is_stored():
    # GIVEN the model proposes code that carries a person's e-mail address (an API key in a
    # parameter is already blocked by the guardian; a personal value reaches the handler)
    leaky = (
        "def run(input, view):\n    to = 'taro@example.com'\n    return {'sum': input['a'] + input['b']}\n"
    )
    llm = FakeLLM(default=propose_call(leaky))
    rt = runtime(llm)
    wire_inprocess(rt)
    # WHEN the turn runs
    reply, record = served(rt, "足し算をスキルにして", "e1")
    # THEN the call is a validation error phrased by the persona, and no skill is stored
    assert (record["execution_success"], record["execution_error"]) == (False, "validation_error")
    assert rt.store.get(skills.skill_path(ORG, "add_numbers")) is None
    assert rt.store.get(skills.version_path(ORG, "add_numbers", 1)) is None
    assert "ウル" in reply and "propose_skill" not in reply and "taro@" not in reply
