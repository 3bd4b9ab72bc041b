"""Channel secrets and API settings, taken from the settings (``shared_lib.settings``).

Webhook secrets verify what the providers send us; API tokens authenticate our replies.

| variable                    | what it is                                                      |
|-----------------------------|-----------------------------------------------------------------|
| ``CHATWORK_WEBHOOK_TOKEN``  | the webhook token ChatWork shows (base64; the HMAC key decoded) |
| ``LINE_CHANNEL_SECRET``     | the LINE channel secret                                         |
| ``SLACK_SIGNING_SECRET``    | the Slack app's signing secret                                  |
| ``HTTP_WEBHOOK_SECRET``     | our own plain-HTTP channel's shared secret                      |
| ``CHATWORK_API_TOKEN``      | ``X-ChatWorkToken`` for replies                                 |
| ``LINE_CHANNEL_ACCESS_TOKEN`` | bearer token for LINE replies and pushes                      |
| ``SLACK_BOT_TOKEN``         | bearer token (``xoxb-...``) for ``chat.postMessage``            |
| ``CHATWORK_API_BASE`` / ``LINE_API_BASE`` / ``SLACK_API_BASE`` | API base URLs (fakes locally) |
| ``CHARTER_HTTP_REPLY_URL``  | where the plain-HTTP channel posts replies without a callback   |
| ``CHARTER_HTTP_CALLBACK_HOSTS`` | hosts a plain-HTTP ``callback_url`` may point to (comma list) |

Rotation: each webhook secret variable may be a comma-separated list. While a secret is
rotated both the old and the new one are listed, and a request signed with any of them
is accepted.

Fail closed: ``DEFAULT_LOCAL_SECRETS`` fill a *missing* variable only when
``CHARTER_ENV`` is ``local``, ``test``, ``demo`` or unset. Any other value (``prod``,
``stg``, ``dev`` — or a typo) is a deployed environment: a missing secret stays missing,
so every request of that channel is answered 401, and a secret equal to one of the
published defaults is dropped as if it were missing.

>>> s = ChannelSecrets.from_env({"CHARTER_ENV": "prod", "SLACK_SIGNING_SECRET": "new,old"})
>>> s.webhook_secrets("slack"), s.webhook_secrets("line")
(('new', 'old'), ())
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from urllib.parse import urlsplit

from shared_lib.errors import ConfigError
from shared_lib.settings import Settings

LOCAL_ENVIRONMENTS = frozenset({"", "local", "test", "demo"})

# Published on purpose: they only ever protect a developer's laptop. The ChatWork token
# is base64 because ChatWork's tokens are (the HMAC key is the decoded bytes).
DEFAULT_LOCAL_SECRETS: Mapping[str, str] = MappingProxyType(
    {
        "CHATWORK_WEBHOOK_TOKEN": "Y2hhcnRlci1sb2NhbC1jaGF0d29yay13ZWJob29rLXRva2Vu",
        "LINE_CHANNEL_SECRET": "charter-local-line-channel-secret",
        "SLACK_SIGNING_SECRET": "charter-local-slack-signing-secret",
        "HTTP_WEBHOOK_SECRET": "charter-local-http-webhook-secret",
        "CHATWORK_API_TOKEN": "charter-local-chatwork-api-token",
        "LINE_CHANNEL_ACCESS_TOKEN": "charter-local-line-channel-access-token",
        "SLACK_BOT_TOKEN": "xoxb-charter-local-slack-bot-token",
    }
)

DEFAULT_API_BASES: Mapping[str, str] = MappingProxyType(
    {
        "CHATWORK_API_BASE": "https://api.chatwork.com/v2",
        "LINE_API_BASE": "https://api.line.me",
        "SLACK_API_BASE": "https://slack.com/api",
    }
)

WEBHOOK_SECRET_VARIABLES: Mapping[str, str] = MappingProxyType(
    {
        "chatwork": "CHATWORK_WEBHOOK_TOKEN",
        "line": "LINE_CHANNEL_SECRET",
        "slack": "SLACK_SIGNING_SECRET",
        "http": "HTTP_WEBHOOK_SECRET",
    }
)


def _split_list(raw: str | None) -> tuple[str, ...]:
    return tuple(item.strip() for item in (raw or "").split(",") if item.strip())


def _check_url(name: str, value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"{name} must be an http(s) URL, got {value!r}")
    return value.rstrip("/")


@dataclass(frozen=True)
class ChannelSecrets:
    """Everything secret (or environment-specific) the channel package needs.

    Secret fields are left out of ``repr`` so a logged object never shows them.
    """

    environment: str = "local"
    chatwork_webhook_tokens: tuple[str, ...] = field(default=(), repr=False)
    line_channel_secrets: tuple[str, ...] = field(default=(), repr=False)
    slack_signing_secrets: tuple[str, ...] = field(default=(), repr=False)
    http_webhook_secrets: tuple[str, ...] = field(default=(), repr=False)
    chatwork_api_token: str | None = field(default=None, repr=False)
    line_channel_access_token: str | None = field(default=None, repr=False)
    slack_bot_token: str | None = field(default=None, repr=False)
    chatwork_api_base: str = DEFAULT_API_BASES["CHATWORK_API_BASE"]
    line_api_base: str = DEFAULT_API_BASES["LINE_API_BASE"]
    slack_api_base: str = DEFAULT_API_BASES["SLACK_API_BASE"]
    http_reply_url: str | None = None
    http_callback_hosts: tuple[str, ...] = ()

    @property
    def is_local(self) -> bool:
        """True on a laptop, in tests and in the demo; False in every deployed environment."""
        return self.environment in LOCAL_ENVIRONMENTS

    def webhook_secrets(self, channel: str) -> tuple[str, ...]:
        """The active webhook secrets of ``channel`` (empty: every request is rejected)."""
        return {
            "chatwork": self.chatwork_webhook_tokens,
            "line": self.line_channel_secrets,
            "slack": self.slack_signing_secrets,
            "http": self.http_webhook_secrets,
        }.get(channel, ())

    @classmethod
    def local_defaults(cls) -> ChannelSecrets:
        """The secrets a local stack uses when nothing is configured (tests, demo)."""
        return cls.from_env({"CHARTER_ENV": "local"})

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ChannelSecrets:
        """The secrets of the variables in ``env`` (see ``from_settings``)."""
        return cls.from_settings(Settings.from_env(env))

    @classmethod
    def from_settings(cls, settings: Settings) -> ChannelSecrets:
        """The variables of the module docstring; ``ConfigError`` for a base URL that is not http(s)."""
        environment = settings.env
        local = environment in LOCAL_ENVIRONMENTS
        published = set(DEFAULT_LOCAL_SECRETS.values())

        def secrets(name: str) -> tuple[str, ...]:
            values = _split_list(settings.raw(name))
            if local:
                return values or (DEFAULT_LOCAL_SECRETS[name],)
            return tuple(v for v in values if v not in published)

        def token(name: str) -> str | None:
            values = secrets(name)
            return values[0] if values else None

        def base(name: str) -> str:
            return _check_url(name, (settings.raw(name) or "").strip() or DEFAULT_API_BASES[name])

        reply_url = (settings.http_reply_url or "").strip()
        return cls(
            environment=environment,
            chatwork_webhook_tokens=secrets("CHATWORK_WEBHOOK_TOKEN"),
            line_channel_secrets=secrets("LINE_CHANNEL_SECRET"),
            slack_signing_secrets=secrets("SLACK_SIGNING_SECRET"),
            http_webhook_secrets=secrets("HTTP_WEBHOOK_SECRET"),
            chatwork_api_token=token("CHATWORK_API_TOKEN"),
            line_channel_access_token=token("LINE_CHANNEL_ACCESS_TOKEN"),
            slack_bot_token=token("SLACK_BOT_TOKEN"),
            chatwork_api_base=base("CHATWORK_API_BASE"),
            line_api_base=base("LINE_API_BASE"),
            slack_api_base=base("SLACK_API_BASE"),
            http_reply_url=_check_url("CHARTER_HTTP_REPLY_URL", reply_url) if reply_url else None,
            http_callback_hosts=tuple(h.lower() for h in _split_list(settings.http_callback_hosts)),
        )
