"""ChatWork webhooks: verification, payload schema and normalisation.

Signature: ``X-ChatWorkWebhookSignature`` (or the query parameter
``chatwork_webhook_signature``) is ``base64(HMAC-SHA256(key=base64decode(token), body))``.
ChatWork signs no timestamp header, so a captured delivery replays as long as its event id
is remembered (the dedupe window, ``base.DEDUPE_WINDOW``): a replay inside it is a
duplicate; one older than it (by the signed ``webhook_event_time``) is refused (401).

Organisation: the room (``orgs.chatwork_rooms``) or the account webhook's owner
(``orgs.chatwork_accounts``) — never the message text.

Events: ``mention_to_me`` (account webhook: ``from_account_id``/``to_account_id``) and
``message_created`` (room webhook: ``account_id``) are answered; ``message_updated``
(an edit) and unknown types are ignored, as are the bot's own messages.

Mentions: ChatWork's composer inserts ``[To:123]山田さん`` or ``[rp aid=123 to=456-789]山田さん``
(usually followed by a line break). The tags and the name after them are removed from
the text; ``[info]``, ``[qt]`` and other markup stay as text. The name is the text after
the tag up to ``さん``/``様`` on the same line; without an honorific, the rest of the line
counts as the name only when more lines follow (a one-line ``[To:1] hello`` keeps ``hello``).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from shared_lib.channels.base import (
    IngressConfig,
    PayloadError,
    ProviderId,
    ProviderResult,
    build_message,
    clean_text,
    event_too_old,
    hmac_sha256,
    matches_any,
    sent_time,
)
from shared_lib.channels.secrets import ChannelSecrets

SIGNATURE_HEADER = "x-chatworkwebhooksignature"
SIGNATURE_QUERY = "chatwork_webhook_signature"
ANSWERED_EVENTS = frozenset({"mention_to_me", "message_created"})

_TAG = re.compile(r"\[To:(\d+)\]|\[(?:rp|返信) aid=(\d+) to=\d+-\d+\]|\[toall\]", re.IGNORECASE)
_LEADING_TAGS = re.compile(rf"^\s*(?:(?:{_TAG.pattern})\s*)+", re.IGNORECASE)
# A display name: short, on one line, without sentence punctuation, ended by an honorific.
_HONORIFIC = re.compile(r"^[^\n、。，．！？!?,.]{0,40}?(?:さん|様)")


class ChatWorkEvent(BaseModel):
    """``webhook_event``: room webhooks send ``account_id``, account webhooks ``from_/to_account_id``."""

    model_config = ConfigDict(extra="ignore")

    message_id: ProviderId
    room_id: ProviderId
    account_id: ProviderId | None = None
    from_account_id: ProviderId | None = None
    to_account_id: ProviderId | None = None
    body: str = Field(max_length=200_000)
    send_time: int | None = None
    update_time: int | None = None

    @model_validator(mode="after")
    def _has_sender(self) -> ChatWorkEvent:
        if self.sender is None:
            raise ValueError("webhook_event needs account_id or from_account_id")
        return self

    @property
    def sender(self) -> str | None:
        return self.account_id or self.from_account_id


class ChatWorkPayload(BaseModel):
    model_config = ConfigDict(extra="ignore")

    webhook_setting_id: ProviderId | None = None
    webhook_event_type: str = Field(min_length=1, max_length=64)
    webhook_event_time: int | None = Field(default=None, ge=0, le=10**11)
    webhook_event: dict[str, Any]  # validated as ``ChatWorkEvent`` only for the events we answer


def _signing_keys(tokens: tuple[str, ...]) -> list[bytes]:
    keys = []
    for token in tokens:
        try:
            keys.append(base64.b64decode(token, validate=True))
        except (binascii.Error, ValueError):
            continue  # a token that is not base64 can verify nothing: skip it, fail closed
    return keys


def sign(token: str, body: bytes) -> str:
    """The signature ChatWork sends for ``body`` under webhook ``token``."""
    return base64.b64encode(hmac_sha256(base64.b64decode(token), body)).decode("ascii")


def verify(
    headers: Mapping[str, str],
    query: Mapping[str, str],
    body: bytes,
    secrets: ChannelSecrets,
    now: datetime,
    config: IngressConfig,
) -> str | None:
    """``None`` when the body is signed by an active token, else a rejection code."""
    header = headers.get(SIGNATURE_HEADER, "").strip()
    # A query string decoded as form data turns an unescaped "+" of base64 into a space, and
    # base64 may start with "+": restore the "+" before trimming, never after.
    provided = header or query.get(SIGNATURE_QUERY, "").replace(" ", "+").strip()
    if not provided:
        return "missing_signature"
    keys = _signing_keys(secrets.webhook_secrets("chatwork"))
    if not keys:
        return "no_secret_configured"
    expected = [base64.b64encode(hmac_sha256(key, body)).decode("ascii") for key in keys]
    return None if matches_any(expected, provided) else "bad_signature"


def strip_addressing(body: str) -> tuple[str, set[str]]:
    """The message text without To/reply/toall tags and names, and the account ids addressed."""
    addressed: set[str] = set()
    lines = body.splitlines()
    out: list[str] = []
    for index, line in enumerate(lines):
        match = _LEADING_TAGS.match(line)
        if match:
            addressed.update(_ids(match.group(0)))
            rest = line[match.end() :]
            honorific = _HONORIFIC.match(rest)
            if honorific:
                rest = rest[honorific.end() :]
            elif index < len(lines) - 1:
                rest = ""  # the rest of a tag line is the addressee's name
            line = rest.lstrip()
        addressed.update(_ids(line))
        out.append(_TAG.sub("", line))
    return "\n".join(out).strip(), addressed


def _ids(text: str) -> set[str]:
    return {to or rp for to, rp in _TAG.findall(text) if to or rp}


def parse(
    payload: dict[str, Any],
    headers: Mapping[str, str],
    config: IngressConfig,
    now: datetime,
    tenant: str | None = None,
) -> ProviderResult:
    """Normalise one verified ChatWork delivery (one event per delivery)."""
    try:
        data = ChatWorkPayload.model_validate(payload)
    except ValidationError as exc:
        raise PayloadError.from_validation("invalid_chatwork_payload", exc) from exc
    when = data.webhook_event_time
    if event_too_old(datetime.fromtimestamp(when, UTC) if when is not None else None, now):
        raise PayloadError("stale_event", status=401)
    kind = data.webhook_event_type
    if kind == "message_updated":
        return ProviderResult(ignored=["edited_message"])
    if kind not in ANSWERED_EVENTS:
        return ProviderResult(ignored=[f"unsupported_event:{kind}"])
    try:
        event = ChatWorkEvent.model_validate(data.webhook_event)
    except ValidationError as exc:
        raise PayloadError.from_validation("invalid_chatwork_payload", exc) from exc
    bots = set(config.chatwork_bot_ids())
    if kind == "mention_to_me" and event.to_account_id:
        bots.add(event.to_account_id)  # the owner of an account webhook is the bot
    sender = event.sender or ""
    if sender in bots:
        return ProviderResult(ignored=["own_message"])
    text, addressed_ids = strip_addressing(clean_text(event.body))
    if not text:
        return ProviderResult(ignored=["empty_text"])
    routing = config.orgs
    org = routing.chatwork_rooms.get(event.room_id) or routing.chatwork_accounts.get(
        event.to_account_id or ""
    )
    message = build_message(
        channel="chatwork",
        org_id=config.org_for(org),
        room_id=event.room_id,
        user_id=sender,
        text=text,
        message_id=event.message_id,
        event_id=f"{kind}:{event.message_id}",
        reply_handle={"room_id": event.room_id, "account_id": sender, "message_id": event.message_id},
        addressed=kind == "mention_to_me" or bool(addressed_ids & bots),
        received_at=now,
        sent_at=sent_time(event.send_time),
    )
    return ProviderResult(messages=[message])
