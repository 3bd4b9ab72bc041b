"""Channels: webhooks in (ChatWork, LINE, Slack, plain HTTP), replies out.

Inbound, ``handle_webhook`` verifies a delivery against the provider's signature scheme,
checks size and schema, and normalises it to ``InboundMessage``s; ``dedupe_key`` names a
delivery for the ingress's exactly-once claim. Outbound, ``build_channels`` returns one
``Channel`` (``shared_lib.ports``) per provider.

>>> from datetime import UTC, datetime
>>> from shared_lib.channels import ChannelSecrets, IngressConfig, handle_webhook
>>> handle_webhook("slack", "GET", {}, {}, b"", secrets=ChannelSecrets.local_defaults(),
...                config=IngressConfig(), now=datetime.now(UTC)).status
405
"""

from shared_lib.channels.base import BotIdentities, IngressConfig, OrgRouting, PayloadError, split_text
from shared_lib.channels.clients import (
    ChatWorkChannel,
    ClientSettings,
    HttpChannel,
    LineChannel,
    SlackChannel,
    build_channels,
)
from shared_lib.channels.secrets import DEFAULT_LOCAL_SECRETS, ChannelSecrets
from shared_lib.channels.webhooks import WebhookOutcome, dedupe_key, handle_webhook

__all__ = [
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
