"""Self-critique (§5.5.3): sampled by the seed's conditions at the flags' rate, recorded, never deciding."""

from __future__ import annotations

from brain_fakes import FakeLLM, decision, runtime, text, tool_call, turn, usage

from shared_lib.brain import self_critique
from shared_lib.brain.config import load_brain_config
from shared_lib.errors import LLMError
from shared_lib.layers import brain
from shared_lib.ports import LLMResponse
from shared_lib.turn.proposal import Proposal
from shared_lib.wiring.features import tool_registry

CFG = load_brain_config()
REGISTRY = tool_registry()
TASK = "田中さんに taro@example.com へ見積書を送るタスクをお願い"


def critique_answer(appropriate: bool = False) -> LLMResponse:
    return LLMResponse(
        content=[
            {
                "type": "tool_use",
                "id": "toolu_c",
                "name": "submit_critique",
                "input": {
                    "appropriate": appropriate,
                    "improvements": "期限を確認すべき",
                    "risks": "宛先 taro@example.com の誤り",
                },
            }
        ],
        stop_reason="tool_use",
        model="m",
        usage=usage(300, 40),
    )


def conditions(raw: dict, turn_id: str = "t-no-random") -> list[str]:
    return [
        c
        for c in self_critique.conditions(Proposal.model_validate(raw), REGISTRY, CFG, turn_id)
        if c != "random"
    ]


def test_given_the_seeds_conditions_when_checked_then_each_is_named():
    assert conditions(tool_call(overall=0.8)) == ["mid_confidence"]
    assert conditions(tool_call(overall=0.95)) == []
    two = tool_call(overall=0.95)
    two["tool_calls"] = two["tool_calls"] * 2
    assert conditions(two) == ["multiple_candidates"]
    alternatives = tool_call(
        overall=0.95,
        reasoning={**tool_call()["reasoning"], "alternatives_considered": ["chatwork_task_search も考えた"]},
    )
    assert conditions(alternatives) == ["multiple_candidates"]
    # send_to_all is in seed 000 DANGEROUS_OPERATIONS (announce to named people no longer is)
    assert conditions(tool_call("send_to_all", {"message": "明日は休み"}, overall=0.95)) == ["dangerous"]


def test_given_many_turns_when_drawing_the_random_condition_then_about_ten_percent_and_stable():
    hits = [self_critique.draw(f"turn-{i}", "critique-random") < 0.1 for i in range(2000)]
    assert 0.07 < sum(hits) / len(hits) < 0.13
    assert self_critique.draw("turn-1", "x") == self_critique.draw("turn-1", "x")


def test_given_a_rate_of_zero_when_conditions_hold_then_no_critique():
    assert not self_critique.should_run(["mid_confidence"], 0.0, "t")
    assert self_critique.should_run(["mid_confidence"], 1.0, "t") and not self_critique.should_run(
        [], 1.0, "t"
    )


def test_given_a_sampled_turn_when_proposing_then_the_critique_is_recorded_and_changes_nothing():
    # GIVEN a mid-confidence proposal and a critique that disagrees
    llm = FakeLLM(decision(tool_call(overall=0.8)), critique_answer(appropriate=False))
    rt, t = runtime(llm, self_critique_rate=1.0), turn(TASK)
    # WHEN
    brain.run(t, rt)
    # THEN it is recorded (masked), and the proposal is the LLM's, unchanged by the critique
    record = t.proposal.self_critique
    assert record is not None and record["status"] == "ok" and record["appropriate"] is False
    assert "mid_confidence" in record["conditions"] and "taro@example.com" not in str(record)
    assert t.proposal.proposal.tool_calls[0].tool_name == "chatwork_task_create"
    # AND the call was a forced critique tool on masked input, accounted like every call
    request = llm.requests[1]
    assert request.call_type == "self_critique" and request.tool_choice == {
        "type": "tool",
        "name": "submit_critique",
    }
    assert "taro@example.com" not in str(request.model_dump())
    assert t.usage.llm_calls == 2


def test_given_the_critique_call_fails_when_proposing_then_the_failure_is_recorded_and_the_proposal_stands():
    llm = FakeLLM(decision(tool_call(overall=0.8)), LLMError("api_timeout", "slow"))
    rt, t = runtime(llm, self_critique_rate=1.0), turn(TASK)
    outcome = brain.run(t, rt)
    record = t.proposal.self_critique
    assert outcome.outcome == "proposed" and record is not None and "mid_confidence" in record["conditions"]
    assert (record["status"], record["code"], record["model"]) == ("error", "api_timeout", "claude-haiku-4-5")
    assert t.errors == []


def test_given_no_condition_when_proposing_then_no_critique_call():
    llm = FakeLLM(decision(text(overall=0.95)))
    rt, t = runtime(llm, self_critique_rate=1.0), turn("今日は暑いですね")
    t.turn_id = "01NOCRITIQUE0000000000000A"
    assert "random" not in self_critique.conditions(
        Proposal.model_validate(text(overall=0.95)), REGISTRY, CFG, t.turn_id
    )
    brain.run(t, rt)
    assert t.proposal.self_critique is None and len(llm.requests) == 1


def test_given_a_shadow_turn_when_proposing_then_no_critique():
    llm = FakeLLM(decision(tool_call(overall=0.8)))
    rt, t = runtime(llm, self_critique_rate=1.0), turn(TASK, shadow=True)
    t.flags = t.flags.model_copy(update={"arm": "legacy", "shadow_candidate_arm": "llm"})
    brain.run(t, rt)
    assert t.proposal.self_critique is None and len(llm.requests) == 1
