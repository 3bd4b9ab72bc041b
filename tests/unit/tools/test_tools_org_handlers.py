"""Organisation tools: announcements (outbox), the staff list, change_permission's own checks."""

from __future__ import annotations

from tool_fakes import call, docs


def test_given_recipients_all_when_announced_then_one_outbox_entry_for_everyone(ex, store):
    out = call(ex, "announce", {"message": "明日の全体会議は10時から", "recipients": "all"})
    assert out.ok and out.result["recipient_count"] == 5
    (entry,) = docs(store, "announcements").values()
    assert entry["status"] == "queued" and entry["by"] == "u-suzuki" and len(entry["recipients"]) == 5


def test_given_named_recipients_when_announced_then_resolved_and_deduplicated(ex, store):
    out = call(ex, "announce", {"message": "締切変更", "recipients": ["山田さん", "山田次郎", "田中花子"]})
    assert out.ok and out.result["recipients"] == ["山田次郎", "田中花子"]


def test_given_an_ambiguous_recipient_when_announced_then_a_clarification_and_nothing_queued(ex, store):
    out = call(ex, "announce", {"message": "締切変更", "recipients": ["田中"]})
    assert out.result["clarification"] and out.result["field"] == "recipients"
    assert docs(store, "announcements") == {}


def test_given_send_to_all_when_executed_then_every_person_is_a_recipient(ex, store):
    out = call(ex, "send_to_all", {"message": "年末年始の休業日のお知らせ"})
    assert out.ok and out.result["recipient_count"] == 5


def test_given_the_directory_when_all_users_are_viewed_then_names_departments_levels(ex):
    out = call(ex, "view_all_users", {})
    assert out.result["count"] == 5
    assert {"name": "カズ", "department_id": "d-hq", "level": 6} in out.result["users"]


def test_given_change_permission_when_the_sender_grants_above_their_level_then_refused(ex, store):
    out = call(ex, "change_permission", {"target_user_name": "田中太郎", "new_level": 4}, user="u-yamada")
    assert out.ok and out.result == {"user": "田中太郎", "old_level": 2, "new_level": 4}
    assert store.get("orgs/acme/users/u-tanaka1")["level"] == 4
    too_high = call(
        ex,
        "change_permission",
        {"target_user_name": "田中花子", "new_level": 5},
        user="u-yamada",
        call_id="c2",
    )
    assert too_high.error_code == "validation_error" and too_high.result["field"] == "new_level"
    own = call(
        ex, "change_permission", {"target_user_name": "自分", "new_level": 1}, user="u-yamada", call_id="c3"
    )
    assert own.error_code == "validation_error"
    assert len(docs(store, "permission_changes")) == 1
