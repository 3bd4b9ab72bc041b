"""Channels: webhooks in (ChatWork, LINE, Slack, plain HTTP), replies out.

Inbound, ``handle_webhook`` verifies a delivery against the provider's signature scheme,
checks size and schema, and normalises it to ``InboundMessage``s; ``dedupe_key`` names a
delivery for the ingress's exactly-once claim. Outbound, ``build_channels`` returns one
``Channel`` (``shared_lib.ports``) per provider.

Hostile input (``webhooks`` lists every status):

* **Who.** The organisation of a delivery comes from its credential (a plain-HTTP tenant's
  secret, ``http``) or from the ingress mapping of the provider's own tenant ids (Slack
  team, LINE destination, ChatWork room or account: ``IngressConfig.orgs``), never from
  the message. A plain-HTTP body naming another organisation, or a person not in the
  tenant's directory, is refused 403 and publishes nothing.
* **What.** Each provider's ``Content-Type`` (415 otherwise), its schema (400), message
  text without control characters, bidi overrides or zero-width characters
  (``base.clean_text``), identifiers without control characters (400).
* **When (replays).** Slack and plain HTTP sign a timestamp: a delivery older than
  ``replay_window_seconds`` (300 s) is refused 401. ChatWork and LINE sign none, so a
  captured delivery stays valid; it is bounded by the event-id dedupe instead: the
  ingress keeps one record per ``(channel, org, event id)`` for ``DEDUPE_WINDOW``
  (365 days), so a replay inside the window is answered 200 and publishes no second turn,
  and an event whose own signed time (ChatWork ``webhook_event_time``, LINE
  ``timestamp``) is older than the window is refused 401 ``stale_event``.

>>> from datetime import UTC, datetime
>>> from shared_lib.channels import ChannelSecrets, IngressConfig, handle_webhook
>>> handle_webhook("slack", "GET", {}, {}, b"", secrets=ChannelSecrets.local_defaults(),
...                config=IngressConfig(), now=datetime.now(UTC)).status
405
"""

from typing import TYPE_CHECKING, Any

from shared_lib.channels.base import (
    DEDUPE_WINDOW,
    BotIdentities,
    IngressConfig,
    OrgRouting,
    PayloadError,
    split_text,
)
from shared_lib.channels.secrets import DEFAULT_LOCAL_SECRETS, ChannelSecrets

if TYPE_CHECKING:
    from shared_lib.channels.clients import (
        ChatWorkChannel,
        ClientSettings,
        HttpChannel,
        LineChannel,
        SlackChannel,
        build_channels,
    )
    from shared_lib.channels.webhooks import WebhookOutcome, dedupe_key, handle_webhook

# The reply clients and the webhook readers are imported on first use (PEP 562): a process that
# only names a channel's configuration (every target's composition root) or its secrets does not
# hold the providers' clients, which only the stages that send or read webhooks use.
_LAZY = {
    "ChatWorkChannel": "clients",
    "ClientSettings": "clients",
    "HttpChannel": "clients",
    "LineChannel": "clients",
    "SlackChannel": "clients",
    "build_channels": "clients",
    "WebhookOutcome": "webhooks",
    "dedupe_key": "webhooks",
    "handle_webhook": "webhooks",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEDUPE_WINDOW",
    "DEFAULT_LOCAL_SECRETS",
    "BotIdentities",
    "ChannelSecrets",
    "ChatWorkChannel",
    "ClientSettings",
    "HttpChannel",
    "IngressConfig",
    "LineChannel",
    "OrgRouting",
    "PayloadError",
    "SlackChannel",
    "WebhookOutcome",
    "build_channels",
    "dedupe_key",
    "handle_webhook",
    "split_text",
]
