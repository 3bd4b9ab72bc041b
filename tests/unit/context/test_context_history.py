"""Conversation memory: idempotent appends, newest-last order, isolation."""

from __future__ import annotations

from datetime import timedelta

from context_fakes import NOW, ORG, OTHER_ORG

from shared_lib.context.history import append_message, history_path, recent_messages


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
