"""Reply clients against FakeChannelServer (127.0.0.1 only): success, retries honouring
Retry-After with an injected sleep, giving up, splitting, LINE push fallback."""

from __future__ import annotations

import json
import socket
import uuid
from datetime import UTC, datetime
from urllib.parse import parse_qs

import httpx
import pytest

from infra.fake_channels import FakeChannelServer
from shared_lib.channels import (
    ChannelSecrets,
    ChatWorkChannel,
    ClientSettings,
    HttpChannel,
    IngressConfig,
    LineChannel,
    SlackChannel,
    build_channels,
    http,
)
from shared_lib.channels.clients import parse_retry_after
from shared_lib.ports import OutboundReply

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def fake():
    with FakeChannelServer() as server:
        yield server


@pytest.fixture()
def env(fake):
    fake.reset()
    return {"CHARTER_ENV": "test"} | fake.env()


@pytest.fixture()
def sleeps():
    return []


@pytest.fixture()
def channels(env, sleeps):
    with httpx.Client() as client:
        yield build_channels(env, client=client, sleep=sleeps.append)


def reply(channel: str, text: str = "了解しました。", **handle: str) -> OutboundReply:
    defaults = {
        "chatwork": {"room_id": "100"},
        "line": {"reply_token": "rt-1", "to": "Ualice", "user_id": "Ualice"},
        "slack": {"channel": "C1", "thread_ts": "1.1"},
        "http": {},
    }[channel]
    return OutboundReply(
        channel=channel,
        org_id="acme",
        room_id="room-1",
        user_id="Ualice",
        reply_handle=defaults | handle,
        text=text,
        idempotency_key="turn-1:reply",
    )


# ------------------------------------------------------------------------- success


def test_build_channels_gives_one_channel_per_provider(channels):
    assert sorted(channels) == ["chatwork", "http", "line", "slack"]
    assert all(c.name == n and callable(c.send) for n, c in channels.items())


def test_chatwork_posts_the_form_body_with_the_token(channels, fake):
    result = channels["chatwork"].send(reply("chatwork"))
    assert (result.ok, result.parts, result.status) == (True, 1, 200)
    assert result.provider_message_id
    [call] = fake.sent()
    assert call["path"] == "/chatwork/v2/rooms/100/messages"
    assert call["headers"]["x-chatworktoken"] == "charter-local-chatwork-api-token"
    assert call["text"] == "了解しました。"


def test_chatwork_room_id_cannot_escape_the_path(channels, fake):
    channels["chatwork"].send(reply("chatwork", room_id="../../admin"))
    assert fake.sent()[0]["path"] == "/chatwork/v2/rooms/..%2F..%2Fadmin/messages"


def test_line_replies_with_the_reply_token(channels, fake):
    result = channels["line"].send(reply("line"))
    assert result.ok and result.parts == 1
    [call] = fake.sent()
    assert call["path"] == "/line/v2/bot/message/reply"
    assert call["body"] == {"replyToken": "rt-1", "messages": [{"type": "text", "text": "了解しました。"}]}
    assert call["headers"]["authorization"] == "Bearer charter-local-line-channel-access-token"


def test_slack_posts_in_the_thread(channels, fake):
    result = channels["slack"].send(reply("slack"))
    assert result.ok and result.provider_message_id.startswith("1700000000.")
    [call] = fake.sent()
    assert call["body"] == {"channel": "C1", "thread_ts": "1.1", "text": "了解しました。"}
    assert call["headers"]["authorization"] == "Bearer xoxb-charter-local-slack-bot-token"


def test_http_posts_signed_json_with_an_idempotency_key(channels, fake):
    result = channels["http"].send(reply("http"))
    assert result.ok
    [call] = fake.sent()
    assert call["path"] == "/http/reply"
    assert call["headers"]["idempotency-key"] == "turn-1:reply"
    assert call["body"]["text"] == "了解しました。" and call["body"]["turn_id"] == "turn-1:reply"
    assert (call["body"]["room_id"], call["body"]["user_id"]) == ("room-1", "Ualice")
    # AND the receiver can verify it with the same scheme as our inbound webhook
    body = json.dumps(call["body"], ensure_ascii=False).encode()
    assert (
        http.verify(
            call["headers"], {}, body, ChannelSecrets.local_defaults(), datetime.now(UTC), IngressConfig()
        )
        is None
    )


def test_http_posts_to_an_allowed_callback_url(channels, fake):
    result = channels["http"].send(reply("http", callback_url=f"{fake.url}/http/reply?via=callback"))
    assert result.ok
    assert fake.sent()[0]["path"] == "/http/reply"


