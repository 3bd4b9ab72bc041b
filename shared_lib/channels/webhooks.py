"""``handle_webhook``: one pure function from an HTTP delivery to what the ingress does.

The checks run in this order, and each stops the request:

=====  ==============================  ==========================================
 404   ``unknown_channel``             not one of chatwork, line, slack, http
 405   ``method_not_allowed``          anything but POST
 413   ``body_too_large``              ``Content-Length`` first, then the real length
 415   ``unsupported_media_type``      not the provider's ``Content-Type`` (below)
 401   ``missing_signature`` ...       the provider's signature (before any parsing)
 400   ``malformed_json`` ...          not JSON, or not the provider's schema
 403   ``org_mismatch`` ...            an organisation the credential or mapping does not give
 401   ``stale_event``                 a ChatWork/LINE event older than the dedupe window
 413   ``too_many_events``             more messages than ``max_events_per_delivery`` (20)
 400   ``callback_not_allowed``        a ``callback_url`` that is not public HTTPS (``callback_guard``)
 200   —                               messages to publish and/or ignored reasons
=====  ==============================  ==========================================

Content types: every provider posts JSON — ``application/json`` (a ``charset`` parameter,
if any, must be ``utf-8``): Slack's Events API, LINE, ChatWork and our plain HTTP; Slack's
interactivity (an approval button pressed) also posts ``application/x-www-form-urlencoded``
with the JSON in its ``payload`` field, verified over the raw body like any delivery. Anything else, or none, is 415 with
``{"ok": false, "error": "unsupported_media_type", "expected": [...]}``.

A 401 answers only ``{"ok": false, "error": "unauthorized"}``; the precise reason
(``bad_signature``, ``stale_timestamp``, ``stale_event``, ``no_secret_configured``) is in
``WebhookOutcome.rejection`` for the logs. A 400 names the offending fields.

>>> from datetime import UTC, datetime
>>> out = handle_webhook("teams", "POST", {}, {}, b"{}", secrets=ChannelSecrets.local_defaults(),
...                      config=IngressConfig(), now=datetime.now(UTC))
>>> out.status, out.rejection, out.messages
(404, 'unknown_channel', [])
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from shared_lib.channels import callback_guard, chatwork, http, line, slack
from shared_lib.channels.base import IngressConfig, PayloadError, ProviderResult, header_map
from shared_lib.channels.callback_guard import Resolver
from shared_lib.channels.secrets import ChannelSecrets
from shared_lib.observability.logs import log_event
from shared_lib.turn.inbound import InboundMessage

Verifier = Callable[
    [Mapping[str, str], Mapping[str, str], bytes, ChannelSecrets, datetime, IngressConfig], str | None
]
Authenticator = Callable[
    [Mapping[str, str], Mapping[str, str], bytes, ChannelSecrets, datetime, IngressConfig],
    http.Authentication,
]
Parser = Callable[[dict[str, Any], Mapping[str, str], IngressConfig, datetime, str | None], ProviderResult]
Decoder = Callable[[bytes, str], Any]
_CONTENT_LENGTH = re.compile(r"^[0-9]{1,20}$")
JSON_TYPES = frozenset({"application/json"})


def _by_mapping(verify: Verifier) -> Authenticator:
    """A provider whose organisation comes from the ingress mapping: the signature names none."""

    def authenticate(*args: Any) -> http.Authentication:
        return http.Authentication(rejection=verify(*args))

    return authenticate


def _json(body: bytes, content_type: str) -> Any:
    return json.loads(body)


@dataclass(frozen=True)
class Provider:
    authenticate: Authenticator
    parse: Parser
    content_types: frozenset[str] = JSON_TYPES
    decode: Decoder = _json


PROVIDERS: Mapping[str, Provider] = {
    "chatwork": Provider(_by_mapping(chatwork.verify), chatwork.parse),
    "line": Provider(_by_mapping(line.verify), line.parse),
    "slack": Provider(_by_mapping(slack.verify), slack.parse, slack.CONTENT_TYPES, slack.decode),
    "http": Provider(http.authenticate, http.parse),
}


def media_type_accepted(header: str, accepted: frozenset[str]) -> bool:
    """Whether a ``Content-Type`` is one of ``accepted`` (parameters ignored but ``charset=utf-8``).

    >>> media_type_accepted("application/json; charset=UTF-8", JSON_TYPES)
    True
    >>> media_type_accepted("text/plain", JSON_TYPES), media_type_accepted("application/json; charset=latin-1", JSON_TYPES)
    (False, False)
    """
    kind, *params = [part.strip().lower() for part in header.split(";")]
    if kind not in accepted:
        return False
    charsets = [
        p.partition("=")[2].strip().strip('"') for p in params if p.partition("=")[0].strip() == "charset"
    ]
    return all(c in ("utf-8", "utf8") for c in charsets)


class WebhookOutcome(BaseModel):
    """What the ingress answers, and what it publishes (after its own dedupe)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    status: int
    body: dict[str, Any]
    messages: list[InboundMessage] = Field(default_factory=list)
    ignored: list[str] = Field(default_factory=list)
    rejection: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)

    @classmethod
    def reject(
        cls,
        status: int,
        code: str,
        *,
        errors: list[dict[str, str]] | None = None,
        headers: dict[str, str] | None = None,
    ) -> WebhookOutcome:
        """A refused delivery; 401s do not tell the caller why."""
        body: dict[str, Any] = {"ok": False, "error": "unauthorized" if status == 401 else code}
        if errors:
            body["errors"] = errors
        return cls(status=status, body=body, rejection=code, headers=headers or {})

    @classmethod
    def accept(cls, result: ProviderResult) -> WebhookOutcome:
        """A verified delivery: 200, with the provider's required answer if it has one."""
        body = result.response or {
            "ok": True,
            "accepted": len(result.messages),
            "ignored": len(result.ignored),
        }
        return cls(status=200, body=body, messages=result.messages, ignored=result.ignored)


