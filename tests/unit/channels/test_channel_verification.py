"""Signature verification per provider spec: valid accepted, any one-byte change rejected,
replay window, rotation, and nothing published without a valid signature."""

from __future__ import annotations

import base64
import dataclasses
import json
from datetime import UTC, datetime, timedelta

import pytest

from infra.webhook_sender import build_request
from shared_lib.channels import ChannelSecrets, IngressConfig, chatwork, handle_webhook, http, line, slack

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)
CHANNELS = ["chatwork", "line", "slack", "http"]
LOCAL = ChannelSecrets.local_defaults()
SIGNATURE_HEADERS = {
    "chatwork": "X-ChatWorkWebhookSignature",
    "line": "X-Line-Signature",
    "slack": "X-Slack-Signature",
    "http": "X-Charter-Signature",
}


def deliver(
    channel: str,
    headers: dict[str, str],
    body: bytes,
    *,
    secrets: ChannelSecrets = LOCAL,
    now: datetime = NOW,
    query: dict[str, str] | None = None,
):
    # every provider posts JSON (415 otherwise: test_channel_webhooks); the signature is what varies here
    headers = {"Content-Type": "application/json", **headers}
    return handle_webhook(
        channel, "POST", headers, query or {}, body, secrets=secrets, config=IngressConfig(), now=now
    )


def tweak(text: str, at: int = 5) -> str:
    """The same string with one character changed (still base64/hex alphabet)."""
    replacement = "b" if text[at] != "b" else "c"
    return text[:at] + replacement + text[at + 1 :]


def with_secret(channel: str, *values: str) -> ChannelSecrets:
    field = {
        "chatwork": "chatwork_webhook_tokens",
        "line": "line_channel_secrets",
        "slack": "slack_signing_secrets",
        "http": "http_webhook_secrets",
    }[channel]
    return dataclasses.replace(LOCAL, **{field: values})


def rejected(outcome, code: str) -> None:
    assert outcome.status == 401
    assert outcome.rejection == code
    assert outcome.messages == []
    assert outcome.body == {"ok": False, "error": "unauthorized"}


@pytest.mark.parametrize("channel", CHANNELS)
def test_valid_signature_is_accepted(channel):
    # GIVEN a delivery signed with the active secret
    _, headers, body = build_request(channel, "hello", secrets=LOCAL, now=NOW)
    # WHEN it is handled
    outcome = deliver(channel, headers, body)
    # THEN it is accepted with one message to publish
    assert outcome.status == 200, outcome.body
    assert outcome.rejection is None
    assert [m.text for m in outcome.messages] == ["hello"]


@pytest.mark.parametrize("channel", CHANNELS)
def test_one_byte_change_to_body_is_rejected(channel):
    # GIVEN a correctly signed delivery whose body is changed by one byte afterwards
    _, headers, body = build_request(channel, "hello", secrets=LOCAL, now=NOW)
    tampered = body.replace(b"hello", b"hellp")
    assert len(tampered) == len(body) and tampered != body
    # WHEN it is handled THEN it is refused and nothing is published
    rejected(deliver(channel, headers, tampered), "bad_signature")


@pytest.mark.parametrize("channel", CHANNELS)
def test_one_byte_change_to_signature_is_rejected(channel):
    # GIVEN a delivery whose signature header is changed by one character
    _, headers, body = build_request(channel, "hello", secrets=LOCAL, now=NOW)
    name = SIGNATURE_HEADERS[channel]
    headers[name] = tweak(headers[name], at=len(headers[name]) - 3)
    # WHEN it is handled THEN it is refused
    rejected(deliver(channel, headers, body), "bad_signature")


@pytest.mark.parametrize("channel", CHANNELS)
def test_signature_made_with_another_secret_is_rejected(channel):
    # GIVEN the server's secret differs from the signer's by one character
    _, headers, body = build_request(channel, "hello", secrets=LOCAL, now=NOW)
    server = with_secret(channel, tweak(LOCAL.webhook_secrets(channel)[0]))
    # WHEN it is handled THEN it is refused
    rejected(deliver(channel, headers, body, secrets=server), "bad_signature")


