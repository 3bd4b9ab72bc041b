"""Error recovery and its retry limit (seed 004 §6.3: a step ending in ERROR goes back to
planning, 復旧後の再試行回数を制限; seed 002 §10.1 ``retry_max = 2``): a step whose call the
charter's checks refused (nothing ran) is followed by a recovery step; two recoveries in a row at
most, then the loop stops with ``worker_failure``. Fixed logic in the loop controller; the chain
is the in-process one with a fake LLM port."""

from __future__ import annotations

from dataclasses import replace

from loop_fakes import SEARCH, Chain, complete_found, tool_call, tool_results

from shared_lib.loop import LoopLimits, decide
from shared_lib.turn.envelope import Turn

ASK = "資料のタスク、完了にしといて！"
# a task id the model made up: the handler refuses it before anything is written
UNKNOWN_ID = tool_call("chatwork_task_complete", {"task_query": "資料を作る", "task_id": "t-0042"})


def test_a_refused_call_is_recovered_by_planning_again_and_the_reply_tells_what_was_done():
    # GIVEN a model that first completes a task id it made up, then searches, then completes the one found
    chain = Chain([UNKNOWN_ID, SEARCH, complete_found])
    # WHEN the person asks
    reply, turn = chain.say(ASK)
    # THEN the loop recovered: three steps, the task done once, the loop stopped as done
    assert len(chain.proposals()) == 3 and chain.tasks("done") == ["資料を作る"]
    assert turn.loop.stop_reason == "done"
    names = [e["event"] for e in turn.loop.events]
    assert names[:3] == ["worker.fail", "worker.success", "worker.success"]
    assert turn.loop.events[0]["error_reason"].endswith("validation_error")
    # AND the reply tells the completion, not the refusal it recovered from
    assert "見つからなかった" not in reply and reply == chain.replies()[-1]


def test_the_third_failure_in_a_row_stops_the_loop_with_worker_failure_at_the_seeds_limit():
    # GIVEN a model that keeps proposing the made-up id, in a loop long enough to go on (a job's)
    chain = Chain([UNKNOWN_ID] * 6, env={"CHARTER_MAX_STEPS": "6"})
    # WHEN the person asks
    reply, turn = chain.say(ASK)
    # THEN two recoveries were taken, the third failure stopped the loop: worker_failure, retry_max 2
    assert len(chain.proposals()) == 3
    assert turn.loop.stop_reason == "worker_failure" and turn.loop.stop_detail.startswith("retry_max 2")
    assert [e["event"] for e in turn.loop.events].count("worker.fail") == 3
    assert chain.tasks("done") == [] and "ウル" in reply


def complete_what_the_search_found(request):
    """Complete the task the last search found (later steps may have failed since)."""
    searched = [o for o in tool_results(request) if any("tasks" in r.get("result", {}) for r in o["results"])]
    found = searched[-1]["results"][0]["result"]["tasks"]
    task = next(t for t in found if "資料" in t["body"])
    return tool_call("chatwork_task_complete", {"task_query": task["body"], "task_id": task["task_id"]})


def test_the_limit_counts_failures_in_a_row_not_in_all():
    # GIVEN fail, succeed, fail, fail, succeed: never more than two failures in a row
    chain = Chain(
        [UNKNOWN_ID, SEARCH, UNKNOWN_ID, UNKNOWN_ID, complete_what_the_search_found],
        env={"CHARTER_MAX_STEPS": "6"},
    )
    _, turn = chain.say(ASK)
    # THEN every recovery was allowed and the task was completed at the fifth step
    assert len(chain.proposals()) == 5 and turn.loop.stop_reason == "done"
    assert chain.tasks("done") == ["資料を作る"]


def test_what_the_person_named_that_does_not_exist_is_told_them_not_retried():
    # GIVEN a request naming a task the person does not have
    chain = Chain([tool_call("chatwork_task_complete", {"task_query": "請求書の送付"})] * 3)
    # WHEN the model completes it by that name
    reply, turn = chain.say("請求書送付のタスク完了で〜")
    # THEN one step: the person is told, no recovery is taken
    assert len(chain.proposals()) == 1 and turn.loop.stop_reason == "worker_failure"
    assert "retry_max" not in turn.loop.stop_detail and "ウル" in reply


def test_a_failure_whose_effect_may_have_happened_is_never_retried():
    # GIVEN a failed call the charter did not refuse itself (a provider's error, a timeout)
    from shared_lib.loop.controller import recoverable

    chain = Chain([UNKNOWN_ID])
    _, turn = chain.say(ASK)
    [failed] = turn.loop.steps[0].results if turn.loop.steps else turn.execution.results
    for code in ("external_api_error", "tool_timeout", "execution_error"):
        unsure = turn.model_copy(deep=True)
        unsure.loop.steps = []
        unsure.execution.results = [failed.model_copy(update={"error_code": code})]
        # THEN the controller takes no recovery step
        assert recoverable(unsure) is False
    # AND a refusal that asks the person to choose is not retried either (the person is asked)
    asking = turn.model_copy(deep=True)
    asking.execution.results = [
        failed.model_copy(update={"result": {**failed.result, "clarification": True}})
    ]
    assert recoverable(asking) is False


def test_the_controller_decides_recovery_from_the_limit_it_is_given():
    # GIVEN the turn as the responder gets it after the refused first step
    chain = Chain([UNKNOWN_ID, SEARCH, complete_found])
    chain.say(ASK)
    executed = next(
        Turn.from_message(data, attrs, chain.rt.store)
        for topic, data, attrs, _ in chain.rt.bus.published  # type: ignore[attr-defined]
        if topic == "executed" and attrs.get("step") == "0"
    )
    now = chain.rt.clock()
    # WHEN the controller decides with the seed's limit THEN it recovers
    assert LoopLimits().retry_max == 2
    first = decide(executed, LoopLimits(), now)
    assert (first.action, first.reason, first.detail) == ("continue", "recover", "retry 1")
    # AND with no retries allowed it stops the loop as the seed says
    none = decide(executed, replace(LoopLimits(), retry_max=0), now)
    assert (none.action, none.reason) == ("stop", "worker_failure") and none.detail.startswith("retry_max 0")
