"""Channel secrets and API settings, taken from the settings (``shared_lib.settings``).

Webhook secrets verify what the providers send us; API tokens authenticate our replies.

| variable                    | what it is                                                      |
|-----------------------------|-----------------------------------------------------------------|
| ``CHATWORK_WEBHOOK_TOKEN``  | the webhook token ChatWork shows (base64; the HMAC key decoded) |
| ``LINE_CHANNEL_SECRET``     | the LINE channel secret                                         |
| ``SLACK_SIGNING_SECRET``    | the Slack app's signing secret                                  |
| ``HTTP_WEBHOOK_SECRET``     | plain HTTP: signs replies; authenticates inbound only locally   |
| ``HTTP_WEBHOOK_TENANTS``    | plain HTTP: JSON ``{"org": ["secret", ...]}``, per organisation |
| ``CHATWORK_API_TOKEN``      | ``X-ChatWorkToken`` for replies                                 |
| ``LINE_CHANNEL_ACCESS_TOKEN`` | bearer token for LINE replies and pushes                      |
| ``SLACK_BOT_TOKEN``         | bearer token (``xoxb-...``) for ``chat.postMessage``            |
| ``CHATWORK_API_BASE`` / ``LINE_API_BASE`` / ``SLACK_API_BASE`` | API base URLs (fakes locally) |
| ``CHARTER_HTTP_REPLY_URL``  | where the plain-HTTP channel posts replies without a callback   |
| ``CHARTER_HTTP_CALLBACK_HOSTS`` | hosts a plain-HTTP ``callback_url`` may point to (comma list) |

Rotation: each webhook secret variable may be a comma-separated list (a tenant's list in
``HTTP_WEBHOOK_TENANTS``: a JSON list, or the same comma-separated text). While a secret is
rotated both the old and the new one are listed, and a request signed with any of them
is accepted. One secret never belongs to two tenants (``ConfigError``): the credential
names the organisation (``shared_lib.channels.http``).

Fail closed: ``DEFAULT_LOCAL_SECRETS`` fill a *missing* variable only on an explicit local
stack: ``CHARTER_ENV`` said ``local``, ``test`` or ``demo`` (``Settings.explicit_local``; never
under Cloud Run's ``K_SERVICE``). Unset is not local here: a missing secret stays missing, so
every request of that channel is answered 401, and a secret equal to one of the published
defaults is dropped as if it were missing — as in ``dev``, ``stg`` and ``prod``.

>>> s = ChannelSecrets.from_env({"CHARTER_ENV": "prod", "SLACK_SIGNING_SECRET": "new,old"})
>>> s.webhook_secrets("slack"), s.webhook_secrets("line")
(('new', 'old'), ())
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from urllib.parse import urlsplit

from shared_lib.errors import ConfigError
from shared_lib.settings import Settings

LOCAL_ENVIRONMENTS = frozenset({"local", "test", "demo"})
UNSET = "unset"  # the environment of settings that never said CHARTER_ENV: not local

# Published on purpose: they only ever protect a developer's laptop. The ChatWork token
# is base64 because ChatWork's tokens are (the HMAC key is the decoded bytes).
DEFAULT_LOCAL_SECRETS: Mapping[str, str] = MappingProxyType(
    {
        "CHATWORK_WEBHOOK_TOKEN": "Y2hhcnRlci1sb2NhbC1jaGF0d29yay13ZWJob29rLXRva2Vu",
        "LINE_CHANNEL_SECRET": "charter-local-line-channel-secret",
        "SLACK_SIGNING_SECRET": "charter-local-slack-signing-secret",
        "HTTP_WEBHOOK_SECRET": "charter-local-http-webhook-secret",
        "HTTP_WEBHOOK_TENANTS": '{"demo": ["charter-local-http-demo-tenant-secret"]}',
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


_ORG = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")


def _split_list(raw: str | None) -> tuple[str, ...]:
    return tuple(item.strip() for item in (raw or "").split(",") if item.strip())


def parse_tenants(raw: str | None) -> dict[str, tuple[str, ...]]:
    """``HTTP_WEBHOOK_TENANTS`` as organisation -> secrets; ``ConfigError`` when malformed.

    >>> parse_tenants('{"acme": ["new", "old"], "globex": "g1"}')
    {'acme': ('new', 'old'), 'globex': ('g1',)}
    """
    if not (raw or "").strip():
        return {}
    try:
        data = json.loads(raw or "")
    except ValueError as exc:
        raise ConfigError(f"HTTP_WEBHOOK_TENANTS is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError('HTTP_WEBHOOK_TENANTS must be a JSON object {"org": ["secret", ...]}')
    tenants: dict[str, tuple[str, ...]] = {}
    owner: dict[str, str] = {}
    for org, value in data.items():
        items = _split_list(value) if isinstance(value, str) else value
        if not _ORG.match(str(org)) or not isinstance(items, list | tuple):
            raise ConfigError(f"HTTP_WEBHOOK_TENANTS: {org!r} needs an organisation id and a list of secrets")
        values = tuple(str(v).strip() for v in items if isinstance(v, str) and v.strip())
        for secret in values:
            if owner.setdefault(secret, org) != org:
                raise ConfigError(
                    f"HTTP_WEBHOOK_TENANTS: one secret is given to {owner[secret]!r} and {org!r}"
                )
        tenants[org] = values
    return tenants


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
    http_tenants: Mapping[str, tuple[str, ...]] = field(default_factory=dict, repr=False)
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

    def reply_secret(self, org_id: str) -> str | None:
        """The secret that signs a plain-HTTP reply to ``org_id``: its newest tenant secret,
        else ``HTTP_WEBHOOK_SECRET`` (the receiver of that organisation verifies it)."""
        own = self.http_tenants.get(org_id) or self.http_webhook_secrets
        return own[0] if own else None

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
        local = settings.explicit_local
        environment = settings.env if settings.env_given else UNSET
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

        tenants = parse_tenants(settings.raw("HTTP_WEBHOOK_TENANTS"))
        if local and not tenants:
            tenants = parse_tenants(DEFAULT_LOCAL_SECRETS["HTTP_WEBHOOK_TENANTS"])
        if not local:
            published_tenants = {
                s
                for values in parse_tenants(DEFAULT_LOCAL_SECRETS["HTTP_WEBHOOK_TENANTS"]).values()
                for s in values
            }
            tenants = {org: tuple(v for v in vs if v not in published_tenants) for org, vs in tenants.items()}
        reply_url = (settings.http_reply_url or "").strip()
        return cls(
            environment=environment,
            chatwork_webhook_tokens=secrets("CHATWORK_WEBHOOK_TOKEN"),
            line_channel_secrets=secrets("LINE_CHANNEL_SECRET"),
            slack_signing_secrets=secrets("SLACK_SIGNING_SECRET"),
            http_webhook_secrets=secrets("HTTP_WEBHOOK_SECRET"),
            http_tenants=MappingProxyType({org: vs for org, vs in tenants.items() if vs}),
            chatwork_api_token=token("CHATWORK_API_TOKEN"),
            line_channel_access_token=token("LINE_CHANNEL_ACCESS_TOKEN"),
            slack_bot_token=token("SLACK_BOT_TOKEN"),
            chatwork_api_base=base("CHATWORK_API_BASE"),
            line_api_base=base("LINE_API_BASE"),
            slack_api_base=base("SLACK_API_BASE"),
            http_reply_url=_check_url("CHARTER_HTTP_REPLY_URL", reply_url) if reply_url else None,
            http_callback_hosts=tuple(h.lower() for h in _split_list(settings.http_callback_hosts)),
        )
