"""Our own plain-HTTP channel: tenants, authentication, body schema and normalisation.

Tenants: the caller is an organisation. ``HTTP_WEBHOOK_TENANTS`` (a secret) is JSON
``{"org": ["secret", ...]}`` — each organisation its own credentials, newest first; during a
rotation both are listed and either is accepted. A request authenticated by an
organisation's secret acts for that organisation only: a body naming another ``org_id`` is
refused (403 ``org_mismatch``); without ``org_id`` it is the tenant's. The ingress then
maps ``user_id`` through that organisation's directory (``orgs/{org}/users``): a person the
tenant does not have is refused (403 ``unknown_user``) and no turn is published; the
display name is the directory's, never the body's.

``HTTP_WEBHOOK_SECRET`` (one shared secret, which also signs our replies when the
organisation has no tenant secret) authenticates inbound requests **only on an explicit local stack**
(``CHARTER_ENV`` said local, test or demo; unset is not local): there it is the developer's operator
credential and may name any ``org_id`` — still subject to the directory. In a deployed
environment it authenticates nothing.

Authentication — either of (checked against every active secret):

1. ``Authorization: Bearer <secret>`` — simple, for trusted callers over TLS.
2. ``X-Charter-Timestamp: <unix seconds>`` and
   ``X-Charter-Signature: sha256=<hex HMAC-SHA256(secret, f"{timestamp}.{body}")>`` —
   the secret never travels; the timestamp must be within 300 s of the server's clock.

   >>> import hmac, hashlib
   >>> body = b'{"event_id": "e1", "org_id": "acme", "room_id": "r", "user_id": "u", "text": "hi"}'
   >>> digest = hmac.new(b"secret", b"1700000000." + body, hashlib.sha256).hexdigest()
   >>> headers = {"X-Charter-Timestamp": "1700000000", "X-Charter-Signature": f"sha256={digest}"}

Body (``Content-Type: application/json``; ours, unknown fields rejected)::

    {"event_id": str, "org_id"?: str (the tenant's), "room_id": str, "user_id": str,
     "user_name"?: str (ignored: the directory names people), "text": str (1..8000),
     "message_id"?: str (default event_id), "thread_id"?: str,
     "callback_url"?: str (http/https), "addressed"?: bool (default true)}

Identifiers may not contain ``/`` or control characters (400).

Replies go to ``callback_url`` when given (and allowed, see ``clients.HttpChannel``) or to
``CHARTER_HTTP_REPLY_URL``; they carry the same ``X-Charter-*`` signature, made with the
organisation's newest tenant secret (else ``HTTP_WEBHOOK_SECRET``), so the receiver can
verify them.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from shared_lib.channels.base import (
    ID_PATTERN,
    IngressConfig,
    OrgId,
    PayloadError,
    ProviderResult,
    build_message,
    clean_text,
    matches_any,
    sent_time,
    timestamp_fresh,
)
from shared_lib.channels.secrets import ChannelSecrets
from shared_lib.turn.inbound import MAX_TEXT_CHARS

SIGNATURE_HEADER = "x-charter-signature"
TIMESTAMP_HEADER = "x-charter-timestamp"
Ident = Annotated[str, Field(min_length=1, max_length=256, pattern=ID_PATTERN)]
ANY_ORG = "*"  # what the local-only shared secret may act for


class HttpInbound(BaseModel):
    """The plain-HTTP channel's body (ours: strict types, unknown fields rejected)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    event_id: Ident
    org_id: OrgId | None = None
    room_id: Ident
    user_id: Ident
    user_name: Annotated[str, Field(max_length=256)] | None = None
    text: Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS)]
    message_id: Ident | None = None
    thread_id: Ident | None = None
    callback_url: Annotated[str, Field(max_length=2048)] | None = None
    addressed: bool = True
    sent_at: float | None = None  # when the sender sent it, seconds since the epoch (typing order)

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


@dataclass(frozen=True)
class Authentication:
    """What a request's credential proves: ``org`` (a tenant, or ``ANY_ORG``) or a rejection."""

    org: str | None = None
    rejection: str | None = None


def _credentials(secrets: ChannelSecrets) -> list[tuple[str, str]]:
    """Every (organisation, secret) that authenticates an inbound request."""
    found = [(org, secret) for org, values in secrets.http_tenants.items() for secret in values]
    if secrets.is_local:
        found += [(ANY_ORG, secret) for secret in secrets.webhook_secrets("http")]
    return found


def _match(candidates: list[tuple[str, str]], provided: str) -> str | None:
    """The organisation whose value equals ``provided``; every candidate is compared (no early exit)."""
    matched = None
    for org, value in candidates:
        if matches_any([value], provided):
            matched = matched or org
    return matched


def authenticate(
    headers: Mapping[str, str],
    query: Mapping[str, str],
    body: bytes,
    secrets: ChannelSecrets,
    now: datetime,
    config: IngressConfig,
) -> Authentication:
    """The organisation a bearer secret or a fresh signature authenticates, else a rejection."""
    authorization = headers.get("authorization", "").strip()
    signature = headers.get(SIGNATURE_HEADER, "").strip()
    timestamp = headers.get(TIMESTAMP_HEADER, "").strip()
    scheme, _, token = authorization.partition(" ")
    bearer = token.strip() if scheme.lower() == "bearer" else ""
    if not bearer and not signature:
        return Authentication(rejection="missing_signature")
    credentials = _credentials(secrets)
    if not credentials:
        return Authentication(rejection="no_secret_configured")
    if bearer and (org := _match(credentials, bearer)):
        return Authentication(org=org)
    if signature:
        if not timestamp_fresh(timestamp, now, config.replay_window_seconds):
            return Authentication(rejection="stale_timestamp")
        signed = [(org, sign(secret, timestamp, body)) for org, secret in credentials]
        if org := _match(signed, signature):
            return Authentication(org=org)
    return Authentication(rejection="bad_signature")


def verify(
    headers: Mapping[str, str],
    query: Mapping[str, str],
    body: bytes,
    secrets: ChannelSecrets,
    now: datetime,
    config: IngressConfig,
) -> str | None:
    """``None`` when a tenant's (or, locally, the shared) secret checks out, else a rejection code."""
    return authenticate(headers, query, body, secrets, now, config).rejection


def parse(
    payload: dict[str, Any],
    headers: Mapping[str, str],
    config: IngressConfig,
    now: datetime,
    tenant: str | None = None,
) -> ProviderResult:
    """Normalise one verified plain-HTTP message of ``tenant`` (the authenticated organisation)."""
    try:
        data = HttpInbound.model_validate(payload)
    except ValidationError as exc:
        raise PayloadError.from_validation("invalid_http_payload", exc) from exc
    if tenant is None:  # parse is only reached after authenticate: fail closed all the same
        raise PayloadError("no_tenant", status=403)
    if tenant == ANY_ORG:
        org = data.org_id or config.default_org
    elif data.org_id not in (None, tenant):
        raise PayloadError("org_mismatch", status=403)
    else:
        org = tenant
    text = clean_text(data.text)
    if not text.strip():
        return ProviderResult(ignored=["empty_text"])
    message = build_message(
        channel="http",
        org_id=org,
        room_id=data.room_id,
        thread_id=data.thread_id,
        user_id=data.user_id,
        user_name=data.user_name,
        text=text,
        message_id=data.message_id or data.event_id,
        event_id=data.event_id,
        reply_handle={"callback_url": data.callback_url} if data.callback_url else {},
        addressed=data.addressed,
        received_at=now,
        sent_at=sent_time(data.sent_at),
    )
    return ProviderResult(messages=[message])
