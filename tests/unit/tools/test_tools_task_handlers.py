"""Task tools on the store backend: validation, normalisation, ownership, clarification."""

from __future__ import annotations

import pytest
from tool_fakes import ORG, call, docs


def open_tasks(store):
    return {tid: d for tid, d in docs(store, "tasks").items() if d["status"] == "open"}


def create(ex, body, assignee="田中太郎", limit=None, n=0, user="u-suzuki", **extra):
    params = {"body": body, "assignee_name": assignee, **({"limit_date": limit} if limit else {}), **extra}
    return call(ex, "chatwork_task_create", params, call_id=f"create-{n}", user=user)


def test_given_a_request_with_relative_deadline_when_created_then_the_stored_task_is_normalised(ex, store):
    # WHEN 田中太郎 gets a task due 来週金曜 (the clock says Wednesday 2026-01-28)
    out = create(ex, "  見積書を　作成 ", "田中太郎さん", "来週金曜", limit_time="午後3時")
    # THEN the task is stored with fixed-logic values, not the LLM's raw strings
    assert out.ok, out
    assert out.result == {
        "task_id": out.result["task_id"],
        "body": "見積書を 作成",
        "assignee": "田中太郎",
        "limit_date": "2026-02-06",
        "limit_time": "15:00",
    }
    stored = docs(store, "tasks")[out.result["task_id"]]
    assert (stored["assignee_id"], stored["limit_date"], stored["created_by"]) == (
        "102",
        "2026-02-06",
        "u-suzuki",
    )


@pytest.mark.parametrize("me", ["俺", "自分", "私"])
def test_given_a_self_word_as_assignee_when_created_then_the_sender_is_the_assignee(ex, store, me):
    out = create(ex, "経費精算", me, "明日")
    assert out.result["assignee"] == "鈴木一郎" and out.result["limit_date"] == "2026-01-29"


def test_given_an_ambiguous_assignee_when_created_then_a_clarification_and_no_task(ex, store):
    out = create(ex, "議事録", "田中")
    assert not out.ok and out.error_code == "validation_error"
    assert out.result["clarification"] is True and out.result["options"] == ["田中太郎", "田中花子"]
    assert docs(store, "tasks") == {}


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"body": "x", "assignee_name": "田中太郎", "limit_date": "昨日"}, "limit_date"),
        ({"body": "x", "assignee_name": "田中太郎", "limit_date": "2025-12-01"}, "limit_date"),
        ({"body": "x", "assignee_name": "田中太郎", "limit_time": "15:00"}, "limit_date"),
        ({"body": "x", "assignee_name": "佐藤"}, "assignee_name"),
    ],
)
def test_given_values_fixed_logic_rejects_when_created_then_validation_error_on_the_field(
    ex, store, params, field
):
    out = call(ex, "chatwork_task_create", params)
    assert out.error_code == "validation_error" and out.result["field"] == field
    assert docs(store, "tasks") == {}


@pytest.mark.parametrize(
    "params",
    [
        {"body": "", "assignee_name": "田中太郎"},
        {"body": "x"},
        {"body": "x", "assignee_name": "田中太郎", "priority": "high"},
        {"body": "x" * 1001, "assignee_name": "田中太郎"},
    ],
)
def test_given_parameters_the_model_rejects_when_executed_then_validation_error_and_nothing_written(
    ex, store, params
):
    out = call(ex, "chatwork_task_create", params)
    assert out.error_code == "validation_error" and out.result["fields"]
    assert docs(store, "tasks") == {}


def test_given_tasks_when_searched_then_by_assignee_and_status(ex, store):
    create(ex, "見積書", "自分", "明日", n=1)
    create(ex, "議事録", "自分", "月末", n=2)
    create(ex, "請求書", "田中太郎", n=3)
    mine = call(ex, "chatwork_task_search", {})
    assert mine.ok and [t["body"] for t in mine.result["tasks"]] == ["見積書", "議事録"]
    theirs = call(ex, "chatwork_task_search", {"assignee_name": "田中太郎さん", "status": "all"})
    assert [t["body"] for t in theirs.result["tasks"]] == ["請求書"]