@pytest.mark.parametrize("channel", CHANNELS)
def test_missing_signature_is_rejected(channel):
    # GIVEN a delivery without its signature header
    _, headers, body = build_request(channel, "hello", secrets=LOCAL, now=NOW)
    del headers[SIGNATURE_HEADERS[channel]]
    # WHEN it is handled THEN it is refused as unsigned
    rejected(deliver(channel, headers, body), "missing_signature")


@pytest.mark.parametrize("channel", CHANNELS)
def test_rotation_accepts_old_and_new_secret(channel):
    # GIVEN two active secrets during a rotation (new first, old second)
    old = LOCAL.webhook_secrets(channel)[0]
    new = base64.b64encode(b"the-new-chatwork-token").decode() if channel == "chatwork" else "the-new-secret"
    server = with_secret(channel, new, old)
    # WHEN deliveries are signed with either one
    for signer in (new, old):
        _, headers, body = build_request(channel, "hello", secrets=with_secret(channel, signer), now=NOW)
        outcome = deliver(channel, headers, body, secrets=server)
        # THEN each is accepted
        assert outcome.status == 200, (signer, outcome.rejection)
        assert len(outcome.messages) == 1


@pytest.mark.parametrize("channel", CHANNELS)
def test_no_configured_secret_fails_closed(channel):
    # GIVEN production without this channel's secret
    server = ChannelSecrets.from_env({"CHARTER_ENV": "prod"})
    _, headers, body = build_request(channel, "hello", secrets=LOCAL, now=NOW)
    # WHEN a delivery signed with the local default arrives THEN it is refused
    rejected(deliver(channel, headers, body, secrets=server), "no_secret_configured")


@pytest.mark.parametrize("channel", ["slack", "http"])
@pytest.mark.parametrize(("skew", "accepted"), [(-301, False), (301, False), (-299, True), (299, True)])
def test_replay_window_is_300_seconds(channel, skew, accepted):
    # GIVEN a delivery signed at NOW, received `skew` seconds later
    _, headers, body = build_request(channel, "hello", secrets=LOCAL, now=NOW)
    # WHEN it is handled at NOW + skew
    outcome = deliver(channel, headers, body, now=NOW + timedelta(seconds=skew))
    # THEN only deliveries inside the window pass
    if accepted:
        assert outcome.status == 200
    else:
        rejected(outcome, "stale_timestamp")


def test_slack_timestamp_must_be_an_ascii_integer():
    # GIVEN a Slack signature computed over a non-numeric timestamp
    body = b'{"type": "url_verification", "challenge": "c"}'
    for stamp in ("", "abc", "1.5e9", "١٧٤٨٧٧٩٢٠٠", "-1748779200"):
        headers = {
            "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": slack.sign(LOCAL.slack_signing_secrets[0], stamp, body),
        }
        # WHEN handled THEN it is refused
        assert deliver("slack", headers, body).status == 401


