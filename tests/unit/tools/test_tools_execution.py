"""The executor's engine on the store: one effect per receipt, dry runs, timeouts, typed errors."""

from __future__ import annotations

import pytest
from tool_fakes import ORG, OTHER_ORG, FakeTools, call, docs, make_executor, registry_with

from shared_lib.errors import StoreUnavailable


@pytest.fixture
def tools():
    fakes = FakeTools()
    yield fakes
    fakes.release.set()  # never leave a blocked handler behind


@pytest.fixture
def fx(store, clock, tools):
    return make_executor(store, clock=clock, registry=registry_with(tools))


def test_given_a_store_effect_executed_twice_with_the_same_receipt_then_one_effect_and_the_stored_result(
    fx, store, tools
):
    first = call(fx, "note", {"text": "hello"}, call_id="t1-0-0")
    second = call(fx, "note", {"text": "hello"}, call_id="t1-0-0")
    assert first.ok and not first.replayed
    assert second.ok and second.replayed and second.result == first.result
    assert tools.invocations == 1
    assert list(docs(store, "notes")) == ["t1-0-0"]
    receipt = store.get(f"orgs/{ORG}/receipts/t1-0-0")
    assert receipt["status"] == "done" and receipt["result"] == {"noted": "hello", "n": 1}


def test_given_two_different_calls_then_two_effects(fx, store):
    call(fx, "note", {"text": "a"}, call_id="t1-0-0")
    call(fx, "note", {"text": "b"}, call_id="t1-0-1")
    assert len(docs(store, "notes")) == 2


def test_given_a_dry_run_when_a_write_tool_runs_then_it_previews_and_writes_nothing(fx, store):
    before = store.dump()
    out = call(
        fx,
        "chatwork_task_create",
        {"body": "見積書", "assignee_name": "田中太郎", "limit_date": "明日"},
        dry_run=True,
    )
    assert out.ok and out.result["dry_run"] is True and out.result["task"]["limit_date"] == "2026-01-29"
    assert out.receipt_id is None
    assert store.dump() == before


def test_given_a_dry_run_when_validation_fails_then_the_same_error_as_for_real(fx):
    out = call(fx, "chatwork_task_create", {"body": "見積書", "assignee_name": "田中"}, dry_run=True)
    assert out.error_code == "validation_error" and out.result["clarification"]


def test_given_a_handler_that_writes_outside_its_transaction_then_refused(fx, store):
    out = call(fx, "sneaky", {"text": "x"})
    assert out.error_code == "execution_error" and docs(store, "notes") == {}


def test_given_a_handler_slower_than_its_timeout_then_tool_timeout_and_nothing_committed(fx, store, tools):
    out = call(fx, "slow", {"text": "late"})
    assert out.error_code == "tool_timeout"
    tools.release.set()  # the abandoned handler finishes; its transaction must not commit
    assert docs(store, "notes") == {}
    assert store.get(f"orgs/{ORG}/receipts/turn1-0-0") is None


def test_given_a_crashing_handler_then_execution_error_without_its_message_in_the_result(fx):
    out = call(fx, "boom", {"text": "x"})
    assert out.error_code == "execution_error"
    assert "secret" in out.message and "secret" not in str(out.result)


@pytest.mark.parametrize("tool", ["no_such_tool", "off"])
def test_given_an_unknown_or_disabled_tool_then_handler_not_found(fx, tool):
    assert call(fx, tool, {"text": "x"}).error_code == "handler_not_found"


def test_given_a_handler_reaching_into_another_org_then_access_control_error(fx, store):
    store.set(f"orgs/{OTHER_ORG}/notes/x", {"text": "secret of globex"})
    out = call(fx, "peek", {"text": "x"})
    assert out.error_code == "access_control_error" and "globex" not in str(out.result)


def test_given_the_store_is_down_then_the_failure_propagates_for_redelivery(fx, store):
    store.fail_reads = True
    with pytest.raises(StoreUnavailable):
        call(fx, "note", {"text": "x"})
