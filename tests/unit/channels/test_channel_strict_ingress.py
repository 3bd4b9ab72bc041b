"""Strict ingress: each provider's Content-Type (415 otherwise), control characters stripped from
message text (identifiers with one refused), and ChatWork/LINE replays bounded by the event-id
dedupe window. Bad input gets a 4xx and publishes nothing."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from infra.webhook_sender import build_request
from shared_lib.channels import DEDUPE_WINDOW, ChannelSecrets, IngressConfig, handle_webhook, http
from shared_lib.channels.webhooks import PROVIDERS
from shared_lib.layers.ingress import handle_http
from shared_lib.wiring.composition import build_runtime

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)
LOCAL = ChannelSecrets.local_defaults()
CHANNELS = ["chatwork", "line", "slack", "http"]


def handle(channel: str, headers: dict[str, str], body: bytes, *, now: datetime = NOW):
    return handle_webhook(channel, "POST", headers, {}, body, secrets=LOCAL, config=IngressConfig(), now=now)


def delivery(channel: str, text: str = "hello", **options: Any) -> tuple[dict[str, str], bytes]:
    _, headers, body = build_request(channel, text, secrets=LOCAL, now=NOW, **options)
    return headers, body


# ------------------------------------------------------------------------- Content-Type


@pytest.mark.parametrize("channel", CHANNELS)
@pytest.mark.parametrize(
    "content_type", ["application/json", "application/json; charset=utf-8", "APPLICATION/JSON"]
)
def test_json_is_what_every_provider_posts(channel, content_type):
    headers, body = delivery(channel)
    assert handle(channel, headers | {"Content-Type": content_type}, body).status == 200


OTHER_TYPES = [
    None,
    "",
    "text/plain",
    "application/x-www-form-urlencoded",  # Slack interactivity only (test_channel_buttons.py)
    "multipart/form-data; boundary=x",
    "application/json; charset=latin-1",
    "application/jsonp",
]


@pytest.mark.parametrize(
    ("channel", "content_type"),
    [
        (channel, kind)
        for channel in CHANNELS
        for kind in OTHER_TYPES
        if not (channel == "slack" and kind == "application/x-www-form-urlencoded")
    ],
)
def test_anything_else_is_415_with_a_clear_json_error_and_no_message(channel, content_type):
    # GIVEN a delivery that is validly signed but declares another media type
    headers, body = delivery(channel)
    headers = {k: v for k, v in headers.items() if k != "Content-Type"}
    if content_type is not None:
        headers["Content-Type"] = content_type
    outcome = handle(channel, headers, body)
    # THEN 415, saying what is expected, before any parsing
    assert (outcome.status, outcome.messages) == (415, [])
    expected = sorted(PROVIDERS[channel].content_types)
    assert outcome.body == {"ok": False, "error": "unsupported_media_type", "expected": expected}
    assert expected == (
        ["application/json", "application/x-www-form-urlencoded"]
        if channel == "slack"
        else ["application/json"]
    )


def test_the_media_type_is_checked_before_the_signature():
    outcome = handle("slack", {"Content-Type": "text/plain"}, b"anything")
    assert (outcome.status, outcome.rejection) == (415, "unsupported_media_type")


# ------------------------------------------------------------------------- control characters

DIRTY = "見積\x00書の\x1b[31mタスク\x7fを\r\nお願い\x85します\tね\x08"
CLEAN = "見積書の[31mタスクを\nお願いします\tね"


@pytest.mark.parametrize("channel", CHANNELS)
def test_control_characters_are_stripped_from_message_text_but_line_breaks_and_tabs(channel):
    headers, body = delivery(channel, DIRTY)
    outcome = handle(channel, headers, body)
    assert outcome.status == 200 and [m.text for m in outcome.messages] == [CLEAN]


@pytest.mark.parametrize("channel", CHANNELS)
def test_a_message_of_control_characters_only_is_empty_and_gets_no_turn(channel):
    headers, body = delivery(channel, "\x00\x01\x1b\x7f")
    outcome = handle(channel, headers, body)
    assert (outcome.status, outcome.messages, outcome.ignored) == (200, [], ["empty_text"])


def test_a_display_name_loses_its_control_characters_too():
    body = json.dumps(
        {"event_id": "e", "room_id": "r", "user_id": "u", "user_name": "鈴木\x00\x1b", "text": "hi"}
    )
    headers = {
        "Content-Type": "application/json",
        "Authorization": f"Bearer {LOCAL.webhook_secrets('http')[0]}",
    }
    [msg] = handle("http", headers, body.encode()).messages
    assert msg.user_name == "鈴木"


@pytest.mark.parametrize("field", ["event_id", "room_id", "user_id", "message_id", "thread_id"])
@pytest.mark.parametrize("value", ["a\x00b", "a\nb", "../../users/boss", "a/b"])
def test_an_identifier_with_a_control_character_or_a_slash_is_400(field, value):
    payload = {"event_id": "e", "room_id": "r", "user_id": "u", "text": "hi", field: value}
    body = json.dumps(payload).encode()
    headers = {
        "Content-Type": "application/json",
        "Authorization": f"Bearer {LOCAL.webhook_secrets('http')[0]}",
    }
    outcome = handle("http", headers, body)
    assert (outcome.status, outcome.rejection, outcome.messages) == (400, "invalid_http_payload", [])


@pytest.mark.parametrize("channel", ["chatwork", "slack"])
def test_a_provider_id_with_a_control_character_is_400(channel):
    headers, body = delivery(channel, room="C1\x00")
    outcome = handle(channel, headers, body)
    assert outcome.status == 400 and outcome.messages == []


# ------------------------------------------------------------------------- replays


@pytest.fixture
def clock():
    class Clock:
        at = NOW

        def __call__(self) -> datetime:
            return self.at

    return Clock()


@pytest.fixture
def rt(clock):
    return build_runtime({"CHARTER_ENV": "test", "CHARTER_LLM": "none"}, clock=clock)


@pytest.mark.parametrize("channel", ["chatwork", "line"])
@pytest.mark.parametrize("later", [timedelta(0), timedelta(seconds=301), timedelta(days=200), DEDUPE_WINDOW])
def test_a_replay_inside_the_dedupe_window_is_a_duplicate_and_publishes_nothing(rt, clock, channel, later):
    # GIVEN a captured, validly signed delivery (ChatWork and LINE sign no timestamp)
    headers, body = delivery(channel, event_id="123456789")
    status, first = handle_http(rt, channel, "POST", headers, {}, body)
    assert status == 200 and len(first["turn_ids"]) == 1
    # WHEN it is posted again, as late as the end of the window
    clock.at = NOW + later
    status, again = handle_http(rt, channel, "POST", headers, {}, body)
    # THEN it is acknowledged, and no second turn is published
    assert status == 200 and "turn_ids" not in again
    assert len(rt.bus.published) == 1


@pytest.mark.parametrize("channel", ["chatwork", "line"])
def test_a_replay_older_than_the_dedupe_window_is_refused(rt, clock, channel):
    # GIVEN a delivery whose signed event time is now further back than the window
    headers, body = delivery(channel, event_id="987654321")
    clock.at = NOW + DEDUPE_WINDOW + timedelta(seconds=1)
    # WHEN it is replayed THEN 401 (stale_event) and nothing is published
    status, answer = handle_http(rt, channel, "POST", headers, {}, body)
    assert (status, answer) == (401, {"ok": False, "error": "unauthorized"})
    assert rt.bus.published == []
    outcome = handle(channel, headers, body, now=clock.at)
    assert (outcome.status, outcome.rejection) == (401, "stale_event")


def test_slack_and_http_replays_are_bounded_by_their_signed_timestamp():
    for channel in ("slack", "http"):
        headers, body = delivery(channel)
        outcome = handle(channel, headers, body, now=NOW + timedelta(seconds=301))
        assert (outcome.status, outcome.rejection) == (401, "stale_timestamp")


def test_the_http_signature_covers_the_timestamp():
    headers, body = delivery("http")
    headers["X-Charter-Timestamp"] = str(int(NOW.timestamp()) + 1)
    assert handle("http", headers, body).rejection == "bad_signature"
    assert http.sign("s", "1", b"{}") != http.sign("s", "2", b"{}")