# ------------------------------------------------------------------------- retries


@pytest.mark.parametrize("channel", ["chatwork", "line", "slack", "http"])
def test_429_with_retry_after_is_retried_after_that_wait(channels, fake, sleeps, channel):
    # GIVEN the provider rate-limits the first call, asking for 7 s
    fake.add_fault(channel, status=429, times=1, retry_after=7)
    # WHEN a reply is sent
    result = channels[channel].send(reply(channel))
    # THEN it waited exactly what Retry-After said (injected sleep) and succeeded
    assert result.ok, result
    assert sleeps == [7.0]
    assert [c["status"] for c in fake.sent()] == [429, 200]


@pytest.mark.parametrize("channel", ["chatwork", "line", "slack", "http"])
def test_three_server_errors_give_a_failure_result(channels, fake, sleeps, channel):
    # GIVEN the provider fails every time
    fake.add_fault(channel, status=500, times=3)
    # WHEN a reply is sent
    result = channels[channel].send(reply(channel))
    # THEN three attempts were made with backoff in between, and the result says it failed
    assert (result.ok, result.status, result.error, result.parts) == (False, 500, "server_error", 0)
    assert len(fake.sent()) == 3
    assert len(sleeps) == 2 and all(s > 0 for s in sleeps)


def test_slack_ratelimited_in_the_body_is_retried(channels, fake, sleeps):
    fake.add_fault("slack", slack_error="ratelimited", retry_after=1)
    result = channels["slack"].send(reply("slack"))
    assert result.ok and sleeps == [1.0]


def test_slack_ok_false_is_an_error_without_retry(channels, fake, sleeps):
    fake.add_fault("slack", slack_error="channel_not_found")
    result = channels["slack"].send(reply("slack"))
    assert (result.ok, result.error) == (False, "slack_channel_not_found")
    assert len(fake.sent()) == 1 and sleeps == []


def test_retry_after_longer_than_allowed_gives_up_at_once(channels, fake, sleeps):
    fake.add_fault("chatwork", status=429, retry_after=3600)
    result = channels["chatwork"].send(reply("chatwork"))
    assert (result.ok, result.error, result.status) == (False, "rate_limited", 429)
    assert sleeps == [] and len(fake.sent()) == 1


def test_a_client_error_is_not_retried(channels, fake, sleeps):
    fake.add_fault("chatwork", status=403)
    result = channels["chatwork"].send(reply("chatwork"))
    assert (result.ok, result.error, result.status) == (False, "http_403", 403)
    assert sleeps == []


def test_connection_refused_is_retried_then_reported(sleeps):
    # GIVEN a port on 127.0.0.1 where nothing listens
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {"CHARTER_ENV": "test", "SLACK_API_BASE": f"http://127.0.0.1:{port}/slack/api"}
    with httpx.Client() as client:
        result = build_channels(env, client=client, sleep=sleeps.append)["slack"].send(reply("slack"))
    assert (result.ok, result.error) == (False, "connection_error")
    assert len(sleeps) == 2


def test_a_dropped_connection_is_retried_only_where_the_provider_deduplicates(channels, fake, sleeps):
    # GIVEN the server closes the connection without answering (the post may have arrived)
    fake.add_fault("slack", mode="drop")
    # THEN Slack (no idempotency) is not retried ...
    assert channels["slack"].send(reply("slack")).error == "transport_error"
    assert sleeps == []
    # ... but a LINE push (retry key) is, with the same retry key
    fake.reset()
    fake.add_fault("line", mode="drop")
    result = channels["line"].send(reply("line", reply_token=""))
    assert result.ok and len(sleeps) == 1
    keys = [c["headers"]["x-line-retry-key"] for c in fake.sent()]
    assert len(keys) == 2 and keys[0] == keys[1]


# ------------------------------------------------------------------------- splitting


def test_long_chatwork_reply_is_sent_in_parts_in_order(channels, fake):
    paragraphs = [f"{i}" * 3000 for i in range(3)]
    result = channels["chatwork"].send(reply("chatwork", "\n\n".join(paragraphs)))
    assert (result.ok, result.parts) == (True, 3)
    assert [c["text"] for c in fake.sent()] == paragraphs


def test_long_slack_reply_stays_in_the_thread(channels, fake):
    result = channels["slack"].send(reply("slack", "word " * 1000))
    assert result.ok and result.parts == 2
    assert all(c["body"]["thread_ts"] == "1.1" and len(c["body"]["text"]) <= 3000 for c in fake.sent())


