"""Realistic, correctly signed webhook deliveries of each provider, built and posted.

Used by the demo, the tests, load runs and the Cloud Build smoke test::

    python -m infra.webhook_sender --channel slack --url http://127.0.0.1:8080 --text "明日の予定は?"

prints ``<status> <response JSON>`` and exits 0 on a 2xx answer, 1 otherwise. Deliveries go
to ``{url}/webhooks/{channel}`` (``--path`` changes the template). Secrets come from the
environment like the ingress reads them (``shared_lib.channels.secrets``).

The deliveries are addressed to the bot so that the default ingress config answers them:
ChatWork ``mention_to_me`` with a ``[To:bot]`` line, Slack ``app_mention``, LINE a 1:1
chat (or, with a room other than the user, a group message mentioning the bot), HTTP
``addressed`` true. ``org`` goes where each provider names its tenant — Slack
``team_id``, LINE ``destination`` — and the ingress maps it with ``IngressConfig.orgs``
(ChatWork has no tenant field: map its room). A plain-HTTP delivery is signed with the
organisation's own tenant secret (``HTTP_WEBHOOK_TENANTS``: the credential names the
organisation) and names it in ``org_id``; only an organisation without a tenant secret falls
back to ``HTTP_WEBHOOK_SECRET``, which the ingress accepts locally only. Everything random
(reply tokens, ``ts``, message ids) is derived from ``event_id``, so one event id always
gives the same body: a redelivery.

``smoke=True`` (``--smoke``) adds ``X-Charter-Smoke``, the body signed with the same secret
(``shared_lib.rollout.smoke``): the ingress then makes the turn a smoke turn, which only the
candidate revisions handle (``infra/smoke_runner.py`` drives one end to end).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx

from shared_lib.channels import chatwork, http, line, slack
from shared_lib.channels.secrets import ChannelSecrets
from shared_lib.ids import utc_now
from shared_lib.rollout import smoke as smoke_header

WEBHOOK_PATH = "/webhooks/{channel}"
DEFAULT_BOTS = {"chatwork": "9000001", "slack": "UCHARTERBOT", "line": "Ucharterbot000000000000000000000"}
DEFAULT_ROOMS = {"chatwork": "100001", "slack": "CCHARTER01", "line": None, "http": "room-1"}
DEFAULT_USERS = {
    "chatwork": "200001",
    "slack": "UALICE0001",
    "line": "Ualice00000000000000000000000001",
    "http": "user-1",
}


@dataclass(frozen=True)
class WebhookResponse:
    status: int
    body: Any


def _digest(event_id: str, salt: str) -> str:
    return hashlib.sha256(f"{salt}:{event_id}".encode()).hexdigest()


def _number(event_id: str, salt: str, digits: int = 9) -> str:
    """A ``digits``-long decimal id derived from ``event_id``."""
    low = 10 ** (digits - 1)
    return str(low + int(_digest(event_id, salt), 16) % (9 * low))


def _new_event_id(channel: str) -> str:
    """A fresh id in the provider's style (ChatWork message id, Slack ``Ev...``, LINE ULID-like)."""
    if channel == "chatwork":
        return _number(uuid.uuid4().hex, "chatwork", 12)
    if channel == "slack":
        return "Ev" + uuid.uuid4().hex[:12].upper()
    if channel == "line":
        return uuid.uuid4().hex[:26].upper()
    return uuid.uuid4().hex


def sender_secrets() -> ChannelSecrets:
    """The secrets this developer tool signs with: the environment's, and, when it names no
    CHARTER_ENV, the local stack's (the sender talks to a laptop's stack; a served ingress
    never defaults to local)."""
    return ChannelSecrets.from_env({"CHARTER_ENV": "local", **os.environ})


def _first_secret(secrets: ChannelSecrets, channel: str, org: str) -> str:
    """The newest secret to sign with: a plain-HTTP organisation's own tenant secret first."""
    tenant = secrets.http_tenants.get(org, ()) if channel == "http" else ()
    active = tenant or secrets.webhook_secrets(channel)
    if not active:
        raise ValueError(f"no {channel} webhook secret configured to sign with")
    return active[0]


def _chatwork(text: str, org: str, room: str, user: str, event_id: str, bot: str, ts: int) -> dict[str, Any]:
    return {
        "webhook_setting_id": "1",
        "webhook_event_type": "mention_to_me",
        "webhook_event_time": ts,
        "webhook_event": {
            "from_account_id": user,
            "to_account_id": bot,
            "room_id": room,
            "message_id": event_id,
            "body": f"[To:{bot}]Charterさん\n{text}",
            "send_time": ts,
            "update_time": 0,
        },
    }


def _line(
    text: str, org: str, room: str | None, user: str, event_id: str, bot: str, ts: int, redelivery: bool
) -> dict[str, Any]:
    message: dict[str, Any] = {"type": "text", "id": _number(event_id, "line-message", 14), "text": text}
    source: dict[str, Any] = {"type": "user", "userId": user}
    if room and room != user:
        source = {"type": "group", "groupId": room, "userId": user}
        message["text"] = f"@Charter {text}"
        message["mention"] = {
            "mentionees": [{"index": 0, "length": 8, "type": "user", "userId": bot, "isSelf": True}]
        }
    return {
        "destination": org,
        "events": [
            {
                "type": "message",
                "mode": "active",
                "timestamp": ts * 1000,
                "webhookEventId": event_id,
                "deliveryContext": {"isRedelivery": redelivery},
                "source": source,
                "replyToken": _digest(event_id, "reply-token")[:32],
                "message": message,
            }
        ],
    }