def test_given_a_target_user_id_that_contradicts_the_name_when_searched_then_refused(ex):
    out = call(ex, "chatwork_task_search", {"assignee_name": "田中太郎", "target_user_id": "u-yamada"})
    assert out.error_code == "validation_error" and out.result["field"] == "target_user_id"
    by_id = call(ex, "chatwork_task_search", {"target_user_id": "u-yamada"})
    assert by_id.ok and by_id.result["assignee"] == "山田次郎"


def test_given_own_open_tasks_when_completed_by_words_or_number_then_that_task_is_done(ex, store):
    create(ex, "見積書を作成", "自分", "明日", n=1)
    create(ex, "議事録のまとめ", "自分", "月末", n=2)
    out = call(ex, "chatwork_task_complete", {"task_query": "見積書のタスク"}, call_id="c1")
    assert out.ok and out.result["body"] == "見積書を作成"
    by_number = call(ex, "chatwork_task_complete", {"task_query": "1"}, call_id="c2")
    assert by_number.result["body"] == "議事録のまとめ"
    assert open_tasks(store) == {}


def test_given_two_matching_tasks_when_completed_then_a_clarification_names_both(ex, store):
    create(ex, "A社の見積書", "自分", n=1)
    create(ex, "B社の見積書", "自分", n=2)
    out = call(ex, "chatwork_task_complete", {"task_query": "見積書"})
    assert out.result["clarification"] and sorted(out.result["options"]) == ["A社の見積書", "B社の見積書"]
    assert len(open_tasks(store)) == 2


def test_given_someone_elses_task_when_completed_then_it_is_not_found(ex, store):
    create(ex, "請求書", "田中太郎", n=1)
    out = call(ex, "chatwork_task_complete", {"task_query": "請求書"})
    assert out.error_code == "validation_error" and len(open_tasks(store)) == 1


def test_given_a_task_the_sender_assigned_when_deleted_then_soft_deleted_and_others_cannot(ex, store):
    created = create(ex, "請求書", "田中太郎", n=1)
    stranger = call(ex, "delete_task", {"task_query": "請求書", "assignee_name": "田中太郎"}, user="u-yamada")
    assert stranger.error_code == "validation_error"
    out = call(ex, "delete_task", {"task_query": "請求書", "assignee_name": "田中太郎"}, call_id="d1")
    assert out.ok and out.result == {"task_id": created.result["task_id"], "body": "請求書", "deleted": True}
    assert docs(store, "tasks")[created.result["task_id"]]["status"] == "deleted"
    assert (
        call(ex, "chatwork_task_search", {"assignee_name": "田中太郎", "status": "all"}).result["count"] == 0
    )


def test_given_delete_without_a_target_when_validated_then_refused(ex):
    assert call(ex, "delete_task", {}).error_code == "validation_error"


def test_given_a_department_when_team_tasks_are_viewed_then_sub_departments_count_and_unknown_is_refused(
    ex, store
):
    create(ex, "東日本の訪問", "山田", n=1)
    create(ex, "開発の見積", "田中花子", n=2)
    team = call(ex, "view_team_tasks", {}, user="u-suzuki")
    assert team.ok and team.result["department_id"] == "d-sales"
    assert [t["body"] for t in team.result["tasks"]] == ["東日本の訪問"]
    other = call(ex, "view_team_tasks", {"target_department_id": "d-dev"})
    assert [t["body"] for t in other.result["tasks"]] == ["開発の見積"]
    missing = call(ex, "view_team_tasks", {"target_department_id": "d-nowhere"})
    assert missing.error_code == "validation_error" and missing.result["field"] == "target_department_id"


def test_a_team_view_names_its_department_as_people_say_it(ex, store):
    # GIVEN a directory that names 開発部 and leaves the sales department unnamed
    store.set(f"orgs/{ORG}/departments/d-dev", {"name": "開発部"}, merge=True)
    create(ex, "開発の見積", "田中花子", n=1)
    # THEN a reply can say 「開発部」, never d-dev; an unnamed department is shown by its id
    tasks = call(ex, "view_team_tasks", {"target_department_id": "d-dev"})
    goals = call(ex, "view_team_goals", {"target_department_id": "d-dev"})
    assert tasks.result["department"] == goals.result["department"] == "開発部"
    assert call(ex, "view_team_tasks", {}, user="u-suzuki").result["department"] == "d-sales"