def test_long_line_reply_uses_five_messages_then_pushes_the_rest(channels, fake):
    # GIVEN a text of 7 parts of at most 5,000 characters
    text = "\n\n".join("あ" * 4900 for _ in range(7))
    result = channels["line"].send(reply("line", text))
    # THEN one reply call carries 5 messages and one push the remaining 2
    assert (result.ok, result.parts) == (True, 7)
    reply_call, push_call = fake.sent()
    assert reply_call["path"].endswith("/reply") and len(reply_call["body"]["messages"]) == 5
    assert push_call["path"].endswith("/push") and len(push_call["body"]["messages"]) == 2
    assert push_call["body"]["to"] == "Ualice"


def test_a_failure_midway_reports_the_parts_delivered(channels, fake, sleeps):
    text = "\n\n".join("x" * 3000 for _ in range(2))
    channels["chatwork"].send(reply("chatwork", "warm-up"))
    fake.reset()
    fake.add_fault("chatwork", status=400, times=1)
    assert channels["chatwork"].send(reply("chatwork", text)).parts == 0
    fake.reset()
    result = channels["chatwork"].send(reply("chatwork", text))
    assert result.ok and result.parts == 2


# ------------------------------------------------------------------------- LINE push fallback


def test_expired_reply_token_falls_back_to_push_with_a_retry_key(channels, fake):
    # GIVEN the reply token has expired (the turn took longer than LINE allows)
    fake.add_fault("line", mode="expired_reply_token")
    # WHEN the reply is sent to a group conversation
    result = channels["line"].send(reply("line", to="Cgroup", group_id="Cgroup"))
    # THEN it is pushed to the group, with a retry key derived from the idempotency key
    assert result.ok
    failed, pushed = fake.sent()
    assert (failed["path"], failed["status"]) == ("/line/v2/bot/message/reply", 400)
    assert pushed["path"] == "/line/v2/bot/message/push" and pushed["body"]["to"] == "Cgroup"
    key = pushed["headers"]["x-line-retry-key"]
    assert uuid.UUID(key).version == 5
    # AND the same reply sent again uses the same key, which LINE answers 409 (already accepted)
    fake.add_fault("line", mode="expired_reply_token")
    again = channels["line"].send(reply("line", to="Cgroup", group_id="Cgroup"))
    assert again.ok
    assert fake.sent()[-1]["headers"]["x-line-retry-key"] == key and fake.sent()[-1]["status"] == 409


def test_line_without_reply_token_pushes_directly(channels, fake):
    result = channels["line"].send(reply("line", reply_token=""))
    assert result.ok
    assert [c["path"] for c in fake.sent()] == ["/line/v2/bot/message/push"]


# ------------------------------------------------------------------------- not configured


def test_missing_tokens_in_production_fail_without_a_call(fake):
    fake.reset()
    env = {"CHARTER_ENV": "prod"} | fake.env()
    with httpx.Client() as client:
        channels = build_channels(env, client=client)
        for name in ("chatwork", "line", "slack"):
            assert channels[name].send(reply(name)).error == "missing_api_token"
        # AND a plain-HTTP callback to an unlisted host is refused (no open relay)
        refused = channels["http"].send(reply("http", callback_url="https://attacker.example/x"))
        assert refused.error == "callback_not_allowed"
    assert fake.sent() == []


def test_empty_text_is_not_sent(channels, fake):
    assert channels["slack"].send(reply("slack", "  \n ")).error == "empty_text"
    assert fake.sent() == []


def test_clients_can_be_built_individually_with_their_own_settings(fake, sleeps):
    secrets = ChannelSecrets.from_env({"CHARTER_ENV": "test"} | fake.env())
    settings = ClientSettings(
        max_attempts=2, text_limits={"chatwork": 10, "line": 10, "slack": 10, "http": 10}
    )
    clients = [ChatWorkChannel, LineChannel, SlackChannel, HttpChannel]
    for kind in clients:
        client = kind(secrets, settings=settings, sleep=sleeps.append)
        try:
            assert client.send(reply(client.name, "0123456789 abc")).parts == 2
        finally:
            client.close()


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("3", 3.0),
        ("0.5", 0.5),
        ("", None),
        (None, None),
        ("soon", None),
        ("Sun, 01 Jun 2025 12:00:10 GMT", 10.0),
        ("Sun, 01 Jun 2025 11:00:00 GMT", 0.0),
    ],
)
def test_retry_after_accepts_seconds_and_http_dates(value, seconds):
    assert parse_retry_after(value, NOW) == seconds


def test_form_body_is_url_encoded(channels, fake):
    channels["chatwork"].send(reply("chatwork", "a&b=c ä"))
    assert parse_qs("body=" + "a%26b%3Dc+%C3%A4")["body"] == [fake.sent()[0]["text"]]
