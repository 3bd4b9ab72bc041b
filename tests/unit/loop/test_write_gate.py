"""Gate before any write (seed 004 §9, issue 17.6): the executor runs a tool the registry says
writes only on a guardian verdict that lets it through (allow / modify) and an authorization
``allowed`` of the same step, at every step of a multi-step turn. Proven two ways: every write
that ran in a chain of turns had both on its own step record (and nothing changed where one was
missing), and the executor alone refuses a write at steps 0, 1 and 2 without them, including
a later step that still carries an earlier step's allow."""

from __future__ import annotations

from itertools import count
from typing import Any

import pytest
from loop_fakes import LOOK, SEARCH, Chain, complete_found, inbound, text, tool_call, tool_results

from shared_lib.layers import executor
from shared_lib.layers.ingress import accept
from shared_lib.loop import LoopDecision, take_step
from shared_lib.ports import LLMRequest
from shared_lib.turn.decisions import AuthDecision, Verdict
from shared_lib.turn.envelope import StepRecord, ToolResult, Turn
from shared_lib.turn.proposal import Proposal
from shared_lib.turn.steps import WorkerOutput

WRITE = tool_call("chatwork_task_create", {"body": "議事録を書く", "assignee_name": "山田"})


def writes_run(chain: Chain, turn: Turn) -> list[tuple[StepRecord, ToolResult]]:
    """Every write that really ran in ``turn``, with the record of the step it ran in."""
    steps = [*turn.loop.steps, turn.current_step()]
    return [
        (step, r)
        for step in steps
        for r in step.results
        if chain.rt.registry.get(r.tool_name).writes and not r.dry_run  # type: ignore[union-attr]
    ]


def assert_gated(chain: Chain, turn: Turn) -> int:
    """Each write that ran had this step's allow (or modify) and authorization ``allowed``."""
    ran = writes_run(chain, turn)
    for step, _ in ran:
        assert step.guardian is not None and step.guardian.action in ("allow", "modify")
        assert step.authorization is not None and step.authorization.result == "allowed"
    return len(ran)


def delete_found(request: LLMRequest) -> dict[str, Any]:
    found = tool_results(request)[-1]["results"][0]["result"]["tasks"]
    task = next(t for t in found if "資料" in t["body"])
    return tool_call("delete_task", {"task_query": task["body"], "task_id": task["task_id"]})


def test_a_write_at_the_second_step_runs_on_that_steps_own_allow_and_gate():
    chain = Chain([SEARCH, complete_found])
    _, turn = chain.say("自分のタスクを確認して、資料のタスクは完了にして")
    assert assert_gated(chain, turn) == 1 and chain.tasks("done") == ["資料を作る"]
    assert turn.loop.steps[0].results[0].tool_name == "chatwork_task_search"


def test_writes_at_the_first_and_the_second_step_each_run_on_their_own_step_gate():
    chain = Chain(
        [
            {**WRITE, "loop": LOOK},
            tool_call("chatwork_task_create", {"body": "共有する", "assignee_name": "山田"}),
            text("登録したウル🐺"),
        ]
    )
    _, turn = chain.say("議事録のタスクと共有のタスクを作って")
    assert assert_gated(chain, turn) == 2
    assert {"議事録を書く", "共有する"} <= set(chain.tasks())


def test_a_write_the_guardian_holds_at_step_two_runs_only_after_yes_and_on_the_resumed_steps_gate():
    chain = Chain([SEARCH, delete_found])
    _, paused = chain.say("自分のタスクを確認して、資料のタスクは削除して")
    # THEN the delete did not run at its step: the verdict was confirm, not allow
    assert (
        assert_gated(chain, paused) == 0
        and paused.guardian is not None
        and paused.guardian.action == "confirm"
    )
    assert len(chain.tasks()) == 2
    _, resumed = chain.say("はい")
    assert assert_gated(chain, resumed) == 1 and chain.tasks() == ["見積書を送る"]


