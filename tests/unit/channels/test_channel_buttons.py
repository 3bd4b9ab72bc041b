"""Approval buttons (seed 002 §6.2 step 3): a LINE ``postback`` and a Slack ``block_actions``
interaction whose payload is ``approve:J-…`` / ``deny:J-…`` become the text 「承認 J-…」 /
「却下 J-…」 of the person who pressed, verified like any delivery of the channel."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import pytest

from shared_lib.channels import ChannelSecrets, IngressConfig, handle_webhook, line, slack

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)
LOCAL = ChannelSecrets.local_defaults()


def handle(channel: str, headers: dict[str, str], body: bytes):
    return handle_webhook(channel, "POST", headers, {}, body, secrets=LOCAL, config=IngressConfig(), now=NOW)


def line_postback(data: str, *, source: dict[str, Any] | None = None) -> tuple[dict[str, str], bytes]:
    body = json.dumps(
        {
            "destination": "Ubot",
            "events": [
                {
                    "type": "postback",
                    "mode": "active",
                    "timestamp": int(NOW.timestamp() * 1000),
                    "webhookEventId": "01HPOSTBACK",
                    "deliveryContext": {"isRedelivery": False},
                    "replyToken": "rt1",
                    "source": source or {"type": "group", "groupId": "G1", "userId": "U1"},
                    "postback": {"data": data},
                }
            ],
        }
    ).encode()
    secret = LOCAL.webhook_secrets("line")[0]
    return {"Content-Type": "application/json", "X-Line-Signature": line.sign(secret, body)}, body


def slack_press(value: str, *, secret: str | None = None) -> tuple[dict[str, str], bytes]:
    payload = {
        "type": "block_actions",
        "trigger_id": "123.456.abc",
        "team": {"id": "T1", "domain": "acme"},
        "user": {"id": "U1", "team_id": "T1"},
        "channel": {"id": "C1", "name": "general"},
        "container": {"type": "message", "channel_id": "C1", "message_ts": "1.2", "thread_ts": "1.1"},
        "actions": [{"action_id": "approve", "type": "button", "value": value, "action_ts": "1.3"}],
    }
    body = urlencode({"payload": json.dumps(payload)}).encode()
    ts = str(int(NOW.timestamp()))
    key = secret or LOCAL.webhook_secrets("slack")[0]
    return {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": slack.sign(key, ts, body),
    }, body


@pytest.mark.parametrize(
    ("data", "text"), [("approve:J-7K2M9Q", "承認 J-7K2M9Q"), ("deny:J-7K2M9Q", "却下 J-7K2M9Q")]
)
def test_a_line_postback_of_an_approval_button_is_the_answer_text(data, text):
    headers, body = line_postback(data)
    outcome = handle("line", headers, body)
    (msg,) = outcome.messages
    assert (outcome.status, msg.text, msg.user_id, msg.room_id) == (200, text, "U1", "G1")
    assert msg.addressed and msg.event_id == "01HPOSTBACK"  # a button in a group needs no mention


@pytest.mark.parametrize("data", ["approve:J-7K2M9", "approve:ap-7K2M9Q", "richmenu:1", "approve:J-7K2M9Q\n"])
def test_any_other_postback_is_ignored(data):
    outcome = handle("line", *line_postback(data))
    assert (outcome.status, outcome.messages, outcome.ignored) == (200, [], ["unsupported_postback"])


def test_an_unsigned_line_postback_is_refused():
    headers, body = line_postback("approve:J-7K2M9Q")
    outcome = handle("line", headers | {"X-Line-Signature": "bad"}, body)
    assert (outcome.status, outcome.messages) == (401, [])


@pytest.mark.parametrize(
    ("value", "text"), [("approve:J-7K2M9Q", "承認 J-7K2M9Q"), ("deny:J-7K2M9Q", "却下 J-7K2M9Q")]
)
def test_a_slack_button_press_is_the_answer_text_in_its_thread(value, text):
    outcome = handle("slack", *slack_press(value))
    (msg,) = outcome.messages
    assert (outcome.status, msg.text, msg.user_id, msg.room_id) == (200, text, "U1", "C1")
    assert msg.reply_handle == {"channel": "C1", "thread_ts": "1.1"} and msg.event_id == "123.456.abc"


def test_a_slack_press_signed_with_another_secret_is_refused():
    outcome = handle("slack", *slack_press("approve:J-7K2M9Q", secret="not-the-signing-secret"))
    assert (outcome.status, outcome.messages) == (401, [])


def test_another_slack_interaction_is_ignored_and_a_form_without_payload_is_malformed():
    assert handle("slack", *slack_press("open_modal")).ignored == ["unsupported_action"]
    headers, _ = slack_press("approve:J-7K2M9Q")
    body = b"text=hello"
    ts = headers["X-Slack-Request-Timestamp"]
    signed = headers | {"X-Slack-Signature": slack.sign(LOCAL.webhook_secrets("slack")[0], ts, body)}
    assert (handle("slack", signed, body).status, handle("slack", signed, body).messages) == (400, [])
