"""Slack Events API webhooks: verification, payload schema and normalisation.

Signature: ``X-Slack-Signature`` is ``v0=`` + hex(HMAC-SHA256(signing secret,
``f"v0:{X-Slack-Request-Timestamp}:{body}"``)); a timestamp more than 300 s from ``now``
is rejected (replay window). ``url_verification`` is answered with its ``challenge`` —
only after the signature checked out, like every other delivery.

Answered: ``app_mention`` and ``message`` events from people. Ignored: bot messages
(``bot_id``), any ``subtype`` but ``thread_broadcast`` (edits, deletes, joins, ...), the
bot's own messages, other event types (reactions, ...), and — when the app subscribes to
``app_mention`` — the ``message`` copy of a channel message that mentions the bot.

Text: ``<@U1|name>`` becomes ``@name``; a mention of the bot is removed; other user
mentions become ``@U1``; ``<#C1|general>`` ``#general``; ``<!here>`` ``@here``; links
``<url|label>`` ``label (url)``; ``&lt; &gt; &amp;`` are unescaped.

Threads: ``thread_id`` is the event's ``thread_ts``. The reply handle answers in that
thread, or starts one under a channel message; direct messages are answered inline.
Retries carry ``X-Slack-Retry-Num``, which sets ``is_redelivery``.

Organisation: the workspace (``team_id``) through ``orgs.slack_teams`` — never the text.

Interactivity: a ``block_actions`` payload (form-encoded ``payload=<json>``, signed like any
delivery) whose action ``value`` is an approval button's (``approve:J-…`` / ``deny:J-…``)
becomes the text 「承認 J-…」 / 「却下 J-…」 from the person who pressed it
(``base.button_text``); its ``trigger_id`` is the event id. Other interactions are ignored.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shared_lib.channels.base import (
    IngressConfig,
    PayloadError,
    ProviderId,
    ProviderResult,
    build_message,
    button_text,
    hmac_sha256,
    matches_any,
    sent_time,
    timestamp_fresh,
)
from shared_lib.channels.base import clean_text as without_controls
from shared_lib.channels.secrets import ChannelSecrets

SIGNATURE_HEADER = "x-slack-signature"
TIMESTAMP_HEADER = "x-slack-request-timestamp"
RETRY_HEADER = "x-slack-retry-num"
ANSWERED_EVENTS = frozenset({"message", "app_mention"})
ANSWERED_SUBTYPES = frozenset({"thread_broadcast"})

_ANGLE = re.compile(r"<([^<>]*)>")


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class SlackEvent(_Model):
    type: str = Field(min_length=1, max_length=64)
    user: ProviderId | None = None
    text: str = Field(default="", max_length=200_000)
    channel: ProviderId | None = None
    channel_type: str | None = None
    ts: ProviderId | None = None
    thread_ts: ProviderId | None = None
    subtype: str | None = None
    bot_id: str | None = None
    hidden: bool = False
    team: str | None = None


class SlackAuthorization(_Model):
    user_id: str | None = None
    is_bot: bool = False


class SlackEnvelope(_Model):
    type: str = Field(min_length=1, max_length=64)
    challenge: str | None = Field(default=None, max_length=1024)
    team_id: str | None = None
    event_id: ProviderId | None = None
    # Only the events we answer are validated in full: others (user_change, channel_created,
    # ...) carry objects where a message carries ids, and must still be acknowledged with 200.
    event: dict[str, Any] | None = None
    authorizations: list[SlackAuthorization] = Field(default_factory=list, max_length=100)


class SlackAction(_Model):
    value: str | None = Field(default=None, max_length=2000)
    action_ts: ProviderId | None = None


class SlackInteraction(_Model):
    """What Slack posts when a person presses a button (``block_actions``)."""

    type: str = Field(min_length=1, max_length=64)
    trigger_id: ProviderId
    team: dict[str, Any] | None = None
    user: dict[str, Any]
    channel: dict[str, Any] | None = None
    container: dict[str, Any] = Field(default_factory=dict)
    actions: list[SlackAction] = Field(default_factory=list, max_length=25)


FORM = "application/x-www-form-urlencoded"
CONTENT_TYPES = frozenset({"application/json", FORM})


def decode(body: bytes, content_type: str) -> Any:
    """The delivery as JSON: an interaction's form carries it in its one ``payload`` field."""
    if content_type.split(";")[0].strip().lower() != FORM:
        return json.loads(body)
    fields = parse_qs(body.decode("utf-8"), strict_parsing=True, max_num_fields=10)
    payload = fields.get("payload") or []
    if len(payload) != 1:
        raise ValueError("an interaction carries one payload field")
    return json.loads(payload[0])


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The ``X-Slack-Signature`` value for ``body`` sent at ``timestamp``."""
    base = b"v0:" + timestamp.encode("utf-8", "surrogatepass") + b":" + body
    return "v0=" + hmac_sha256(secret.encode("utf-8", "surrogatepass"), base).hex()


def verify(
    headers: Mapping[str, str],
    query: Mapping[str, str],
    body: bytes,
    secrets: ChannelSecrets,
    now: datetime,
    config: IngressConfig,
) -> str | None:
    """``None`` when the body is signed by an active secret within the replay window."""
    provided = headers.get(SIGNATURE_HEADER, "").strip()
    timestamp = headers.get(TIMESTAMP_HEADER, "").strip()
    if not provided or not timestamp:
        return "missing_signature"
    if not timestamp_fresh(timestamp, now, config.replay_window_seconds):
        return "stale_timestamp"
    active = secrets.webhook_secrets("slack")
    if not active:
        return "no_secret_configured"
    return None if matches_any([sign(s, timestamp, body) for s in active], provided) else "bad_signature"


def clean_text(text: str, bot_ids: set[str]) -> tuple[str, bool]:
    """Slack markup resolved to plain text, and whether the bot was mentioned."""
    mentioned = False

    def resolve(match: re.Match[str]) -> str:
        nonlocal mentioned
        target, _, label = match.group(1).partition("|")
        if target.startswith("@"):
            if target[1:] in bot_ids:
                mentioned = True
                return ""
            return f"@{label or target[1:]}"
        if target.startswith("#"):
            return f"#{label or target[1:]}"
        if target.startswith("!"):
            name = label or target[1:].split("^")[0]
            return name if name.startswith("@") else f"@{name}"
        return target if not label or label == target else f"{label} ({target})"

    plain = _ANGLE.sub(resolve, text)
    plain = plain.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return re.sub(r"[ \t]{2,}", " ", without_controls(plain)).strip(), mentioned


def _bot_ids(envelope: SlackEnvelope, config: IngressConfig) -> set[str]:
    if config.bots.slack_user_id:
        return {config.bots.slack_user_id}
    return {a.user_id for a in envelope.authorizations if a.is_bot and a.user_id}


def _ignore_reason(event: SlackEvent, bots: set[str], config: IngressConfig) -> str | None:
    if event.bot_id:
        return "bot_message"
    if event.subtype and event.subtype not in ANSWERED_SUBTYPES:
        return f"subtype:{event.subtype}"
    if event.hidden:
        return "hidden_message"
    if event.user is None:
        return "unknown_sender"
    if event.user in bots:
        return "own_message"
    mentions_bot = any(f"<@{b}>" in event.text or f"<@{b}|" in event.text for b in bots)
    if (
        event.type == "message"
        and event.channel_type != "im"
        and mentions_bot
        and config.slack_app_mention_subscribed
    ):
        return "duplicate_of_app_mention"
    return None


def parse(
    payload: dict[str, Any],
    headers: Mapping[str, str],
    config: IngressConfig,
    now: datetime,
    tenant: str | None = None,
) -> ProviderResult:
    """Normalise one verified Slack delivery (or answer its ``url_verification``)."""
    try:
        envelope = SlackEnvelope.model_validate(payload)
    except ValidationError as exc:
        raise PayloadError.from_validation("invalid_slack_payload", exc) from exc
    if envelope.type == "url_verification":
        if envelope.challenge is None:
            raise PayloadError("invalid_slack_payload", [{"loc": "challenge", "msg": "Field required"}])
        return ProviderResult(ignored=["url_verification"], response={"challenge": envelope.challenge})
    if envelope.type == "block_actions":
        return _interaction(payload, config, now)
    if envelope.type != "event_callback":
        return ProviderResult(ignored=[f"unsupported_envelope:{envelope.type}"])
    if envelope.event is None or envelope.event_id is None:
        raise PayloadError("invalid_slack_payload", [{"loc": "event", "msg": "event and event_id required"}])
    kind = envelope.event.get("type")
    if kind not in ANSWERED_EVENTS:
        return ProviderResult(ignored=[f"unsupported_event:{str(kind)[:64]}"])
    try:
        event = SlackEvent.model_validate(envelope.event)
    except ValidationError as exc:
        raise PayloadError.from_validation("invalid_slack_payload", exc) from exc
    bots = _bot_ids(envelope, config)
    reason = _ignore_reason(event, bots, config)
    if reason:
        return ProviderResult(ignored=[reason])
    if event.channel is None or event.ts is None:
        raise PayloadError("invalid_slack_payload", [{"loc": "event", "msg": "channel and ts required"}])
    text, mentioned = clean_text(event.text, bots)
    if not text:
        return ProviderResult(ignored=["empty_text"])
    handle = {"channel": event.channel}
    reply_thread = event.thread_ts or (event.ts if event.channel_type != "im" else None)
    if reply_thread:
        handle["thread_ts"] = reply_thread
    team = envelope.team_id or event.team or ""
    message = build_message(
        channel="slack",
        org_id=config.org_for(config.orgs.slack_teams.get(team)),
        room_id=event.channel,
        thread_id=event.thread_ts,
        user_id=event.user,
        text=text,
        message_id=event.ts,
        event_id=envelope.event_id,
        reply_handle=handle,
        addressed=event.type == "app_mention" or event.channel_type == "im" or mentioned,
        is_redelivery=headers.get(RETRY_HEADER, "0").strip() not in ("", "0"),
        received_at=now,
        sent_at=sent_time(_ts_seconds(event.ts)),
    )
    return ProviderResult(messages=[message])


def _ts_seconds(ts: str) -> float | None:
    """A Slack ``ts`` ("1732500000.123456") as seconds, ``None`` when it is not one."""
    try:
        return float(ts)
    except ValueError:
        return None


def _interaction(payload: dict[str, Any], config: IngressConfig, now: datetime) -> ProviderResult:
    """An approval button pressed: the text it stands for, answered where the button was."""
    try:
        data = SlackInteraction.model_validate(payload)
    except ValidationError as exc:
        raise PayloadError.from_validation("invalid_slack_payload", exc) from exc
    pressed = next(((a, t) for a in data.actions if (t := button_text(a.value))), None)
    if pressed is None:
        return ProviderResult(ignored=["unsupported_action"])
    action, text = pressed
    user, team = (
        str(data.user.get("id") or ""),
        str((data.team or {}).get("id") or data.user.get("team_id") or ""),
    )
    channel = str((data.channel or {}).get("id") or data.container.get("channel_id") or "")
    if not user or not channel:
        raise PayloadError("invalid_slack_payload", [{"loc": "user", "msg": "user and channel required"}])
    thread = data.container.get("thread_ts")
    handle = {"channel": channel, **({"thread_ts": str(thread)} if thread else {})}
    message = build_message(
        channel="slack",
        org_id=config.org_for(config.orgs.slack_teams.get(team)),
        room_id=channel,
        thread_id=str(thread) if thread else None,
        user_id=user,
        text=text,
        message_id=action.action_ts or data.trigger_id,
        event_id=data.trigger_id,
        reply_handle=handle,
        addressed=True,  # a button on the bot's own message
        is_redelivery=False,
        received_at=now,
    )
    return ProviderResult(messages=[message])
