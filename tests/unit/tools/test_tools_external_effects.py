"""Exactly-once effects through ChatWork's task API (no idempotency key): the receipt is
claimed in_progress before the call; a redelivery checks the provider for the marker."""

from __future__ import annotations

from datetime import timedelta

import pytest
from tool_fakes import NOW, ORG, ROOM, call, docs, make_executor

from infra.fake_chatwork import ChatWorkTasksApp, Fault
from shared_lib.errors import LayerRetry
from shared_lib.tools.chatwork_api import ChatWorkClient
from shared_lib.tools.chatwork_tasks import ChatWorkTaskBackend
from shared_lib.tools.task_backend import body_with_marker, task_marker

TOKEN = "test-token"
CREATE = {"body": "見積書を作成", "assignee_name": "田中太郎", "limit_date": "明日"}


@pytest.fixture
def api():
    return ChatWorkTasksApp(TOKEN, accounts={102: "田中太郎", 101: "鈴木一郎"})


@pytest.fixture
def sleeps():
    return []


@pytest.fixture
def cw(store, clock, api, sleeps):
    client = ChatWorkClient("https://chatwork.test/v2", TOKEN, transport=api.transport(), sleep=sleeps.append)
    return make_executor(store, clock=clock, tasks=ChatWorkTaskBackend(client))


def test_given_a_task_created_twice_with_the_same_receipt_then_chatwork_gets_one_create(cw, api, store):
    first = call(cw, "chatwork_task_create", CREATE, call_id="t1-0-0")
    second = call(cw, "chatwork_task_create", CREATE, call_id="t1-0-0")
    assert first.ok and second.replayed and second.result == first.result
    assert len(api.creates()) == 1
    (created,) = api.tasks(ROOM)
    assert created["body"] == body_with_marker("見積書を作成", task_marker(ORG, "t1-0-0"))
    assert created["account_id"] == 102 and created["limit_type"] == "date"
    receipt = store.get(f"orgs/{ORG}/receipts/t1-0-0")
    assert receipt["status"] == "done" and receipt["request"]["limit_date"] == "明日"
    assert docs(store, "tasks") == {}  # ChatWork is the source of truth; nothing mirrored


def test_given_the_form_sent_then_it_is_chatworks_fields_with_unix_limit_and_token(cw, api):
    call(cw, "chatwork_task_create", {**CREATE, "limit_time": "15:00"})
    (post,) = api.calls("POST")
    assert post["token_ok"] and post["form"]["to_ids"] == "102" and post["form"]["limit_type"] == "time"
    assert int(post["form"]["limit"]) == int(
        (NOW + timedelta(days=1)).replace(hour=6).timestamp()
    )  # 15:00 JST


def test_given_a_crash_after_the_call_when_redelivered_then_the_marker_is_found_and_nothing_is_created(
    cw, api, store, clock
):
    # GIVEN an earlier delivery claimed the receipt, created the task, then died before recording it
    marker = task_marker(ORG, "t1-0-0")
    api.add_task(ROOM, body_with_marker("見積書を作成", marker), 102)
    store.set(
        f"orgs/{ORG}/receipts/t1-0-0",
        {"status": "in_progress", "lease_until": clock() - timedelta(seconds=1), "attempts": 1},
    )
    # WHEN the call is delivered again
    out = call(cw, "chatwork_task_create", CREATE, call_id="t1-0-0")
    # THEN the existing task is adopted: no second create
    assert out.ok and out.result["task_id"] == "1"
    assert api.creates() == [] and len(api.tasks(ROOM)) == 1
    assert store.get(f"orgs/{ORG}/receipts/t1-0-0")["status"] == "done"


def test_given_a_crash_before_the_call_when_redelivered_then_the_task_is_created_once(cw, api, store, clock):
    store.set(
        f"orgs/{ORG}/receipts/t1-0-0",
        {"status": "in_progress", "lease_until": clock() - timedelta(seconds=1)},
    )
    assert call(cw, "chatwork_task_create", CREATE, call_id="t1-0-0").ok
    assert len(api.creates()) == 1


def test_given_a_live_claim_held_by_another_delivery_then_retry_later(cw, api, store, clock):
    store.set(
        f"orgs/{ORG}/receipts/t1-0-0",
        {"status": "in_progress", "lease_until": clock() + timedelta(minutes=1)},
    )
    with pytest.raises(LayerRetry):
        call(cw, "chatwork_task_create", CREATE, call_id="t1-0-0")
    assert api.calls() == []


def test_given_an_ambiguous_5xx_after_the_effect_then_the_retry_finds_the_task_instead_of_creating(
    cw, api, sleeps
):
    api.inject(Fault(500, method="POST", after_effect=True))
    out = call(cw, "chatwork_task_create", CREATE)
    assert out.ok and len(api.creates()) == 1 and len(api.tasks(ROOM)) == 1
    assert len(sleeps) == 1


def test_given_a_dropped_connection_after_the_effect_then_one_task(cw, api):
    api.inject(Fault(0, method="POST", after_effect=True))
    assert call(cw, "chatwork_task_create", CREATE).ok
    assert len(api.tasks(ROOM)) == 1


def test_given_rate_limits_then_retried_with_the_injected_sleep(cw, api, sleeps):
    api.inject(Fault(429, times=2, method="POST"))
    assert call(cw, "chatwork_task_create", CREATE).ok
    assert len(sleeps) == 2 and len(api.creates()) == 1


def test_given_chatwork_keeps_failing_then_external_api_error_and_a_failed_receipt_that_recovers(
    cw, api, store
):
    api.inject(Fault(503, times=4, method="POST"))
    out = call(cw, "chatwork_task_create", CREATE, call_id="t1-0-0")
    assert out.error_code == "external_api_error"
    assert store.get(f"orgs/{ORG}/receipts/t1-0-0")["status"] == "failed"
    again = call(cw, "chatwork_task_create", CREATE, call_id="t1-0-0")
    assert again.ok and len(api.tasks(ROOM)) == 1


def test_given_chatwork_tasks_when_searched_completed_and_deleted_then_the_api_is_the_truth(cw, api):
    api.add_task(ROOM, "議事録のまとめ", 101, limit=int(NOW.timestamp()) + 86400, limit_type="date")
    api.add_task(ROOM, "見積書", 101)
    mine = call(cw, "chatwork_task_search", {})
    assert [t["body"] for t in mine.result["tasks"]] == ["議事録のまとめ", "見積書"]
    assert mine.result["tasks"][0]["limit_date"] == "2026-01-29"
    done = call(cw, "chatwork_task_complete", {"task_query": "議事録"}, call_id="c1")
    assert done.ok and [t["status"] for t in api.tasks(ROOM)] == ["done", "open"]
    deleted = call(cw, "delete_task", {"task_query": "見積書"}, call_id="d1")
    assert deleted.error_code == "handler_not_found"  # ChatWork's API cannot delete a task


def test_given_a_dry_run_on_chatwork_then_no_call_changes_anything(cw, api):
    out = call(cw, "chatwork_task_create", CREATE, dry_run=True)
    assert out.ok and out.result["dry_run"] and api.calls("POST") == []