def test_a_write_above_the_users_level_at_step_two_is_not_run():
    # u2 (level 2) searches, then the model proposes deleting (above u2's level)
    chain = Chain([SEARCH, delete_found])
    _, turn = chain.say("自分のタスクを確認して、資料のタスクは削除して", user="u2")
    assert assert_gated(chain, turn) == 0 and len(chain.tasks()) == 2
    assert turn.authorization is not None and turn.authorization.result != "allowed"


# -- the executor alone ---------------------------------------------------------------------

ALLOWED = AuthDecision.allowed(user_level=3, required_level=1)


EVENTS = count()


def _write_turn(
    chain: Chain, step: int, guardian: Verdict | None, authorization: AuthDecision | None
) -> Turn:
    """A turn at ``step`` whose brain proposed a task creation, with the given decisions."""
    turn_id = accept(chain.rt, inbound("こんにちは", f"g{next(EVENTS)}"))
    assert turn_id is not None
    turn = chain.completed(turn_id).model_copy(deep=True)
    turn.proposal.proposal = Proposal.model_validate(WRITE)
    turn.step, turn.guardian, turn.authorization = step, guardian, authorization
    return turn


@pytest.mark.parametrize("step", [0, 1, 2])
@pytest.mark.parametrize(
    ("guardian", "authorization", "skipped"),
    [
        (None, ALLOWED, "guardian.missing"),
        (Verdict.confirm("danger.high", priority=5, message="大事な操作"), ALLOWED, "guardian.confirm"),
        (Verdict.block("policy.x", priority=2, message="止める"), ALLOWED, "guardian.block"),
        (Verdict.allow(), None, "authorization"),
        (Verdict.allow(), AuthDecision.not_applicable(), "authorization"),
    ],
)
def test_the_executor_never_runs_a_write_without_this_steps_allow_and_gate(
    step: int, guardian: Verdict | None, authorization: AuthDecision | None, skipped: str
):
    chain = Chain([text("こんにちはウル🐺")])
    before = chain.tasks()
    turn = _write_turn(chain, step, guardian, authorization)
    outcome = executor.run(turn, chain.rt)
    assert outcome.outcome == "skipped" and turn.execution.skipped_reason == skipped
    assert turn.execution.results == [] and chain.tasks() == before


@pytest.mark.parametrize("step", [0, 1, 2])
def test_the_executor_runs_a_write_with_this_steps_allow_and_gate(step: int):
    chain = Chain([text("こんにちはウル🐺")])
    turn = _write_turn(chain, step, Verdict.allow(), ALLOWED)
    assert executor.run(turn, chain.rt).outcome == "executed" and "議事録を書く" in chain.tasks()


@pytest.mark.parametrize("step", [0, 1])
def test_a_later_step_never_inherits_the_earlier_steps_allow(step: int):
    # GIVEN a step whose write was allowed, gated and run; the controller hands over the next step
    chain = Chain([text("こんにちはウル🐺")])
    turn = _write_turn(chain, step, Verdict.allow(), ALLOWED)
    executor.run(turn, chain.rt)
    decision = LoopDecision(action="continue", reason="continue", worker=WorkerOutput(needs_next_loop=True))
    take_step(turn, decision, chain.rt.clock(), step_seconds=30, max_millis=90_000)
    # WHEN the next step's proposal reaches the executor without its own guardian and gate
    turn.proposal.proposal = Proposal.model_validate(
        tool_call("chatwork_task_create", {"body": "別件", "assignee_name": "山田"})
    )
    outcome = executor.run(turn, chain.rt)
    # THEN the earlier allow is in that step's record only, and the write does not run
    assert turn.step == step + 1 and turn.loop.steps[-1].guardian == Verdict.allow()
    assert outcome.outcome == "skipped" and turn.execution.skipped_reason == "guardian.missing"
    assert "別件" not in chain.tasks()