def dedupe_key(msg: InboundMessage) -> str:
    """The provider delivery's identity: the same event delivered twice has the same key."""
    return f"{msg.channel}:{msg.org_id}:{msg.event_id}"


def _declared_length(headers: Mapping[str, str]) -> int | None:
    raw = headers.get("content-length", "").strip()
    return int(raw) if _CONTENT_LENGTH.match(raw) else None


def handle_webhook(
    channel: str,
    method: str,
    headers: Mapping[str, str],
    query: Mapping[str, str],
    body: bytes,
    *,
    secrets: ChannelSecrets,
    config: IngressConfig,
    now: datetime,
    resolve: Resolver | None = None,
) -> WebhookOutcome:
    """Verify, check and normalise one webhook delivery. Never raises for any input.

    ``headers`` are matched case-insensitively; ``now`` must be timezone-aware; ``resolve``
    names the addresses of a ``callback_url``'s host (default: the system's resolver).
    """
    provider = PROVIDERS.get(channel)
    if provider is None:
        return WebhookOutcome.reject(404, "unknown_channel")
    if method.upper() != "POST":
        return WebhookOutcome.reject(405, "method_not_allowed", headers={"Allow": "POST"})
    lower = header_map(headers)
    declared = _declared_length(lower)
    if (declared is not None and declared > config.max_body_bytes) or len(body) > config.max_body_bytes:
        return WebhookOutcome.reject(413, "body_too_large")
    if not media_type_accepted(lower.get("content-type", ""), provider.content_types):
        outcome = WebhookOutcome.reject(415, "unsupported_media_type")
        return outcome.model_copy(
            update={"body": {**outcome.body, "expected": sorted(provider.content_types)}}
        )
    auth = provider.authenticate(lower, query, body, secrets, now, config)
    if auth.rejection is not None:
        return WebhookOutcome.reject(401, auth.rejection)
    try:
        payload = provider.decode(body, lower.get("content-type", ""))
    except (ValueError, RecursionError):
        return WebhookOutcome.reject(400, "malformed_json")
    if not isinstance(payload, dict):
        return WebhookOutcome.reject(400, "not_a_json_object")
    try:
        result = provider.parse(payload, lower, config, now, auth.org)
    except PayloadError as exc:
        return WebhookOutcome.reject(exc.status, exc.code, errors=exc.errors)
    if len(result.messages) > config.max_events_per_delivery:
        log_event(
            "webhook_too_many_events",
            layer="ingress",
            severity="WARNING",
            channel=channel,
            events=len(result.messages),
            limit=config.max_events_per_delivery,
        )
        return WebhookOutcome.reject(413, "too_many_events")
    for msg in result.messages:
        callback = msg.reply_handle.get("callback_url")
        if callback:
            try:
                callback_guard.check(str(callback), local=secrets.is_local, resolve=resolve)
            except callback_guard.CallbackRefused as exc:
                log_event("webhook_callback_refused", layer="ingress", severity="WARNING", reason=exc.reason)
                return WebhookOutcome.reject(400, "callback_not_allowed")
    kept: list[InboundMessage] = []
    for msg in result.messages:
        if not msg.addressed and config.only_when_addressed(msg.channel, msg.room_id):
            result.ignored.append("not_addressed")
        else:
            kept.append(msg)
    result.messages = kept
    return WebhookOutcome.accept(result)
