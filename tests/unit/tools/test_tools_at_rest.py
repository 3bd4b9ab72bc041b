"""Tool effects at rest: what a handler writes and what a receipt keeps is masked, personal
data expires by the organisation's retention, and the real value still reaches an external
task service (the executor restores it for the handler only)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from tool_fakes import NOW, ORG, ROOM, call, docs, make_executor

from infra.fake_chatwork import ChatWorkTasksApp
from shared_lib.tools.chatwork_api import ChatWorkClient
from shared_lib.tools.chatwork_tasks import ChatWorkTaskBackend

PHONE, EMAIL, CARD = "090-1234-5678", "taro.suzuki@example.com", "4111 1111 1111 1111"
RETENTION = timedelta(days=30)


def clear_values(doc: object) -> set[str]:
    text = json.dumps(doc, ensure_ascii=False, default=str)
    return {v for v in (PHONE, EMAIL, CARD, PHONE.replace("-", "")) if v in text}


@pytest.fixture
def kept(store, clock):
    return make_executor(store, clock=clock, retention=RETENTION)


def test_a_memory_is_stored_masked_and_expires_by_the_retention_while_the_turn_sees_its_value(kept, store):
    # WHEN a person asks to remember their e-mail and phone
    out = call(kept, "save_memory", {"content": f"メールは {EMAIL}、電話は {PHONE}", "category": "fact"})
    # THEN the turn's result is the value as given (the reply may show the person their own value)
    assert out.ok and out.result["content"] == f"メールは {EMAIL}、電話は {PHONE}"
    # AND the store keeps only the masked form, with the organisation's expiry
    [(memory_id, memory)] = docs(store, "memories").items()
    assert memory["content"] == "メールは [EMAIL]、電話は [PHONE]"
    assert memory["expires_at"] == NOW + RETENTION
    # AND so does the receipt, its result included
    receipt = store.get(f"orgs/{ORG}/receipts/turn1-0-0")
    assert clear_values(receipt) == set() and receipt["result"]["memory_id"] == memory_id
    assert receipt["user_id"] == "u-suzuki"


def test_the_same_memory_twice_is_recognised_in_its_masked_form(kept, store):
    params = {"content": f"電話は {PHONE}", "category": "fact"}
    call(kept, "save_memory", params, call_id="t1-0-0")
    again = call(kept, "save_memory", params, call_id="t2-0-0")
    assert again.result["already_saved"] is True and len(docs(store, "memories")) == 1


def test_a_replayed_call_returns_the_stored_masked_result_never_a_clear_one(kept, store):
    params = {"content": f"カードは {CARD}", "category": "fact"}
    first = call(kept, "save_memory", params)
    replay = call(kept, "save_memory", params)
    assert first.result["content"] == f"カードは {CARD}"
    assert replay.replayed and replay.result["content"] == "カードは [CARD]"


def test_a_store_task_is_masked_and_keeps_its_identifiers(kept, store):
    # WHEN a task carrying a phone number is created on the store backend
    out = call(kept, "chatwork_task_create", {"body": f"{PHONE} に折り返す", "assignee_name": "田中太郎"})
    assert out.ok and out.result["body"] == f"{PHONE} に折り返す"
    # THEN the task document keeps the masked body, its ids as they are, and an expiry
    [(task_id, task)] = docs(store, "tasks").items()
    assert task["body"] == "[PHONE] に折り返す"
    assert (task["assignee_id"], task["created_by"], task["room_id"]) == ("102", "u-suzuki", ROOM)
    assert task["marker"] and task_id == f"t-{task['marker']}"
    assert task["expires_at"] == NOW + RETENTION
    # AND the person's own task list shows the masked body (a reply turns it into words)
    listed = call(kept, "chatwork_task_search", {"assignee_name": "田中太郎"}, call_id="t2-0-0")
    assert [t["body"] for t in listed.result["tasks"]] == ["[PHONE] に折り返す"]


def test_a_directory_write_is_not_personal_data_and_gets_no_expiry(store, clock):
    boss = make_executor(store, clock=clock, retention=RETENTION)
    out = call(boss, "change_permission", {"target_user_name": "田中太郎", "new_level": 3}, user="u-boss")
    assert out.ok, out
    assert store.get(f"orgs/{ORG}/users/u-tanaka1")["level"] == 3
    assert "expires_at" not in store.get(f"orgs/{ORG}/users/u-tanaka1")


def test_a_chatwork_task_carries_the_real_value_to_chatwork_and_the_receipt_keeps_it_masked(store, clock):
    # GIVEN the ChatWork task backend
    api = ChatWorkTasksApp("t", accounts={102: "田中太郎", 101: "鈴木一郎"})
    client = ChatWorkClient("https://chatwork.test/v2", "t", transport=api.transport(), sleep=lambda _: None)
    cw = make_executor(store, clock=clock, tasks=ChatWorkTaskBackend(client), retention=RETENTION)
    # WHEN a task with a phone number is created
    out = call(cw, "chatwork_task_create", {"body": f"{PHONE} に電話", "assignee_name": "田中太郎"})
    # THEN ChatWork received the number as typed (the executor restored it for the handler)
    assert out.ok and PHONE in api.tasks(ROOM)[0]["body"]
    # AND our receipt keeps request and result masked; nothing else of it is in our store
    receipt = store.get(f"orgs/{ORG}/receipts/turn1-0-0")
    assert receipt["request"]["body"] == "[PHONE] に電話" and receipt["result"]["body"] == "[PHONE] に電話"
    assert clear_values(store.dump()) == set()
