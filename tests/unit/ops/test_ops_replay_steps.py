"""``charter replay`` of a turn of several steps (look, then act): every step is judged again
with its own recorded inputs; the policy unchanged is UNCHANGED, a change on step 2 is reported
on step 2."""

from __future__ import annotations

import pytest
from ops_fakes import ORG, ROOM, USER, policy_file, send

from shared_lib.ops.render import replay_report
from shared_lib.ops.replay import replay
from shared_lib.runtime import Runtime
from shared_lib.tools.directory import get_person
from shared_lib.tools.task_backend import TaskDraft
from tests.conftest import configure_from_env

LOOK_THEN_DONE = "自分のタスクを確認して、資料のタスクは完了にして"


@pytest.fixture
def two_step_turn(rt: Runtime) -> str:
    """A served turn: the model searched u1's two open tasks, then completed 「資料を作る（11/27の定例用）」."""
    me = get_person(rt.store, ORG, USER)
    assert me is not None
    for i, body in enumerate(("資料を作る（11/27の定例用）", "見積書を送る")):
        draft = TaskDraft(
            body=body,
            assignee_id=me.task_account_id,
            assignee_name=me.name,
            room_id=ROOM,
            created_by=USER,
            marker=f"m{i}",
        )
        rt.store.run_transaction(lambda txn, d=draft: rt.task_backend.create(ORG, d, txn=txn))
    turn_id = send(rt, LOOK_THEN_DONE)
    record = rt.store.get(f"orgs/{ORG}/observability/{turn_id}")
    assert [s["tools"] for s in record["steps"]] == [["chatwork_task_search"], ["chatwork_task_complete"]]
    assert [r["ok"] for r in record["execution_result"]] == [True]
    return turn_id


def test_given_a_two_step_turn_and_todays_policy_unchanged_when_replayed_then_nothing_differs(
    rt, two_step_turn
):
    before, published = rt.store.dump(), len(rt.bus.published)
    # WHEN the turn is replayed (its task is done since: the turn's own effect)
    rep = replay(rt, two_step_turn, org=ORG)
    # THEN every step decides as it did: UNCHANGED
    assert not rep.changed, rep.differences
    assert [(s.step, s.replayed.tools) for s in rep.steps] == [
        (1, ["chatwork_task_search:ok"]),
        (2, ["chatwork_task_complete:ok"]),
    ]
    assert rep.replayed.execution == rep.recorded.execution == "executed"
    assert "no difference" in replay_report(rep) and "CHANGED" not in replay_report(rep)
    # AND the replay wrote nothing, published nothing and asked no model
    assert rt.store.dump() == before and len(rt.bus.published) == published
    assert rep.llm_calls == 0


def test_given_a_stricter_policy_for_the_acting_step_when_replayed_then_step_two_is_reported_changed(
    rt, two_step_turn, tmp_path, monkeypatch
):
    # GIVEN today's policy asks a person to confirm a medium-risk call below 0.95 confidence
    monkeypatch.setenv("CHARTER_POLICY", str(policy_file(tmp_path, confidence={"medium": 0.95})))
    configure_from_env()
    # WHEN the turn is replayed
    rep = replay(rt, two_step_turn, org=ORG)
    # THEN the completion (step 2) is reported changed, its verdict and its execution
    assert rep.changed
    changed = {d.stage for d in rep.differences}
    assert {"step 2 guardian", "step 2 execution"} <= changed
    assert rep.steps[1].replayed.guardian.startswith("confirm/")
    assert rep.steps[1].replayed.execution.startswith("skipped:guardian.confirm")
    assert "CHANGED" in replay_report(rep)


def test_given_a_record_kept_before_steps_had_their_proposals_when_replayed_then_its_last_step_is(
    rt, two_step_turn
):
    # GIVEN the record as an older release kept it: the steps without their proposals
    path = f"orgs/{ORG}/observability/{two_step_turn}"
    doc = rt.store.get(path)
    rt.store.set(
        path, {**doc, "steps": [{k: v for k, v in s.items() if k != "proposal"} for s in doc["steps"]]}
    )
    # WHEN replayed THEN the last step (the completion) is judged alone, as before, unchanged
    rep = replay(rt, two_step_turn, org=ORG)
    assert [s.step for s in rep.steps] == [2] and rep.replayed.tools == ["chatwork_task_complete:ok"]
    assert not rep.changed