def _slack(text: str, org: str, room: str, user: str, event_id: str, bot: str, ts: int) -> dict[str, Any]:
    message_ts = f"{ts}.{_number(event_id, 'slack-ts', 6)}"
    return {
        "token": "unused-verification-token",
        "team_id": org,
        "api_app_id": "ACHARTER01",
        "type": "event_callback",
        "event_id": event_id,
        "event_time": ts,
        "authorizations": [{"enterprise_id": None, "team_id": org, "user_id": bot, "is_bot": True}],
        "event": {
            "type": "app_mention",
            "user": user,
            "text": f"<@{bot}> {text}",
            "ts": message_ts,
            "event_ts": message_ts,
            "channel": room,
            "channel_type": "channel",
            "team": org,
        },
    }


def build_request(
    channel: str,
    text: str,
    *,
    org: str = "default",
    room: str | None = None,
    user: str | None = None,
    event_id: str | None = None,
    secrets: ChannelSecrets | None = None,
    now: datetime | None = None,
    bot_id: str | None = None,
    redelivery: bool = False,
    path_template: str = WEBHOOK_PATH,
    smoke: bool = False,
) -> tuple[str, dict[str, str], bytes]:
    """``(path, headers, body)`` of one signed delivery of ``channel`` carrying ``text``.

    >>> path, headers, body = build_request("slack", "hi", event_id="Ev1", secrets=ChannelSecrets.local_defaults())
    >>> path, sorted(headers)
    ('/webhooks/slack', ['Content-Type', 'X-Slack-Request-Timestamp', 'X-Slack-Signature'])
    """
    if channel not in DEFAULT_USERS:
        raise ValueError(f"unknown channel {channel!r}")
    secrets = secrets or sender_secrets()
    ts = int((now or utc_now()).timestamp())
    event_id = event_id or _new_event_id(channel)
    user = user or DEFAULT_USERS[channel]
    bot = bot_id or DEFAULT_BOTS.get(channel, "")
    room_id = room or DEFAULT_ROOMS[channel]
    headers = {"Content-Type": "application/json"}
    payload: dict[str, Any]
    if channel == "chatwork":
        payload = _chatwork(text, org, room_id or "", user, event_id, bot, ts)
    elif channel == "line":
        payload = _line(text, org, room, user, event_id, bot, ts, redelivery)
    elif channel == "slack":
        payload = _slack(text, org, room_id or "", user, event_id, bot, ts)
    else:
        payload = {"event_id": event_id, "org_id": org, "room_id": room_id, "user_id": user, "text": text}
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    secret = _first_secret(secrets, channel, org)
    if channel == "chatwork":
        headers["X-ChatWorkWebhookSignature"] = chatwork.sign(secret, body)
    elif channel == "line":
        headers["X-Line-Signature"] = line.sign(secret, body)
    elif channel == "slack":
        headers["X-Slack-Request-Timestamp"] = str(ts)
        headers["X-Slack-Signature"] = slack.sign(secret, str(ts), body)
        if redelivery:
            headers["X-Slack-Retry-Num"] = "1"
    else:
        headers["X-Charter-Timestamp"] = str(ts)
        headers["X-Charter-Signature"] = http.sign(secret, str(ts), body)
    if smoke:
        headers["X-Charter-Smoke"] = smoke_header.sign(secret, body)
    return path_template.format(channel=channel), headers, body


def send(
    url: str,
    channel: str,
    text: str,
    *,
    client: httpx.Client | None = None,
    timeout: float = 10.0,
    **options: Any,
) -> WebhookResponse:
    """Build a delivery with ``build_request(channel, text, **options)`` and POST it to ``url``."""
    path, headers, body = build_request(channel, text, **options)
    target = url.rstrip("/") + path
    if client is not None:
        response = client.post(target, content=body, headers=headers, timeout=timeout)
    else:
        with httpx.Client(timeout=timeout) as own:
            response = own.post(target, content=body, headers=headers)
    try:
        answer: Any = response.json()
    except ValueError:
        answer = response.text
    return WebhookResponse(response.status_code, answer)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m infra.webhook_sender",
        description="Post one signed provider webhook to a Charter ingress.",
    )
    parser.add_argument("--channel", required=True, choices=sorted(DEFAULT_USERS))
    parser.add_argument("--url", required=True, help="ingress base URL, e.g. http://127.0.0.1:8080")
    parser.add_argument("--text", required=True)
    parser.add_argument("--org", default="default")
    parser.add_argument("--room")
    parser.add_argument("--user")
    parser.add_argument("--event-id")
    parser.add_argument("--bot-id")
    parser.add_argument("--redelivery", action="store_true")
    parser.add_argument("--path", default=WEBHOOK_PATH, help="path template (default %(default)s)")
    parser.add_argument(
        "--smoke", action="store_true", help="a smoke turn: only candidate revisions handle it"
    )
    args = parser.parse_args(argv)
    try:
        result = send(
            args.url,
            args.channel,
            args.text,
            org=args.org,
            room=args.room,
            user=args.user,
            event_id=args.event_id,
            bot_id=args.bot_id,
            redelivery=args.redelivery,
            path_template=args.path,
            smoke=args.smoke,
            secrets=sender_secrets(),
        )
    except (ValueError, httpx.HTTPError) as exc:
        print(f"webhook_sender: {exc}", file=sys.stderr)
        return 2
    shown = json.dumps(result.body, ensure_ascii=False) if not isinstance(result.body, str) else result.body
    print(f"{result.status} {shown}")
    return 0 if 200 <= result.status < 300 else 1


if __name__ == "__main__":
    sys.exit(main())
