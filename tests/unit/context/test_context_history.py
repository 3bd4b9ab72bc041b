"""Conversation memory: idempotent appends, newest-last order, isolation."""

from __future__ import annotations

from datetime import timedelta

from context_fakes import NOW, ORG, OTHER_ORG

from shared_lib.context.history import (
    append_message,
    conversation_path,
    conversation_summary,
    history_path,
    recent_messages,
)


def test_given_the_same_message_appended_twice_then_it_is_stored_once(memory_store):
    for _ in range(2):
        append_message(memory_store, ORG, "acme/r/u", "T1-0-in", role="user", text="hi", at=NOW, user_id="u")
    assert len(memory_store.query(history_path(ORG, "acme/r/u"))) == 1


def test_given_messages_at_the_same_instant_then_the_turn_order_decides(memory_store):
    for turn in ("01A", "01B", "01C"):
        append_message(
            memory_store, ORG, "acme/r/u", f"{turn}-0-in", role="user", text=turn, at=NOW, user_id="u"
        )
        append_message(
            memory_store,
            ORG,
            "acme/r/u",
            f"{turn}-0-out",
            role="assistant",
            text=turn + "!",
            at=NOW,
            user_id="u",
        )
    assert [m["text"] for m in recent_messages(memory_store, ORG, "acme/r/u", 4)] == [
        "01B",
        "01B!",
        "01C",
        "01C!",
    ]


def test_given_more_than_the_limit_then_the_newest_are_kept_oldest_first(memory_store):
    for i in range(15):
        append_message(
            memory_store,
            ORG,
            "acme/r/u",
            f"T{i:02d}-0-in",
            role="user",
            text=str(i),
            at=NOW + timedelta(seconds=i),
            user_id="u",
        )
    assert [m["text"] for m in recent_messages(memory_store, ORG, "acme/r/u", 10)] == [
        str(i) for i in range(5, 15)
    ]


def test_given_two_organisations_or_conversations_then_histories_are_separate(memory_store):
    append_message(memory_store, ORG, "acme/r/u", "T1-0-in", role="user", text="acme", at=NOW, user_id="u")
    append_message(
        memory_store, OTHER_ORG, "globex/r/u", "T1-0-in", role="user", text="globex", at=NOW, user_id="u"
    )
    append_message(
        memory_store, ORG, "acme/r/other", "T2-0-in", role="user", text="other", at=NOW, user_id="x"
    )
    assert [m["text"] for m in recent_messages(memory_store, ORG, "acme/r/u", 10)] == ["acme"]
    assert [m["text"] for m in recent_messages(memory_store, OTHER_ORG, "globex/r/u", 10)] == ["globex"]
    assert history_path(ORG, "acme/r/u").startswith("orgs/acme/")


def test_given_a_message_with_personal_data_then_the_history_keeps_it_masked_until_its_expiry(memory_store):
    # WHEN a message with an e-mail address is appended with the organisation's expiry
    expires = NOW + timedelta(days=30)
    append_message(
        memory_store,
        ORG,
        "acme/r/u",
        "T1-0-in",
        role="user",
        text="連絡は taro@example.com まで",
        at=NOW,
        user_id="u",
        room_id="r",
        expires_at=expires,
    )
    # THEN the history holds the masked text, and both documents expire
    [message] = recent_messages(memory_store, ORG, "acme/r/u", 5)
    assert message["text"] == "連絡は [EMAIL] まで" and message["expires_at"] == expires
    conversation = memory_store.get(conversation_path(ORG, "acme/r/u"))
    assert conversation == {
        "org_id": ORG,  # how the memory jobs find the organisations with recent conversations
        "user_id": "u",
        "room_id": "r",
        "conversation_key": "acme/r/u",
        "at": NOW,
        "expires_at": expires,
    }


def test_given_a_summary_then_appending_keeps_it(memory_store):
    memory_store.set(conversation_path(ORG, "acme/r/u"), {"summary": "前回の要約"})
    append_message(memory_store, ORG, "acme/r/u", "T1-0-in", role="user", text="hi", at=NOW, user_id="u")
    assert conversation_summary(memory_store, ORG, "acme/r/u") == "前回の要約"
