"""The channels' settings: webhook verification (ingress) and replies (responder).

A base of ``Settings`` (``shared_lib.settings.model``), declared with the same field helper
and read by the same sources; only the settings model reads the environment. What they mean,
and which are taken only on an explicit local stack: ``shared_lib.channels.secrets``.
"""

from __future__ import annotations

from pydantic import SecretStr

from shared_lib.settings.fields import _f
from shared_lib.settings.memory import MemorySettings

REPLY_TARGETS = ("context", "executor", "responder", "observer", "admin")


class ChannelSettings(MemorySettings):
    # -- channels: webhook verification (ingress) and replies (responder)
    ingress_config: str | None = _f(
        None,
        "CHARTER_INGRESS_CONFIG",
        targets=("ingress",),
        doc="inline JSON or a file path (org routing, bot ids)",
    )
    chatwork_webhook_token: SecretStr | None = _f(
        None, "CHATWORK_WEBHOOK_TOKEN", targets=("ingress",), deploy="secret"
    )
    line_channel_secret: SecretStr | None = _f(
        None, "LINE_CHANNEL_SECRET", targets=("ingress",), deploy="secret"
    )
    slack_signing_secret: SecretStr | None = _f(
        None, "SLACK_SIGNING_SECRET", targets=("ingress",), deploy="secret"
    )
    http_webhook_secret: SecretStr | None = _f(
        None, "HTTP_WEBHOOK_SECRET", targets=("ingress", "responder"), deploy="secret"
    )
    http_webhook_tenants: SecretStr | None = _f(  # JSON {org: [secrets]}: shared_lib.channels.secrets
        None, "HTTP_WEBHOOK_TENANTS", targets=("ingress", "responder"), deploy="secret"
    )
    chatwork_api_token: SecretStr | None = _f(
        None,
        "CHATWORK_API_TOKEN",
        targets=REPLY_TARGETS,
        deploy="secret",
    )
    line_channel_access_token: SecretStr | None = _f(
        None, "LINE_CHANNEL_ACCESS_TOKEN", targets=("responder",), deploy="secret"
    )
    slack_bot_token: SecretStr | None = _f(None, "SLACK_BOT_TOKEN", targets=("responder",), deploy="secret")
    chatwork_api_base: str = _f("https://api.chatwork.com/v2", "CHATWORK_API_BASE")
    chatwork_tasks_api_base: str | None = _f(None, "CHATWORK_TASKS_API_BASE", targets=("executor",))
    line_api_base: str = _f("https://api.line.me", "LINE_API_BASE", targets=("responder",))
    slack_api_base: str = _f("https://slack.com/api", "SLACK_API_BASE", targets=("responder",))
    http_reply_url: str | None = _f(None, "CHARTER_HTTP_REPLY_URL", targets=("responder",))
    http_callback_hosts: str | None = _f(None, "CHARTER_HTTP_CALLBACK_HOSTS", targets=("responder",))
