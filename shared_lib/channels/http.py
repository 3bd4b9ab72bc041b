"""Our own plain-HTTP channel: authentication, body schema and normalisation.

Authentication — either of (checked against every active ``HTTP_WEBHOOK_SECRET``):

1. ``Authorization: Bearer <secret>`` — simple, for trusted callers over TLS.
2. ``X-Charter-Timestamp: <unix seconds>`` and
   ``X-Charter-Signature: sha256=<hex HMAC-SHA256(secret, f"{timestamp}.{body}")>`` —
   the secret never travels; the timestamp must be within 300 s of the server's clock.

   >>> import hmac, hashlib
   >>> body = b'{"event_id": "e1", "org_id": "acme", "room_id": "r", "user_id": "u", "text": "hi"}'
   >>> digest = hmac.new(b"secret", b"1700000000." + body, hashlib.sha256).hexdigest()
   >>> headers = {"X-Charter-Timestamp": "1700000000", "X-Charter-Signature": f"sha256={digest}"}

Body (JSON, ours, unknown fields rejected)::

    {"event_id": str, "org_id": str, "room_id": str, "user_id": str, "user_name"?: str,
     "text": str (1..8000), "message_id"?: str (default event_id), "thread_id"?: str,
     "callback_url"?: str (http/https), "addressed"?: bool (default true)}

Replies go to ``callback_url`` when given (and allowed, see ``clients.HttpChannel``) or to
``CHARTER_HTTP_REPLY_URL``; they carry the same ``X-Charter-*`` signature so the receiver
can verify them.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from shared_lib.channels.base import (
    IngressConfig,
    OrgId,
    PayloadError,
    ProviderResult,
    build_message,
    matches_any,
    timestamp_fresh,
)
from shared_lib.channels.secrets import ChannelSecrets
from shared_lib.inbound import MAX_TEXT_CHARS

SIGNATURE_HEADER = "x-charter-signature"
TIMESTAMP_HEADER = "x-charter-timestamp"
Ident = Annotated[str, Field(min_length=1, max_length=256)]


class HttpInbound(BaseModel):
    """The plain-HTTP channel's body (ours: strict types, unknown fields rejected)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    event_id: Ident
    org_id: OrgId
    room_id: Ident
    user_id: Ident
    user_name: Annotated[str, Field(max_length=256)] | None = None
    text: Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS)]
    message_id: Ident | None = None
    thread_id: Ident | None = None
    callback_url: Annotated[str, Field(max_length=2048)] | None = None
    addressed: bool = True

    @field_validator("callback_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None:
            parts = urlsplit(value)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError("callback_url must be an http(s) URL")
        return value


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The ``X-Charter-Signature`` value for ``body`` sent at ``timestamp``."""
    key = secret.encode("utf-8", "surrogatepass")
    digest = hmac.new(key, timestamp.encode("utf-8", "surrogatepass") + b"." + body, hashlib.sha256)
    return f"sha256={digest.hexdigest()}"


def verify(
    headers: Mapping[str, str],
    query: Mapping[str, str],
    body: bytes,
    secrets: ChannelSecrets,
    now: datetime,
    config: IngressConfig,
) -> str | None:
    """``None`` when a bearer secret or a fresh signature checks out, else a rejection code."""
    authorization = headers.get("authorization", "").strip()
    signature = headers.get(SIGNATURE_HEADER, "").strip()
    timestamp = headers.get(TIMESTAMP_HEADER, "").strip()
    scheme, _, token = authorization.partition(" ")
    bearer = token.strip() if scheme.lower() == "bearer" else ""
    if not bearer and not signature:
        return "missing_signature"
    active = secrets.webhook_secrets("http")
    if not active:
        return "no_secret_configured"
    if bearer and matches_any(active, bearer):
        return None
    if signature:
        if not timestamp_fresh(timestamp, now, config.replay_window_seconds):
            return "stale_timestamp"
        if matches_any([sign(s, timestamp, body) for s in active], signature):
            return None
    return "bad_signature"


def parse(
    payload: dict[str, Any], headers: Mapping[str, str], config: IngressConfig, now: datetime
) -> ProviderResult:
    """Normalise one verified plain-HTTP message."""
    try:
        data = HttpInbound.model_validate(payload)
    except ValidationError as exc:
        raise PayloadError.from_validation("invalid_http_payload", exc) from exc
    if not data.text.strip():
        return ProviderResult(ignored=["empty_text"])
    message = build_message(
        channel="http",
        org_id=data.org_id,
        room_id=data.room_id,
        thread_id=data.thread_id,
        user_id=data.user_id,
        user_name=data.user_name,
        text=data.text,
        message_id=data.message_id or data.event_id,
        event_id=data.event_id,
        reply_handle={"callback_url": data.callback_url} if data.callback_url else {},
        addressed=data.addressed,
        received_at=now,
    )
    return ProviderResult(messages=[message])