def test_slack_url_verification_needs_a_valid_signature():
    # GIVEN Slack's url_verification handshake
    body = json.dumps(
        {
            "token": "t",
            "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
            "type": "url_verification",
        }
    ).encode()
    stamp = str(int(NOW.timestamp()))
    good = {
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": slack.sign(LOCAL.slack_signing_secrets[0], stamp, body),
    }
    # WHEN it is signed THEN the challenge is answered and nothing is published
    outcome = deliver("slack", good, body)
    assert outcome.status == 200
    assert outcome.body == {"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}
    assert outcome.messages == []
    # WHEN it is not signed THEN the challenge is not echoed
    outcome = deliver("slack", {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": "v0=00"}, body)
    rejected(outcome, "bad_signature")
    assert "challenge" not in outcome.body


@pytest.mark.parametrize("event_id", ["evt-1", "evt-2", "evt-3", "cw-plus-first"])
def test_chatwork_signature_in_query_parameter_is_accepted(event_id):
    # GIVEN a ChatWork delivery with the signature in the query string, "+" decoded to a space
    _, headers, body = build_request("chatwork", "hello", event_id=event_id, secrets=LOCAL, now=NOW)
    signature = headers.pop("X-ChatWorkWebhookSignature")
    for value in (signature, signature.replace("+", " ")):
        # WHEN handled THEN it is accepted
        outcome = deliver("chatwork", headers, body, query={"chatwork_webhook_signature": value})
        assert outcome.status == 200


def test_chatwork_query_signature_starting_with_plus_survives_form_decoding():
    # GIVEN a body whose signature starts with "+" (the form decoding makes it a leading space)
    for n in range(2000):
        _, headers, body = build_request("chatwork", f"hello {n}", event_id=f"e{n}", secrets=LOCAL, now=NOW)
        signature = headers.pop("X-ChatWorkWebhookSignature")
        if signature.startswith("+"):
            break
    else:
        raise AssertionError("no signature starting with '+' in 2000 bodies")
    # WHEN it arrives decoded THEN it is still accepted
    outcome = deliver("chatwork", headers, body, query={"chatwork_webhook_signature": " " + signature[1:]})
    assert outcome.status == 200


def test_chatwork_token_that_is_not_base64_verifies_nothing():
    # GIVEN a ChatWork token configured with a typo that makes it invalid base64
    server = with_secret("chatwork", "not base64 !!")
    _, headers, body = build_request("chatwork", "hello", secrets=LOCAL, now=NOW)
    # WHEN a delivery arrives THEN it is refused, not crashed on
    rejected(deliver("chatwork", headers, body, secrets=server), "no_secret_configured")


def test_chatwork_signature_follows_the_spec():
    # GIVEN a token and a body THEN the signature is base64(HMAC-SHA256(base64decode(token), body))
    import hashlib
    import hmac

    token = base64.b64encode(b"k" * 32).decode()
    expected = base64.b64encode(hmac.new(b"k" * 32, b"{}", hashlib.sha256).digest()).decode()
    assert chatwork.sign(token, b"{}") == expected


def test_line_and_slack_signatures_follow_the_spec():
    import hashlib
    import hmac

    assert line.sign("s", b"{}") == base64.b64encode(hmac.new(b"s", b"{}", hashlib.sha256).digest()).decode()
    assert slack.sign("s", "1", b"{}") == "v0=" + hmac.new(b"s", b"v0:1:{}", hashlib.sha256).hexdigest()
    assert http.sign("s", "1", b"{}") == "sha256=" + hmac.new(b"s", b"1.{}", hashlib.sha256).hexdigest()


def test_http_bearer_secret_is_accepted_and_wrong_bearer_rejected():
    # GIVEN a plain-HTTP message authenticated with a bearer secret instead of a signature
    body = json.dumps(
        {"event_id": "e1", "org_id": "acme", "room_id": "r", "user_id": "u", "text": "hi"}
    ).encode()
    secret = LOCAL.http_webhook_secrets[0]
    # WHEN the bearer is right THEN it is accepted
    assert deliver("http", {"authorization": f"Bearer {secret}"}, body).status == 200
    # WHEN it is one character off, or another scheme THEN it is refused
    rejected(deliver("http", {"Authorization": f"Bearer {tweak(secret)}"}, body), "bad_signature")
    rejected(deliver("http", {"Authorization": f"Basic {secret}"}, body), "missing_signature")


def test_headers_are_case_insensitive():
    # GIVEN a LINE delivery whose header names arrive in lower or upper case
    _, headers, body = build_request("line", "hello", secrets=LOCAL, now=NOW)
    for transform in (str.lower, str.upper):
        # WHEN handled THEN it is accepted either way
        assert deliver("line", {transform(k): v for k, v in headers.items()}, body).status == 200
