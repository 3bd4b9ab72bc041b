"""handle_webhook's gatekeeping: status codes in order, ignored events, dedupe keys."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from infra.webhook_sender import build_request
from shared_lib.channels import (
    ChannelSecrets,
    IngressConfig,
    chatwork,
    dedupe_key,
    handle_webhook,
    http,
    line,
    slack,
)

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)
SENT_AT = int(NOW.timestamp())  # the provider's (signed) event time
LOCAL = ChannelSecrets.local_defaults()
CHANNELS = ["chatwork", "line", "slack", "http"]
BOT = {"chatwork": "9000001", "slack": "UBOT", "line": "Ubot"}


def sign(channel: str, body: bytes) -> dict[str, str]:
    """Headers that make ``body`` a validly signed delivery of ``channel``."""
    stamp = str(int(NOW.timestamp()))
    secret = LOCAL.webhook_secrets(channel)[0]
    if channel == "chatwork":
        return {"X-ChatWorkWebhookSignature": chatwork.sign(secret, body)}
    if channel == "line":
        return {"X-Line-Signature": line.sign(secret, body)}
    if channel == "slack":
        return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": slack.sign(secret, stamp, body)}
    return {"X-Charter-Timestamp": stamp, "X-Charter-Signature": http.sign(secret, stamp, body)}


def deliver(
    channel: str,
    payload: Any,
    *,
    method: str = "POST",
    config: IngressConfig | None = None,
    extra_headers: dict[str, str] | None = None,
):
    body = payload if isinstance(payload, bytes) else json.dumps(payload, ensure_ascii=False).encode()
    headers = {"Content-Type": "application/json"} | sign(channel, body) | (extra_headers or {})
    return handle_webhook(
        channel, method, headers, {}, body, secrets=LOCAL, config=config or IngressConfig(), now=NOW
    )


def refused(outcome, status: int, code: str) -> None:
    assert (outcome.status, outcome.rejection) == (status, code), outcome.body
    assert outcome.messages == []


# ------------------------------------------------------------------------- status codes


def test_unknown_channel_is_404():
    # GIVEN a channel we do not serve WHEN a delivery arrives THEN 404, nothing published
    for channel in ("teams", "", "Slack", "slack/../http"):
        outcome = handle_webhook(
            channel, "POST", {}, {}, b"{}", secrets=LOCAL, config=IngressConfig(), now=NOW
        )
        refused(outcome, 404, "unknown_channel")


@pytest.mark.parametrize("channel", CHANNELS)
@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "HEAD"])
def test_method_other_than_post_is_405(channel, method):
    # GIVEN an otherwise valid delivery WHEN it uses another method THEN 405 with Allow: POST
    _, headers, body = build_request(channel, "hello", secrets=LOCAL, now=NOW)
    outcome = handle_webhook(
        channel, method, headers, {}, body, secrets=LOCAL, config=IngressConfig(), now=NOW
    )
    refused(outcome, 405, "method_not_allowed")
    assert outcome.headers == {"Allow": "POST"}


@pytest.mark.parametrize("channel", CHANNELS)
def test_oversize_body_is_413_even_when_signed(channel):
    # GIVEN a validly signed body one byte over the limit
    config = IngressConfig(max_body_bytes=1024)
    _, headers, body = build_request(channel, "x" * 2000, secrets=LOCAL, now=NOW)
    # WHEN handled THEN 413 before anything else is looked at
    outcome = handle_webhook(channel, "POST", headers, {}, body, secrets=LOCAL, config=config, now=NOW)
    refused(outcome, 413, "body_too_large")


def test_declared_content_length_is_checked_before_the_body():
    # GIVEN a small body whose Content-Length claims more than the limit
    outcome = handle_webhook(
        "slack",
        "POST",
        {"Content-Length": str(300 * 1024)},
        {},
        b"{}",
        secrets=LOCAL,
        config=IngressConfig(),
        now=NOW,
    )
    # THEN 413, not 401: the size check comes first
    refused(outcome, 413, "body_too_large")


def test_body_at_exactly_the_limit_passes_the_size_check():
    body = b" " * 100
    outcome = handle_webhook(
        "line",
        "POST",
        {"Content-Length": "100", "Content-Type": "application/json"},
        {},
        body,
        secrets=LOCAL,
        config=IngressConfig(max_body_bytes=100),
        now=NOW,
    )
    assert outcome.status == 401  # reached verification


@pytest.mark.parametrize("channel", CHANNELS)
@pytest.mark.parametrize("body", [b"not json", b'{"a": ', b"\xff\xfe\x00garbage", b"[" * 5000 + b"]" * 5000])
def test_malformed_json_is_400(channel, body):
    # GIVEN a signed body that is not JSON WHEN handled THEN 400 malformed_json
    refused(deliver(channel, body), 400, "malformed_json")


@pytest.mark.parametrize("channel", CHANNELS)
@pytest.mark.parametrize("payload", [[1, 2], "text", 3, None])
def test_json_that_is_not_an_object_is_400(channel, payload):
    refused(deliver(channel, payload), 400, "not_a_json_object")


@pytest.mark.parametrize(
    ("channel", "payload", "code"),
    [
        ("chatwork", {"webhook_event_type": "message_created"}, "invalid_chatwork_payload"),
        (
            "chatwork",
            {
                "webhook_event_type": "message_created",
                "webhook_event": {"message_id": "1", "room_id": 1, "body": "x"},
            },
            "invalid_chatwork_payload",
        ),
        (
            "chatwork",
            {
                "webhook_event_type": "message_created",
                "webhook_event": {"message_id": True, "room_id": 1, "account_id": 2, "body": "x"},
            },
            "invalid_chatwork_payload",
        ),
        ("line", {"events": []}, "invalid_line_payload"),
        ("line", {"destination": "U1", "events": [{"type": "message"}]}, "invalid_line_payload"),
        (
            "line",
            {"destination": "U1", "events": [{"type": "message", "webhookEventId": "e"}]},
            "invalid_line_payload",
        ),
        ("slack", {"event": {}}, "invalid_slack_payload"),
        ("slack", {"type": "url_verification"}, "invalid_slack_payload"),
        ("slack", {"type": "event_callback", "event": {"type": "message"}}, "invalid_slack_payload"),
        (
            "slack",
            {
                "type": "event_callback",
                "event_id": "Ev1",
                "event": {"type": "message", "user": "U1", "text": "hi"},
            },
            "invalid_slack_payload",
        ),
        ("http", {"text": "hi"}, "invalid_http_payload"),
        (
            "http",
            {"event_id": "e", "org_id": "acme", "room_id": "r", "user_id": "u", "text": "hi", "extra": 1},
            "invalid_http_payload",
        ),
        (
            "http",
            {"event_id": "e", "org_id": "../etc", "room_id": "r", "user_id": "u", "text": "hi"},
            "invalid_http_payload",
        ),
        (
            "http",
            {"event_id": "e", "org_id": "acme", "room_id": "r", "user_id": "u", "text": ""},
            "invalid_http_payload",
        ),
        (
            "http",
            {"event_id": "e", "org_id": "acme", "room_id": "r", "user_id": "u", "text": "x" * 8001},
            "invalid_http_payload",
        ),
        (
            "http",
            {
                "event_id": "e",
                "org_id": "acme",
                "room_id": "r",
                "user_id": "u",
                "text": "hi",
                "addressed": "yes",
            },
            "invalid_http_payload",
        ),
        (
            "http",
            {
                "event_id": "e",
                "org_id": "acme",
                "room_id": "r",
                "user_id": "u",
                "text": "hi",
                "callback_url": "file:///etc/passwd",
            },
            "invalid_http_payload",
        ),
    ],
)
def test_wrong_schema_is_400_with_a_reason(channel, payload, code):
    # GIVEN a signed JSON object that is not the provider's schema
    outcome = deliver(channel, payload)
    # THEN 400 with the code and the offending fields, nothing published
    refused(outcome, 400, code)
    assert outcome.body["error"] == code
    assert outcome.body["errors"] and all({"loc", "msg"} <= set(e) for e in outcome.body["errors"])


def test_an_id_too_long_for_us_is_a_schema_error_not_a_crash():
    payload = {
        "type": "event_callback",
        "event_id": "Ev1",
        "team_id": "T1",
        "event": {"type": "app_mention", "user": "U" * 300, "text": "hi", "ts": "1.2", "channel": "C1"},
    }
    refused(deliver("slack", payload), 400, "invalid_slack_payload")


# ------------------------------------------------------------------------- ignored events


def chatwork_event(kind: str, body: str, sender: str = "200001", **extra: Any) -> dict[str, Any]:
    event = {"message_id": "m1", "room_id": 100, "body": body, "send_time": 1, "update_time": 0}
    event |= (
        {"from_account_id": sender, "to_account_id": BOT["chatwork"]}
        if kind == "mention_to_me"
        else {"account_id": sender}
    )
    return {
        "webhook_setting_id": "1",
        "webhook_event_type": kind,
        "webhook_event_time": SENT_AT,
        "webhook_event": event | extra,
    }


def line_payload(*events: dict[str, Any]) -> dict[str, Any]:
    return {"destination": BOT["line"], "events": list(events)}


def line_event(**fields: Any) -> dict[str, Any]:
    event = {
        "type": "message",
        "mode": "active",
        "timestamp": SENT_AT * 1000,
        "webhookEventId": "01EV",
        "deliveryContext": {"isRedelivery": False},
        "replyToken": "rt",
        "source": {"type": "user", "userId": "Ualice"},
        "message": {"type": "text", "id": "1", "text": "hi"},
    }
    return event | fields


def slack_payload(**event: Any) -> dict[str, Any]:
    base = {
        "type": "message",
        "user": "UALICE",
        "text": "hello",
        "ts": "1700000000.000100",
        "channel": "C1",
        "channel_type": "channel",
    }
    return {
        "type": "event_callback",
        "team_id": "T1",
        "event_id": "Ev1",
        "event": base | event,
        "authorizations": [{"user_id": BOT["slack"], "is_bot": True}],
    }


CONFIG = IngressConfig(bots={"chatwork_account_id": BOT["chatwork"], "slack_user_id": BOT["slack"]})


@pytest.mark.parametrize(
    ("channel", "payload", "reason"),
    [
        ("chatwork", chatwork_event("message_created", "hi", sender=BOT["chatwork"]), "own_message"),
        ("chatwork", chatwork_event("mention_to_me", "[To:9000001]x", sender=BOT["chatwork"]), "own_message"),
        ("chatwork", chatwork_event("message_updated", "edited"), "edited_message"),
        ("chatwork", chatwork_event("room_joined", "hi"), "unsupported_event:room_joined"),
        ("chatwork", chatwork_event("message_created", "ただの雑談"), "not_addressed"),
        ("chatwork", chatwork_event("mention_to_me", "[To:9000001]Charterさん"), "empty_text"),
        ("line", line_payload(), "no_events"),
        ("line", line_payload(line_event(type="follow", message=None)), "non_message_event:follow"),
        (
            "line",
            line_payload(line_event(type="join", source={"type": "group", "groupId": "C1"}, message=None)),
            "non_message_event:join",
        ),
        ("line", line_payload(line_event(message={"type": "sticker", "id": "1"})), "non_text_message"),
        ("line", line_payload(line_event(message={"type": "image", "id": "1"})), "non_text_message"),
        ("line", line_payload(line_event(mode="standby")), "standby_mode"),
        (
            "line",
            line_payload(line_event(source={"type": "group", "groupId": "C1", "userId": "Ualice"})),
            "not_addressed",
        ),
        ("line", line_payload(line_event(source={"type": "group", "groupId": "C1"})), "unknown_sender"),
        ("slack", slack_payload(bot_id="B1"), "bot_message"),
        ("slack", slack_payload(subtype="message_changed"), "subtype:message_changed"),
        ("slack", slack_payload(subtype="channel_join"), "subtype:channel_join"),
        ("slack", slack_payload(user=BOT["slack"]), "own_message"),
        ("slack", slack_payload(type="reaction_added"), "unsupported_event:reaction_added"),
        ("slack", slack_payload(text="<@UBOT> hi"), "duplicate_of_app_mention"),
        ("slack", slack_payload(text="just chatting"), "not_addressed"),
        ("slack", slack_payload(type="app_mention", text="<@UBOT>"), "empty_text"),
        ("slack", {"type": "app_rate_limited", "team_id": "T1"}, "unsupported_envelope:app_rate_limited"),
        (
            "http",
            {
                "event_id": "e",
                "org_id": "acme",
                "room_id": "r",
                "user_id": "u",
                "text": "hi",
                "addressed": False,
            },
            "not_addressed",
        ),
        (
            "http",
            {"event_id": "e", "org_id": "acme", "room_id": "r", "user_id": "u", "text": "   "},
            "empty_text",
        ),
    ],
)
def test_events_the_product_ignores_are_200_with_nothing(channel, payload, reason):
    # GIVEN a valid, signed delivery of an event the product does not answer
    outcome = deliver(channel, payload, config=CONFIG)
    # THEN 200 (so the provider does not retry), nothing to publish, and why
    assert outcome.status == 200, outcome.body
    assert outcome.messages == []
    assert outcome.ignored == [reason]
    assert outcome.rejection is None


@pytest.mark.parametrize(
    ("channel", "payload", "reason"),
    [
        (
            "slack",
            {
                "type": "event_callback",
                "team_id": "T1",
                "event_id": "Ev9",
                "event": {"type": "user_change", "user": {"id": "U1", "name": "alice"}},
            },
            "unsupported_event:user_change",
        ),
        (
            "slack",
            {
                "type": "event_callback",
                "team_id": "T1",
                "event_id": "Ev9",
                "event": {"type": "channel_created", "channel": {"id": "C1", "name": "x"}},
            },
            "unsupported_event:channel_created",
        ),
        (
            "line",
            line_payload(
                line_event(
                    type="memberJoined",
                    source={"type": "future-type", "x": 1},
                    message=None,
                    joined={"members": []},
                )
            ),
            "non_message_event:memberJoined",
        ),
        (
            "chatwork",
            {"webhook_event_type": "room_created", "webhook_event": {"room": {"id": 1}}},
            "unsupported_event:room_created",
        ),
    ],
)
def test_events_we_do_not_answer_are_acknowledged_whatever_their_shape(channel, payload, reason):
    # GIVEN a valid event whose fields differ from a message's (objects where ids would be)
    outcome = deliver(channel, payload, config=CONFIG)
    # THEN it is acknowledged (a 400 would make the provider retry and eventually disable us)
    assert (outcome.status, outcome.ignored, outcome.messages) == (200, [reason], [])


def test_room_override_answers_unaddressed_messages_in_that_room():
    # GIVEN a room where the bot answers everything
    config = IngressConfig(room_overrides={"chatwork": {"100": False}})
    # WHEN an unaddressed message arrives there THEN it is published, marked unaddressed
    outcome = deliver("chatwork", chatwork_event("message_created", "雑談です"), config=config)
    assert [m.addressed for m in outcome.messages] == [False]
    # AND in another room it is still ignored
    other = deliver("chatwork", chatwork_event("message_created", "雑談です", room_id=101), config=config)
    assert other.ignored == ["not_addressed"]


def test_global_setting_can_answer_everything():
    config = IngressConfig(answer_only_when_addressed=False)
    assert len(deliver("slack", slack_payload(text="just chatting"), config=config).messages) == 1


def test_line_batch_keeps_valid_events_and_reports_ignored_ones():
    # GIVEN one LINE delivery with a text message, a follow event and a sticker
    payload = line_payload(
        line_event(webhookEventId="A"),
        line_event(type="follow", message=None),
        line_event(webhookEventId="C", message={"type": "sticker", "id": "9"}),
    )
    outcome = deliver("line", payload)
    # THEN the text message is published and the other two are ignored
    assert [m.event_id for m in outcome.messages] == ["A"]
    assert outcome.ignored == ["non_message_event:follow", "non_text_message"]
    assert outcome.body == {"ok": True, "accepted": 1, "ignored": 2}


# ------------------------------------------------------------------------- dedupe keys


@pytest.mark.parametrize("channel", CHANNELS)
def test_duplicate_deliveries_have_the_same_dedupe_key(channel):
    # GIVEN the same provider event delivered twice (the second a retry)
    _, h1, b1 = build_request(channel, "hello", event_id="12345", org="acme", secrets=LOCAL, now=NOW)
    _, h2, b2 = build_request(
        channel, "hello", event_id="12345", org="acme", secrets=LOCAL, now=NOW, redelivery=True
    )
    first = handle_webhook(channel, "POST", h1, {}, b1, secrets=LOCAL, config=IngressConfig(), now=NOW)
    second = handle_webhook(channel, "POST", h2, {}, b2, secrets=LOCAL, config=IngressConfig(), now=NOW)
    # THEN both carry the same key, and another event a different one
    assert dedupe_key(first.messages[0]) == dedupe_key(second.messages[0])
    _, h3, b3 = build_request(channel, "hello", event_id="12346", org="acme", secrets=LOCAL, now=NOW)
    third = handle_webhook(channel, "POST", h3, {}, b3, secrets=LOCAL, config=IngressConfig(), now=NOW)
    assert dedupe_key(third.messages[0]) != dedupe_key(first.messages[0])


@pytest.mark.parametrize(
    ("channel", "expected"),
    [
        ("chatwork", "chatwork:default:mention_to_me:777"),
        ("line", "line:default:777"),
        ("slack", "slack:default:777"),
        ("http", "http:acme:777"),
    ],
)
def test_dedupe_key_is_channel_org_and_provider_event_id(channel, expected):
    _, headers, body = build_request(channel, "hello", event_id="777", org="acme", secrets=LOCAL, now=NOW)
    outcome = handle_webhook(
        channel, "POST", headers, {}, body, secrets=LOCAL, config=IngressConfig(), now=NOW
    )
    assert dedupe_key(outcome.messages[0]) == expected


@pytest.mark.parametrize("channel", ["line", "slack"])
def test_redelivery_is_flagged(channel):
    # GIVEN a LINE redelivery (deliveryContext) or a Slack retry (X-Slack-Retry-Num)
    _, headers, body = build_request(channel, "hello", secrets=LOCAL, now=NOW, redelivery=True)
    outcome = handle_webhook(
        channel, "POST", headers, {}, body, secrets=LOCAL, config=IngressConfig(), now=NOW
    )
    # THEN the message says so
    assert outcome.messages[0].is_redelivery is True
    _, headers, body = build_request(channel, "hello", secrets=LOCAL, now=NOW)
    outcome = handle_webhook(
        channel, "POST", headers, {}, body, secrets=LOCAL, config=IngressConfig(), now=NOW
    )
    assert outcome.messages[0].is_redelivery is False
