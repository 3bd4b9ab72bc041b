"""The executor layer over a turn: it runs only what was decided, once per receipt, dry in
shadow mode, and organisation A's turn cannot reach organisation B's data."""

from __future__ import annotations

import pytest
from tool_fakes import OTHER_ORG, SENDER, Clock, docs, seed, turn_with

from shared_lib.layers import executor
from shared_lib.turn.decisions import Verdict
from shared_lib.wiring.composition import build_runtime


@pytest.fixture
def rt():
    runtime = build_runtime(
        {"CHARTER_ENV": "test", "CHARTER_LLM": "none", "CHARTER_CHANNELS": "recording"}, clock=Clock()
    )
    seed(runtime.store)
    seed(runtime.store, OTHER_ORG)
    return runtime


def test_given_a_decided_call_when_the_turn_is_delivered_twice_then_one_effect_and_a_replay(rt):
    calls = [("save_memory", {"content": "コーヒーはブラック派", "category": "preference"})]
    first, second = turn_with(calls), turn_with(calls)
    assert executor.run(first, rt).outcome == "executed"
    executor.run(second, rt)
    assert [r.replayed for r in first.execution.results + second.execution.results] == [False, True]
    assert second.execution.results[0].receipt_id == f"{first.turn_id}-0-0"
    assert len(docs(rt.store, "memories")) == 1


def test_given_a_proposal_naming_b_ids_when_a_turn_executes_then_b_is_untouched(rt):
    rt.store.set(
        f"orgs/{OTHER_ORG}/memories/m-b1", {"user_id": SENDER, "content": "秘密 GLOBEX", "category": "fact"}
    )
    rt.store.set(f"orgs/{OTHER_ORG}/goals/g-b1", {"user_id": SENDER, "title": "GLOBEX", "status": "active"})
    before = {k: v for k, v in rt.store.dump().items() if k.startswith(f"orgs/{OTHER_ORG}/")}
    turn = turn_with(
        [
            ("delete_memory", {"memory_id": "m-b1"}),
            ("delete_goal", {"goal_id": "g-b1"}),
            ("query_memory", {"query": "秘密"}),
            ("view_team_tasks", {"target_department_id": "d-dev"}),
        ]
    )
    executor.run(turn, rt)
    after = {k: v for k, v in rt.store.dump().items() if k.startswith(f"orgs/{OTHER_ORG}/")}
    assert after == before
    assert "GLOBEX" not in turn.model_dump_json()


@pytest.mark.parametrize(
    ("verdict", "reason"),
    [
        (Verdict.confirm("confidence.medium", priority=5, message="?"), "guardian.confirm"),
        (Verdict.block("danger.blocked_operation", priority=3, message="no"), "guardian.block"),
    ],
)
def test_given_a_verdict_other_than_allow_then_nothing_runs(rt, verdict, reason):
    turn = turn_with([("save_memory", {"content": "x"})], verdict=verdict)
    assert executor.run(turn, rt).reason_code == reason
    assert turn.execution.results == [] and docs(rt.store, "memories") == {}


def test_given_an_authorization_that_the_recheck_denies_then_nothing_runs(rt):
    turn = turn_with([("view_all_users", {})])  # level 5 tool, the sender has level 2
    assert executor.run(turn, rt).outcome == "skipped"
    assert turn.execution.skipped_reason == "authorization_recheck"


def test_given_a_modify_verdict_then_the_modified_parameters_are_executed(rt):
    verdict = Verdict.modify("params.clamped", priority=6, message="m", parameters={"category": "fact"})
    turn = turn_with([("save_memory", {"content": "x", "category": "preference"})], verdict=verdict)
    executor.run(turn, rt)
    assert turn.execution.results[0].result["category"] == "fact"


def test_given_a_shadow_turn_then_it_dry_runs_writes_nothing_and_records_a_preview(rt):
    before = rt.store.dump()
    turn = turn_with(
        [("chatwork_task_create", {"body": "見積書", "assignee_name": "自分", "limit_date": "明日"})],
        shadow=True,
    )
    executor.run(turn, rt)
    (result,) = turn.execution.results
    assert result.ok and result.dry_run and result.result["would"] == "chatwork_task_create"
    assert result.receipt_id is None and turn.execution.dry_run
    assert rt.store.dump() == before


def test_given_a_failing_call_then_a_catalogue_error_is_recorded_on_the_turn(rt):
    turn = turn_with([("chatwork_task_create", {"body": "x", "assignee_name": "田中"})])
    assert executor.run(turn, rt).reason_code == "validation_error"
    (error,) = turn.errors
    assert error.code == "validation_error" and error.layer == "executor"
    assert error.details["options"] == ["田中太郎", "田中花子"]
