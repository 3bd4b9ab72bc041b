"""Issue 37: the agent state follows a step-2 approval. The code's transitions of one utterance's
steps form a chain along the table (a search: PLANNING → EXECUTION; then a delete the charter
confirms: EXECUTION → AWAITING_APPROVAL), while the LLM still moves the step at most once per
utterance and never along a move the table forbids."""

from __future__ import annotations

from typing import Any

import pytest
from loop_fakes import ORG, SEARCH, Chain, tool_call, tool_results

from shared_lib.features.agent_state.state import AgentState, CodeTransition, apply
from shared_lib.features.agent_state.store import agent_state_path
from shared_lib.ports import LLMRequest
from shared_lib.turn.agent_record import Status, Step
from shared_lib.turn.proposal import StateUpdate


def delete_found(request: LLMRequest) -> dict[str, Any]:
    found = tool_results(request)[-1]["results"][0]["result"]["tasks"]
    task = next(t for t in found if "資料" in t["body"])
    return tool_call("delete_task", {"task_query": task["body"], "task_id": task["task_id"]})


def stored_step(chain: Chain) -> str:
    doc = chain.rt.store.get(agent_state_path(ORG, f"{ORG}/r1/u1"))
    assert doc is not None
    return str(doc["step"])


@pytest.mark.parametrize(
    "message",
    [
        "自分のタスクを確認して、資料のタスクは削除して",
        "ワイのタスク見て、資料のやつは消しといて🙏",
        "お手数ですが、私のタスクをご確認のうえ「資料を作る」を削除いただけますか",
    ],
)
def test_a_step_two_approval_moves_the_state_to_awaiting_approval(message):
    # GIVEN a turn whose first step searches and whose second step's delete waits for approval
    chain = Chain([SEARCH, delete_found])
    _, turn = chain.say(message)
    assert turn.response.kind == "confirm"
    # THEN the state follows both steps: EXECUTION, then AWAITING_APPROVAL with the gate pending
    assert turn.agent is not None
    assert [(t.from_step, t.to_step, t.by) for t in turn.agent.transition] == [
        (Step.PLANNING, Step.EXECUTION, "code"),
        (Step.EXECUTION, Step.AWAITING_APPROVAL, "code"),
    ]
    assert turn.agent.refused == []
    assert turn.agent.state["step"] == "AWAITING_APPROVAL" and turn.agent.state["pending_gate"] is True
    assert stored_step(chain) == "AWAITING_APPROVAL"
    # WHEN the user approves, THEN the approved action moves it on to EXECUTION
    _, resumed = chain.say("はい、お願い")
    assert resumed.agent is not None and stored_step(chain) == "EXECUTION"


def test_the_llm_still_moves_the_step_at_most_once_per_utterance():
    # GIVEN the code moved the step at this utterance's first step
    state, _ = apply(AgentState(), None, utterance_id="t1", code_transition=CodeTransition(Step.EXECUTION))
    # WHEN a later step's LLM proposes REVIEW (which the table allows from EXECUTION)
    state, out = apply(state, StateUpdate(step=Step.REVIEW), utterance_id="t1", code_transition=None)
    # THEN it is refused as a second transition
    assert state.step is Step.EXECUTION and [(r.by, r.reason) for r in out.refused] == [
        ("llm", "second_transition")
    ]


def test_a_code_move_the_table_forbids_is_refused_even_in_a_chain():
    # GIVEN the step moved to AWAITING_APPROVAL on this utterance
    state, _ = apply(
        AgentState(), None, utterance_id="t1", code_transition=CodeTransition(Step.AWAITING_APPROVAL)
    )
    # WHEN a later step's code says REVIEW (AWAITING_APPROVAL -> REVIEW is not in the table)
    state, out = apply(state, None, utterance_id="t1", code_transition=CodeTransition(Step.REVIEW))
    # THEN it is refused and recorded
    assert state.step is Step.AWAITING_APPROVAL
    assert [(r.by, r.to_step, r.reason) for r in out.refused] == [("code", Step.REVIEW, "not_in_table")]


def test_an_error_chain_takes_the_error_transition_only_when_ending_in_error():
    state, _ = apply(AgentState(), None, utterance_id="t1", code_transition=CodeTransition(Step.EXECUTION))
    failed = CodeTransition(Step.PLANNING, Status.ERROR, None, "tool.failed")
    state, out = apply(state, None, utterance_id="t1", code_transition=failed)
    assert state.step is Step.PLANNING and out.transition is not None
    no_error = CodeTransition(Step.PLANNING, Status.SUCCESS, None, "")
    state2, out2 = apply(AgentState(step=Step.EXECUTION), None, utterance_id="t2", code_transition=no_error)
    assert state2.step is Step.EXECUTION and [r.reason for r in out2.refused] == ["not_in_table"]
