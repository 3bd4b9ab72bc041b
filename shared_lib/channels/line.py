"""LINE Messaging API webhooks: verification, payload schema and normalisation.

Signature: ``X-Line-Signature`` is ``base64(HMAC-SHA256(key=channel secret, body))``.
LINE signs no timestamp header, so a captured delivery replays as long as its
``webhookEventId`` is remembered (the dedupe window, ``base.DEDUPE_WINDOW``): a replay
inside it is a duplicate; an event older than it (by its signed ``timestamp``) is
refused (401).

Organisation: ``destination`` (the bot) through ``orgs.line_destinations`` — never the text.

A delivery carries ``destination`` (the bot's user id) and zero or more ``events`` (the
console's "Verify" button sends none). Text messages are answered, and so is a ``postback``
of an approval button (``data`` ``approve:J-…`` / ``deny:J-…``), as the text 「承認 J-…」 /
「却下 J-…」 (``base.button_text``; a button on the bot's own message is addressed); other
event types (follow, join, unsend, ...), other postbacks, non-text messages, events in
``standby`` mode and messages whose sender LINE does not reveal are ignored.

Addressing: a 1:1 chat (source ``user``) is always addressed; in a group or room the
bot must be mentioned (``mentionee.isSelf`` or the bot's user id). The bot's mention is
cut out of the text; ``index``/``length`` are read as UTF-16 code units (as LINE's apps
count), falling back to code points, and only a span that starts with ``@`` is cut.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shared_lib.channels.base import (
    IngressConfig,
    PayloadError,
    ProviderId,
    ProviderResult,
    build_message,
    button_text,
    clean_text,
    event_too_old,
    hmac_sha256,
    matches_any,
    sent_time,
)
from shared_lib.channels.secrets import ChannelSecrets
from shared_lib.turn.inbound import InboundMessage

SIGNATURE_HEADER = "x-line-signature"


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class LineSource(_Model):
    type: Literal["user", "group", "room"]
    user_id: ProviderId | None = Field(default=None, alias="userId")
    group_id: ProviderId | None = Field(default=None, alias="groupId")
    room_id: ProviderId | None = Field(default=None, alias="roomId")


class LineMentionee(_Model):
    index: int = Field(ge=0)
    length: int = Field(ge=1)
    type: str | None = None
    user_id: str | None = Field(default=None, alias="userId")
    is_self: bool = Field(default=False, alias="isSelf")


class LineMention(_Model):
    mentionees: list[LineMentionee] = Field(default_factory=list, max_length=100)


class LineMessage(_Model):
    type: str = Field(min_length=1, max_length=64)
    id: ProviderId
    text: str | None = Field(default=None, max_length=100_000)
    mention: LineMention | None = None


class LineDeliveryContext(_Model):
    is_redelivery: bool = Field(default=False, alias="isRedelivery")


class LineEvent(_Model):
    type: str = Field(min_length=1, max_length=64)
    mode: str | None = None
    timestamp: int | None = Field(default=None, ge=0, le=10**14)  # milliseconds
    webhook_event_id: ProviderId = Field(alias="webhookEventId")
    delivery_context: LineDeliveryContext = Field(
        default_factory=LineDeliveryContext, alias="deliveryContext"
    )
    # Validated as ``LineSource``/``LineMessage`` only for message events: other event
    # types (and future ones) are acknowledged whatever they carry.
    source: dict[str, Any] | None = None
    reply_token: str | None = Field(default=None, alias="replyToken", max_length=256)
    message: dict[str, Any] | None = None
    postback: dict[str, Any] | None = None


class LinePayload(_Model):
    destination: str = Field(min_length=1, max_length=256)
    events: list[LineEvent] = Field(max_length=1000)


def sign(secret: str, body: bytes) -> str:
    """The signature LINE sends for ``body`` under ``secret``."""
    return base64.b64encode(hmac_sha256(secret.encode("utf-8", "surrogatepass"), body)).decode("ascii")


def verify(
    headers: Mapping[str, str],
    query: Mapping[str, str],
    body: bytes,
    secrets: ChannelSecrets,
    now: datetime,
    config: IngressConfig,
) -> str | None:
    """``None`` when the body is signed by an active channel secret, else a rejection code."""
    provided = headers.get(SIGNATURE_HEADER, "").strip()
    if not provided:
        return "missing_signature"
    active = secrets.webhook_secrets("line")
    if not active:
        return "no_secret_configured"
    return None if matches_any([sign(s, body) for s in active], provided) else "bad_signature"


def _span(text: str, index: int, length: int) -> tuple[int, int] | None:
    """Code-point span of a mention given in UTF-16 units (or code points); must start with "@"."""
    units = text.encode("utf-16-le", "surrogatepass")
    try:
        before = units[: index * 2].decode("utf-16-le")
        mention = units[index * 2 : (index + length) * 2].decode("utf-16-le")
        if mention.startswith("@") and (index + length) * 2 <= len(units):
            return len(before), len(before) + len(mention)
    except UnicodeDecodeError:
        pass  # the offsets cut a surrogate pair: they were not UTF-16 units
    if text[index : index + length].startswith("@") and index + length <= len(text):
        return index, index + length
    return None


def _without_bot_mentions(text: str, mention: LineMention | None, bots: set[str]) -> tuple[str, bool]:
    if mention is None:
        return text.strip(), False
    spans = []
    for m in mention.mentionees:
        if m.is_self or (m.user_id is not None and m.user_id in bots):
            spans.append(_span(text, m.index, m.length))
    for span in sorted((s for s in spans if s), reverse=True):
        text = text[: span[0]] + text[span[1] :]
    return text.strip(), bool(spans)


def _normalise(event: LineEvent, destination: str, config: IngressConfig, now: datetime) -> ProviderResult:
    if event.mode == "standby":
        return ProviderResult(ignored=["standby_mode"])
    if event.type == "postback":
        return _postback(event, destination, config, now)
    if event.type != "message":
        return ProviderResult(ignored=[f"non_message_event:{event.type}"])
    if event.message is None or event.source is None:
        raise PayloadError(
            "invalid_line_payload", [{"loc": "events.message", "msg": "message and source required"}]
        )
    try:
        content, source = LineMessage.model_validate(event.message), LineSource.model_validate(event.source)
    except ValidationError as exc:
        raise PayloadError.from_validation("invalid_line_payload", exc) from exc
    if content.type != "text" or content.text is None:
        return ProviderResult(ignored=["non_text_message"])
    bots = {b for b in (config.bots.line_user_id, destination) if b}
    if source.user_id is None:
        return ProviderResult(ignored=["unknown_sender"])
    if source.user_id in bots:
        return ProviderResult(ignored=["own_message"])
    text, mentioned = _without_bot_mentions(content.text, content.mention, bots)
    text = clean_text(text).strip()
    if not text:
        return ProviderResult(ignored=["empty_text"])
    message = _message(
        event, destination, config, now, source, text, content.id, source.type == "user" or mentioned
    )
    return ProviderResult(messages=[message])


def _message(
    event: LineEvent,
    destination: str,
    config: IngressConfig,
    now: datetime,
    source: LineSource,
    text: str,
    message_id: str,
    addressed: bool,
) -> InboundMessage:
    assert source.user_id is not None
    room = source.group_id or source.room_id or source.user_id
    handle = {"user_id": source.user_id, "to": room}
    if event.reply_token:
        handle["reply_token"] = event.reply_token
    if source.group_id:
        handle["group_id"] = source.group_id
    if source.room_id:
        handle["room_id"] = source.room_id
    return build_message(
        channel="line",
        org_id=config.org_for(config.orgs.line_destinations.get(destination)),
        room_id=room,
        user_id=source.user_id,
        text=text,
        message_id=message_id,
        event_id=event.webhook_event_id,
        reply_handle=handle,
        addressed=addressed,
        is_redelivery=event.delivery_context.is_redelivery,
        received_at=now,
        sent_at=sent_time(event.timestamp / 1000 if event.timestamp is not None else None),
    )


def _postback(event: LineEvent, destination: str, config: IngressConfig, now: datetime) -> ProviderResult:
    """An approval button pressed: the text it stands for, from the person who pressed it."""
    text = button_text(str((event.postback or {}).get("data") or ""))
    if text is None:
        return ProviderResult(ignored=["unsupported_postback"])
    try:
        source = LineSource.model_validate(event.source or {})
    except ValidationError as exc:
        raise PayloadError.from_validation("invalid_line_payload", exc) from exc
    bots = {b for b in (config.bots.line_user_id, destination) if b}
    if source.user_id is None:
        return ProviderResult(ignored=["unknown_sender"])
    if source.user_id in bots:
        return ProviderResult(ignored=["own_message"])
    # a postback has no message id: its event id names it (one press, one message)
    message = _message(event, destination, config, now, source, text, event.webhook_event_id, True)
    return ProviderResult(messages=[message])


def parse(
    payload: dict[str, Any],
    headers: Mapping[str, str],
    config: IngressConfig,
    now: datetime,
    tenant: str | None = None,
) -> ProviderResult:
    """Normalise every event of one verified LINE delivery."""
    try:
        data = LinePayload.model_validate(payload)
    except ValidationError as exc:
        raise PayloadError.from_validation("invalid_line_payload", exc) from exc
    for event in data.events:
        sent = datetime.fromtimestamp(event.timestamp / 1000, UTC) if event.timestamp is not None else None
        if event_too_old(sent, now):
            raise PayloadError("stale_event", status=401)
    result = ProviderResult()
    if not data.events:
        result.ignored.append("no_events")
    for event in data.events:
        one = _normalise(event, data.destination, config, now)
        result.messages.extend(one.messages)
        result.ignored.extend(one.ignored)
    return result
