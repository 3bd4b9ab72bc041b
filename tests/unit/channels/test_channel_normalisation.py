"""Normalisation of each provider's delivery to InboundMessage: ids, org, thread, reply
handle, mention clean-up, language and ``addressed``."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from shared_lib.channels import ChannelSecrets, IngressConfig, chatwork, handle_webhook, http, line, slack
from shared_lib.channels.chatwork import strip_addressing
from shared_lib.channels.slack import clean_text
from shared_lib.turn.inbound import InboundMessage

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)
SENT_AT = int(NOW.timestamp())  # the provider's (signed) event time
LOCAL = ChannelSecrets.local_defaults()
CONFIG = IngressConfig.model_validate(
    {
        "bots": {"chatwork_account_id": "9000001", "slack_user_id": "UBOT"},
        "orgs": {
            "chatwork_rooms": {"100": "acme"},
            "line_destinations": {"Ubot": "acme"},
            "slack_teams": {"T1": "acme"},
        },
        "answer_only_when_addressed": False,
    }
)


def only_message(channel: str, payload: dict[str, Any], config: IngressConfig = CONFIG, headers=None):
    body = json.dumps(payload, ensure_ascii=False).encode()
    stamp = str(int(NOW.timestamp()))
    secret = LOCAL.webhook_secrets(channel)[0]
    signed = {
        "chatwork": lambda: {"X-ChatWorkWebhookSignature": chatwork.sign(secret, body)},
        "line": lambda: {"X-Line-Signature": line.sign(secret, body)},
        "slack": lambda: {
            "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": slack.sign(secret, stamp, body),
        },
        "http": lambda: {"X-Charter-Timestamp": stamp, "X-Charter-Signature": http.sign(secret, stamp, body)},
    }[channel]()
    signed["Content-Type"] = "application/json"
    outcome = handle_webhook(
        channel,
        "POST",
        signed | (headers or {}),
        {},
        body,
        secrets=LOCAL,
        config=config,
        now=NOW,
        resolve=lambda _host, _port: ["93.184.216.34"],  # a public address; no DNS in unit tests
    )
    assert outcome.status == 200, outcome.body
    assert len(outcome.messages) == 1, outcome.ignored
    return outcome.messages[0]


# ------------------------------------------------------------------------- ChatWork


@pytest.mark.parametrize(
    ("body", "text", "ids"),
    [
        ("[To:9000001]Charterさん\n明日の会議は何時?", "明日の会議は何時?", {"9000001"}),
        ("[To:9000001]Charter Bot\nwhat time is it", "what time is it", {"9000001"}),
        ("[To:9000001][To:42]山田 太郎さん\n資料を共有して", "資料を共有して", {"9000001", "42"}),
        ("[To:9000001]Charterさん 今日の天気は?", "今日の天気は?", {"9000001"}),
        ("[rp aid=9000001 to=100-555]Charterさん\nありがとう", "ありがとう", {"9000001"}),
        ("[返信 aid=42 to=100-555]山田さん\n了解です", "了解です", {"42"}),
        ("[toall]\n全員確認お願いします", "全員確認お願いします", set()),
        ("[To:9000001] hello there", "hello there", {"9000001"}),
        ("[To:9000001]明日の件、様子を見ます", "明日の件、様子を見ます", {"9000001"}),
        (
            "[info][title]週報[/title]今週の進捗です[/info]",
            "[info][title]週報[/title]今週の進捗です[/info]",
            set(),
        ),
        ("前置き [To:9000001] 途中の宛先", "前置き  途中の宛先", {"9000001"}),
    ],
)
def test_chatwork_addressing_tags_and_names_are_removed(body, text, ids):
    assert strip_addressing(body) == (text, ids)


def test_chatwork_mention_to_me_normalises_every_field():
    # GIVEN an account-webhook mention in a mapped room
    payload = {
        "webhook_setting_id": "5",
        "webhook_event_type": "mention_to_me",
        "webhook_event_time": SENT_AT,
        "webhook_event": {
            "from_account_id": 123,
            "to_account_id": 9000001,
            "room_id": 100,
            "message_id": "8888",
            "body": "[To:9000001]Charterさん\n経費精算の締め日は?",
            "send_time": 1,
            "update_time": 0,
        },
    }
    msg = only_message("chatwork", payload)
    # THEN ids are strings, org comes from the room, the text is clean and the message is addressed
    assert (msg.channel, msg.org_id, msg.room_id, msg.user_id, msg.message_id) == (
        "chatwork",
        "acme",
        "100",
        "123",
        "8888",
    )
    assert msg.event_id == "mention_to_me:8888"
    assert msg.text == "経費精算の締め日は?"
    assert (msg.language, msg.addressed, msg.is_redelivery, msg.thread_id) == ("ja", True, False, None)
    assert msg.reply_handle == {"room_id": "100", "account_id": "123", "message_id": "8888"}
    assert msg.received_at == NOW


def test_chatwork_room_message_is_addressed_only_with_a_to_tag_for_the_bot():
    base = {"webhook_setting_id": "5", "webhook_event_type": "message_created", "webhook_event_time": SENT_AT}
    event = {"account_id": 123, "room_id": 999, "message_id": "1", "send_time": 1, "update_time": 0}
    to_bot = only_message(
        "chatwork", base | {"webhook_event": event | {"body": "[To:9000001]Charterさん\nhi"}}
    )
    to_other = only_message("chatwork", base | {"webhook_event": event | {"body": "[To:42]Bobさん\nhi"}})
    assert (to_bot.addressed, to_other.addressed) == (True, False)
    assert to_bot.org_id == "default"  # unmapped room


def test_chatwork_account_mapping_gives_the_org_and_marks_the_bot():
    config = IngressConfig.model_validate({"orgs": {"chatwork_accounts": {"777": "globex"}}})
    payload = {
        "webhook_event_type": "message_created",
        "webhook_event": {"account_id": 1, "room_id": 5, "message_id": "2", "body": "[To:777]Botさん\nhi"},
    }
    msg = only_message("chatwork", payload, config)
    assert msg.addressed is True
    mention = {
        "webhook_event_type": "mention_to_me",
        "webhook_event": {
            "from_account_id": 1,
            "to_account_id": 777,
            "room_id": 5,
            "message_id": "3",
            "body": "[To:777]Botさん\nhi",
        },
    }
    assert only_message("chatwork", mention, config).org_id == "globex"


# ------------------------------------------------------------------------- LINE


def line_event(source: dict[str, Any], message: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "destination": "Ubot",
        "events": [
            {
                "type": "message",
                "mode": "active",
                "timestamp": SENT_AT * 1000,
                "webhookEventId": "01HZEVENT",
                "deliveryContext": {"isRedelivery": True},
                "replyToken": "reply-token-1",
                "source": source,
                "message": message,
            }
            | extra
        ],
    }


def test_line_one_to_one_chat_is_addressed_and_pushes_to_the_user():
    msg = only_message(
        "line",
        line_event(
            {"type": "user", "userId": "Ualice"}, {"type": "text", "id": "4711", "text": "What's on today?"}
        ),
    )
    assert (msg.org_id, msg.room_id, msg.user_id, msg.message_id, msg.event_id) == (
        "acme",
        "Ualice",
        "Ualice",
        "4711",
        "01HZEVENT",
    )
    assert (msg.addressed, msg.is_redelivery, msg.language) == (True, True, "en")
    assert msg.reply_handle == {"reply_token": "reply-token-1", "user_id": "Ualice", "to": "Ualice"}


def test_line_group_mention_of_the_bot_is_removed_with_utf16_offsets():
    # GIVEN a group message "🎉@Charter 予定は?" — the emoji is 2 UTF-16 units, 1 code point
    text = "🎉@Charter 予定は?"
    mention = {"mentionees": [{"index": 2, "length": 8, "type": "user", "isSelf": True}]}
    msg = only_message(
        "line",
        line_event(
            {"type": "group", "groupId": "Cgroup", "userId": "Ualice"},
            {"type": "text", "id": "1", "text": text, "mention": mention},
        ),
    )
    # THEN the bot's mention is gone, the group is the room and the push target
    assert msg.text == "🎉 予定は?"
    assert msg.addressed is True
    assert msg.room_id == "Cgroup"
    assert msg.reply_handle == {
        "reply_token": "reply-token-1",
        "user_id": "Ualice",
        "to": "Cgroup",
        "group_id": "Cgroup",
    }


def test_line_mention_of_someone_else_stays_and_is_not_addressed():
    mention = {"mentionees": [{"index": 0, "length": 4, "type": "user", "userId": "Ubob"}]}
    msg = only_message(
        "line",
        line_event(
            {"type": "room", "roomId": "Rroom", "userId": "Ualice"},
            {"type": "text", "id": "1", "text": "@Bob おはよう", "mention": mention},
        ),
    )
    assert (msg.text, msg.addressed, msg.room_id) == ("@Bob おはよう", False, "Rroom")
    assert msg.reply_handle["room_id"] == "Rroom"


def test_line_mention_found_by_bot_user_id_with_code_point_offsets():
    config = IngressConfig(bots={"line_user_id": "Ucharter"}, answer_only_when_addressed=False)
    mention = {"mentionees": [{"index": 3, "length": 8, "type": "user", "userId": "Ucharter"}]}
    msg = only_message(
        "line",
        line_event(
            {"type": "group", "groupId": "C1", "userId": "Ualice"},
            {"type": "text", "id": "1", "text": "ねえ @Charter 教えて", "mention": mention},
        ),
        config,
    )
    assert (msg.text, msg.addressed) == ("ねえ  教えて", True)


# ------------------------------------------------------------------------- Slack


@pytest.mark.parametrize(
    ("raw", "text", "mentioned"),
    [
        ("<@UBOT> 今日の予定は?", "今日の予定は?", True),
        ("<@UBOT|charter> hi", "hi", True),
        ("ask <@U2|bob> and <@U3>", "ask @bob and @U3", False),
        ("see <#C1|general> <!here> <!subteam^S1|@devs>", "see #general @here @devs", False),
        (
            "docs <https://example.com|here> and <https://a.b>",
            "docs here (https://example.com) and https://a.b",
            False,
        ),
        ("a &lt;b&gt; &amp; c", "a <b> & c", False),
    ],
)
def test_slack_markup_is_resolved(raw, text, mentioned):
    assert clean_text(raw, {"UBOT"}) == (text, mentioned)


def test_slack_app_mention_in_a_thread_normalises_every_field():
    payload = {
        "type": "event_callback",
        "team_id": "T1",
        "event_id": "Ev42",
        "event": {
            "type": "app_mention",
            "user": "UALICE",
            "text": "<@UBOT> summary please",
            "ts": "1700.0002",
            "thread_ts": "1700.0001",
            "channel": "C9",
            "channel_type": "channel",
        },
    }
    msg = only_message(
        "slack", payload, headers={"X-Slack-Retry-Num": "2", "X-Slack-Retry-Reason": "http_timeout"}
    )
    assert (msg.org_id, msg.room_id, msg.thread_id, msg.user_id, msg.message_id, msg.event_id) == (
        "acme",
        "C9",
        "1700.0001",
        "UALICE",
        "1700.0002",
        "Ev42",
    )
    assert (msg.text, msg.addressed, msg.is_redelivery, msg.language) == ("summary please", True, True, "en")
    assert msg.reply_handle == {"channel": "C9", "thread_ts": "1700.0001"}


def test_slack_direct_message_is_addressed_and_answered_inline():
    payload = {
        "type": "event_callback",
        "team_id": "T-unknown",
        "event_id": "Ev1",
        "event": {
            "type": "message",
            "user": "UALICE",
            "text": "こんにちは",
            "ts": "1.1",
            "channel": "D1",
            "channel_type": "im",
        },
    }
    msg = only_message("slack", payload, IngressConfig())
    assert (msg.addressed, msg.org_id, msg.thread_id) == (True, "default", None)
    assert msg.reply_handle == {"channel": "D1"}


def test_slack_channel_message_starts_a_thread_and_bot_id_comes_from_authorizations():
    # GIVEN no configured bot id, but the payload's authorizations name the bot
    config = IngressConfig(slack_app_mention_subscribed=False)
    payload = {
        "type": "event_callback",
        "team_id": "T1",
        "event_id": "Ev1",
        "authorizations": [{"user_id": "UAPP", "is_bot": True}],
        "event": {
            "type": "message",
            "user": "UALICE",
            "text": "<@UAPP> hi",
            "ts": "5.5",
            "channel": "C1",
            "channel_type": "channel",
        },
    }
    msg = only_message("slack", payload, config)
    assert (msg.text, msg.addressed) == ("hi", True)
    assert msg.reply_handle == {"channel": "C1", "thread_ts": "5.5"}


def test_slack_thread_broadcast_is_a_user_message():
    payload = {
        "type": "event_callback",
        "team_id": "T1",
        "event_id": "Ev1",
        "event": {
            "type": "message",
            "subtype": "thread_broadcast",
            "user": "UALICE",
            "text": "fyi",
            "ts": "2.2",
            "thread_ts": "1.1",
            "channel": "C1",
            "channel_type": "channel",
        },
    }
    assert only_message("slack", payload).text == "fyi"


# ------------------------------------------------------------------------- plain HTTP


def test_http_message_normalises_every_field():
    payload = {
        "event_id": "evt-1",
        "org_id": "acme",
        "room_id": "room-7",
        "user_id": "u-1",
        "user_name": "Alice",
        "text": "Hello there",
        "thread_id": "t-1",
        "callback_url": "https://hooks.example.com/reply",
    }
    msg = only_message("http", payload)
    assert (msg.org_id, msg.room_id, msg.user_id, msg.user_name, msg.thread_id) == (
        "acme",
        "room-7",
        "u-1",
        "Alice",
        "t-1",
    )
    assert (msg.message_id, msg.event_id, msg.addressed, msg.language) == ("evt-1", "evt-1", True, "en")
    assert msg.reply_handle == {"callback_url": "https://hooks.example.com/reply"}


def test_http_message_id_is_kept_when_given():
    payload = {
        "event_id": "e",
        "org_id": "acme",
        "room_id": "r",
        "user_id": "u",
        "text": "漢字",
        "message_id": "m",
    }
    msg = only_message("http", payload)
    assert (msg.message_id, msg.language, msg.reply_handle) == ("m", "ja", {})


def test_long_provider_text_is_clipped_to_the_inbound_limit():
    payload = {
        "type": "event_callback",
        "team_id": "T1",
        "event_id": "Ev1",
        "event": {"type": "app_mention", "user": "U1", "text": "a" * 9000, "ts": "1.1", "channel": "C1"},
    }
    assert len(only_message("slack", payload).text) == 8000


# ------------------------------------------------------------------------- invisible characters

# A right-to-left override shows 「注文をキャンセル」 reversed; zero-width characters split a value.
HIDDEN = "\u202e承認しない\u202c で\u2066お願い\u2069、電話は０９０\u200b－１２３４\u200c－５６７８\ufeffです👨\u200d👩\u200d👧"
SHOWN = "承認しない でお願い、電話は０９０－１２３４－５６７８です👨\u200d👩\u200d👧"


def test_bidi_overrides_and_zero_width_characters_never_reach_the_message_of_any_channel():
    # GIVEN the same hidden text in a plain-HTTP body (with a display name) and a ChatWork mention
    http_payload = {"event_id": "e", "org_id": "acme", "room_id": "r", "user_id": "u", "text": HIDDEN}
    http_payload["user_name"] = "\u202e山田\u200b太郎"
    chatwork_payload = {
        "webhook_setting_id": "5",
        "webhook_event_type": "mention_to_me",
        "webhook_event_time": SENT_AT,
        "webhook_event": {
            "from_account_id": 123,
            "to_account_id": 9000001,
            "room_id": 100,
            "message_id": "8889",
            "body": f"[To:9000001]Charterさん\n{HIDDEN}",
            "send_time": 1,
            "update_time": 0,
        },
    }
    # WHEN each is normalised
    from_http, from_chatwork = only_message("http", http_payload), only_message("chatwork", chatwork_payload)
    # THEN the text keeps every visible character, the family emoji its joiners, and nothing else
    assert from_http.text == from_chatwork.text == SHOWN
    assert from_http.user_name == "山田太郎"


def test_a_message_built_outside_a_channel_loses_them_too():
    # GIVEN a message built in process (the demo, the debounce's merged message)
    msg = InboundMessage(
        channel="http",
        org_id="acme",
        room_id="r",
        user_id="u",
        text=HIDDEN,
        message_id="m",
        event_id="m",
        received_at=NOW,
    )
    # THEN its text is what a person sees
    assert msg.text == SHOWN
