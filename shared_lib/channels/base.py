"""Shared pieces of the channel package: header access, HMAC checks, the ingress
configuration and the helpers every provider module uses to normalise a message.

Errors::

    CharterError
    └── ConfigError            ``CHARTER_INGRESS_CONFIG`` does not parse (raised at start-up)
    PayloadError (ValueError)  a verified body that is not the provider's schema -> 400

``PayloadError`` never leaves ``handle_webhook``: it becomes a 400 outcome with its code.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from shared_lib.errors import ConfigError
from shared_lib.inbound import MAX_TEXT_CHARS, ChannelName, InboundMessage

REPLAY_WINDOW_SECONDS = 300
_ASCII_INT = re.compile(r"^[0-9]{1,12}$")
_JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f]")


# ---------------------------------------------------------------------------- verification

def header_map(headers: Mapping[str, str]) -> dict[str, str]:
    """Headers with lower-case names: HTTP header names are case-insensitive."""
    return {str(name).lower(): str(value) for name, value in headers.items()}


def hmac_sha256(key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, hashlib.sha256).digest()


def matches_any(expected: Iterable[str], provided: str) -> bool:
    """Constant-time comparison of ``provided`` with every expected value.

    Every candidate is compared (no early exit), so timing does not reveal which of the
    rotating secrets matched. Non-ASCII input cannot match an ASCII digest and is encoded
    rather than allowed to raise.
    """
    given = provided.encode("utf-8", "replace")
    matched = False
    for value in expected:
        matched |= hmac.compare_digest(value.encode("ascii"), given)
    return matched


def timestamp_fresh(raw: str | None, now: datetime, window_seconds: int = REPLAY_WINDOW_SECONDS) -> bool:
    """True when ``raw`` is a Unix time (ASCII digits) within ``window_seconds`` of ``now``."""
    if raw is None or not _ASCII_INT.match(raw.strip()):
        return False
    return abs(now.timestamp() - int(raw.strip())) <= window_seconds


# ---------------------------------------------------------------------------- configuration

OrgId = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.\-]+$")]


class BotIdentities(BaseModel):
    """Who the bot is on each provider: for mention detection and ignoring its own messages."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    chatwork_account_id: str | None = None
    slack_user_id: str | None = None
    line_user_id: str | None = None


class OrgRouting(BaseModel):
    """Which organisation a delivery belongs to; anything unmapped goes to ``default_org``.

    ``chatwork_accounts`` maps the account that owns an account webhook (the bot's) to its
    organisation, so its keys are also treated as bot accounts.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    chatwork_rooms: dict[str, OrgId] = Field(default_factory=dict)
    chatwork_accounts: dict[str, OrgId] = Field(default_factory=dict)
    line_destinations: dict[str, OrgId] = Field(default_factory=dict)
    slack_teams: dict[str, OrgId] = Field(default_factory=dict)


class IngressConfig(BaseModel):
    """Ingress settings, loaded from ``CHARTER_INGRESS_CONFIG`` (a path or inline JSON).

    >>> IngressConfig.model_validate({"room_overrides": {"slack": {"C1": False}}}).only_when_addressed("slack", "C1")
    False
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_body_bytes: int = Field(default=256 * 1024, ge=1, le=10 * 1024 * 1024)
    replay_window_seconds: int = Field(default=REPLAY_WINDOW_SECONDS, ge=1, le=3600)
    default_org: OrgId = "default"
    orgs: OrgRouting = Field(default_factory=OrgRouting)
    bots: BotIdentities = Field(default_factory=BotIdentities)
    answer_only_when_addressed: bool = True
    # channel -> room id -> answer_only_when_addressed for that room
    room_overrides: dict[ChannelName, dict[str, bool]] = Field(default_factory=dict)
    # Slack sends a channel message that mentions the app twice (``message`` and
    # ``app_mention``, different event ids); with the app_mention subscription on, the
    # ``message`` copy is ignored so the user gets one answer.
    slack_app_mention_subscribed: bool = True

    def only_when_addressed(self, channel: str, room_id: str) -> bool:
        """Whether an unaddressed message in this room is ignored."""
        rooms = next((r for name, r in self.room_overrides.items() if name == channel), {})
        return rooms.get(room_id, self.answer_only_when_addressed)

    def chatwork_bot_ids(self) -> frozenset[str]:
        ids = set(self.orgs.chatwork_accounts)
        if self.bots.chatwork_account_id:
            ids.add(self.bots.chatwork_account_id)
        return frozenset(ids)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> IngressConfig:
        """Defaults when ``CHARTER_INGRESS_CONFIG`` is unset; ``ConfigError`` when it is invalid."""
        raw = (os.environ if env is None else env).get("CHARTER_INGRESS_CONFIG", "").strip()
        if not raw:
            return cls()
        if raw.startswith("{"):
            text, origin = raw, "inline JSON"
        else:
            try:
                text, origin = Path(raw).read_text(encoding="utf-8"), raw
            except OSError as exc:
                raise ConfigError(f"CHARTER_INGRESS_CONFIG: cannot read {raw!r}: {exc.strerror}") from exc
        try:
            return cls.model_validate(json.loads(text))
        except (ValueError, RecursionError) as exc:
            detail = _describe(exc.errors()) if isinstance(exc, ValidationError) else str(exc)
            raise ConfigError(f"CHARTER_INGRESS_CONFIG ({origin}) is invalid: {detail}") from exc


# ---------------------------------------------------------------------------- normalisation

class PayloadError(ValueError):
    """A verified body that is not the provider's schema (answered 400 with ``code``)."""

    def __init__(self, code: str, errors: list[dict[str, str]] | None = None) -> None:
        super().__init__(code)
        self.code = code
        self.errors = errors or []

    @classmethod
    def from_validation(cls, code: str, exc: ValidationError) -> PayloadError:
        return cls(code, [{"loc": loc, "msg": msg} for loc, msg in _locations(exc.errors())])


@dataclass
class ProviderResult:
    """What a provider module found in a verified body."""

    messages: list[InboundMessage] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    response: dict[str, Any] | None = None  # a provider-required answer (Slack challenge)


def _locations(errors: Iterable[Any]) -> list[tuple[str, str]]:
    return [(".".join(str(p) for p in e.get("loc", ())) or "body", str(e.get("msg", ""))) for e in errors][:5]


def _describe(errors: Iterable[Any]) -> str:
    return "; ".join(f"{loc}: {msg}" for loc, msg in _locations(errors))


def _coerce_id(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("an id must be a string or an integer")
    return str(value) if isinstance(value, int) else value


ProviderId = Annotated[str, BeforeValidator(_coerce_id), Field(min_length=1, max_length=256)]
"""A provider's identifier: providers send some ids as numbers, we keep them as strings."""


def detect_language(text: str) -> str:
    """``"ja"`` when the text contains kana or kanji, else ``"en"``."""
    return "ja" if _JAPANESE.search(text) else "en"


def build_message(**fields: Any) -> InboundMessage:
    """An ``InboundMessage`` from normalised fields; text is clipped, language detected.

    A field that breaks the model's limits (an id too long for us) is the sender's
    schema problem, so it becomes a ``PayloadError`` instead of an exception.
    """
    text = str(fields.pop("text"))[:MAX_TEXT_CHARS]
    fields.setdefault("language", detect_language(text))
    try:
        return InboundMessage(text=text, **fields)
    except ValidationError as exc:
        raise PayloadError.from_validation("invalid_field", exc) from exc
