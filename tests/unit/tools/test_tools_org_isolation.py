"""Organisation A's turn can neither read nor write organisation B's data, even when the
proposal names B's ids: every path is scoped to the turn's organisation."""

from __future__ import annotations

import pytest
from tool_fakes import ORG, OTHER_ORG, call, docs, seed

from shared_lib.adapters.scoped import CrossOrgAccess, WriteRefused, scoped


@pytest.fixture
def b_data(store):
    """Organisation B with its own people (same user ids as A!), a task, a goal and a memory."""
    seed(store, OTHER_ORG)
    store.set(
        f"orgs/{OTHER_ORG}/tasks/t-b1",
        {
            "body": "機密案件 GLOBEX",
            "assignee_id": "101",
            "status": "open",
            "created_by": "u-suzuki",
            "room_id": "500",
        },
    )
    store.set(
        f"orgs/{OTHER_ORG}/goals/g-b1",
        {"user_id": "u-suzuki", "title": "目標 GLOBEX", "status": "active", "progress": 10},
    )
    store.set(
        f"orgs/{OTHER_ORG}/memories/m-b1",
        {"user_id": "u-suzuki", "content": "秘密 GLOBEX", "category": "fact"},
    )
    store.set(f"orgs/{OTHER_ORG}/departments/d-b-only", {"parent": None})
    return store.dump()


def b_docs(store):
    return {k: v for k, v in store.dump().items() if k.startswith(f"orgs/{OTHER_ORG}/")}


@pytest.mark.parametrize(
    ("tool", "params"),
    [
        ("delete_task", {"task_id": "t-b1"}),
        ("chatwork_task_complete", {"task_query": "機密案件", "task_id": "t-b1"}),
        ("goal_progress_report", {"goal_id": "g-b1", "progress_percent": 99}),
        ("delete_goal", {"goal_id": "g-b1"}),
        ("delete_memory", {"memory_id": "m-b1"}),
        ("view_team_tasks", {"target_department_id": "d-b-only"}),
        ("view_team_goals", {"target_department_id": "d-b-only"}),
        ("delete_task", {"task_id": "../../globex/tasks/t-b1"}),
        ("query_memory", {"query": "秘密"}),
        ("chatwork_task_search", {"status": "all"}),
    ],
)
def test_given_a_proposal_naming_b_ids_when_a_runs_it_then_b_is_untouched_and_nothing_of_b_returns(
    ex, store, b_data, tool, params
):
    out = call(ex, tool, params, org=ORG)
    assert "GLOBEX" not in str(out.result)
    assert not out.ok or out.result.get("count", 0) == 0
    assert b_docs(store) == {k: v for k, v in b_data.items() if k.startswith(f"orgs/{OTHER_ORG}/")}


def test_given_the_same_call_id_in_two_orgs_then_receipts_and_effects_are_separate(ex, store, b_data):
    a = call(ex, "save_memory", {"content": "Aの記憶"}, org=ORG, call_id="same-0-0")
    b = call(ex, "save_memory", {"content": "Bの記憶"}, org=OTHER_ORG, call_id="same-0-0")
    assert a.ok and b.ok and not b.replayed
    assert [d["content"] for d in docs(store, "memories", ORG).values()] == ["Aの記憶"]
    assert "Bの記憶" in [d["content"] for d in docs(store, "memories", OTHER_ORG).values()]


@pytest.mark.parametrize(
    "path",
    [
        "orgs/globex/tasks/t1",
        "orgs/acme",
        "alerts/x",
        "orgs/acme/../globex/tasks/t",
        "orgs/acme-evil/tasks/t",
    ],
)
def test_given_a_scoped_store_when_a_path_leaves_the_org_then_refused(memory_store, path):
    view = scoped(memory_store, ORG)
    with pytest.raises(CrossOrgAccess):
        view.get(path)
    with pytest.raises(CrossOrgAccess):
        view.set(path, {"x": 1})


def test_given_a_scoped_store_then_group_queries_and_rescoping_are_refused(memory_store):
    view = scoped(memory_store, ORG)
    with pytest.raises(CrossOrgAccess):
        view.query("tasks", group=True)
    with pytest.raises(CrossOrgAccess):
        scoped(view, OTHER_ORG)


def test_given_a_read_only_view_then_writes_and_transaction_writes_are_refused(memory_store):
    view = scoped(memory_store, ORG, read_only=True)
    with pytest.raises(WriteRefused):
        view.set(f"orgs/{ORG}/x/y", {})
    with pytest.raises(WriteRefused):
        view.run_transaction(lambda txn: txn.set(f"orgs/{ORG}/x/y", {}))
    assert memory_store.dump() == {}
