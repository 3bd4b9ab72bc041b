r"""Shared pieces of the channel package: header access, HMAC checks, the ingress
configuration and the helpers every provider module uses to normalise a message.

Errors::

    CharterError
    ├── ConfigError            ``CHARTER_INGRESS_CONFIG`` does not parse (raised at start-up)
    └── PayloadError           a verified body we refuse: not the provider's schema -> 400,
                               a tenant the credential or the mapping does not give -> 403,
                               an event older than the dedupe window (a replay) -> 401

``PayloadError`` never leaves ``handle_webhook``: it becomes an outcome with its status and code.

Text: ``clean_text`` drops NUL and every other control character but ``\n`` and ``\t``
(``\r\n`` and ``\r`` become ``\n``), and the invisible ones (``text_fold.strip_invisible``:
bidi overrides and isolates, zero-width characters; an emoji's joiner stays) from message text
and display names — stripped, not refused, because providers relay whatever a user pasted and the message still deserves an
answer. Identifiers are not text: one with a control character or a ``/`` is refused (400).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from shared_lib.errors import CharterError, ConfigError
from shared_lib.privacy.text_fold import strip_invisible
from shared_lib.turn.inbound import MAX_TEXT_CHARS, ChannelName, InboundMessage

REPLAY_WINDOW_SECONDS = 300
# How long the ingress remembers a delivery's event id (its dedupe record): a replay inside
# it is a duplicate; ChatWork and LINE events older than it are refused (see the package doc).
DEDUPE_WINDOW = timedelta(days=365)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
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
    rotating secrets matched. Both sides are compared as UTF-8 bytes: text is encoded
    rather than allowed to raise (``compare_digest`` refuses non-ASCII ``str``).
    """
    given = provided.encode("utf-8", "surrogatepass")
    matched = False
    for value in expected:
        matched |= hmac.compare_digest(value.encode("utf-8", "surrogatepass"), given)
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
    """Which organisation a delivery belongs to; anything unmapped goes to ``default_org``,
    or — with ``refuse_unmapped`` — is refused (403 ``unknown_tenant``): a multi-tenant
    deployment lists every tenant, and a workspace or channel it does not list gets no turn.

    ``chatwork_accounts`` maps the account that owns an account webhook (the bot's) to its
    organisation, so its keys are also treated as bot accounts.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    chatwork_rooms: dict[str, OrgId] = Field(default_factory=dict)
    chatwork_accounts: dict[str, OrgId] = Field(default_factory=dict)
    line_destinations: dict[str, OrgId] = Field(default_factory=dict)
    slack_teams: dict[str, OrgId] = Field(default_factory=dict)
    refuse_unmapped: bool = False


class IngressConfig(BaseModel):
    """Ingress settings, loaded from ``CHARTER_INGRESS_CONFIG`` (a path or inline JSON).

    >>> IngressConfig.model_validate({"room_overrides": {"slack": {"C1": False}}}).only_when_addressed("slack", "C1")
    False
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_body_bytes: int = Field(default=256 * 1024, ge=1, le=10 * 1024 * 1024)
    replay_window_seconds: int = Field(default=REPLAY_WINDOW_SECONDS, ge=1, le=3600)
    # One delivery never makes more turns than this: a LINE request carries a few events, and a
    # signed request with hundreds is refused whole (413 ``too_many_events``), not run as turns.
    max_events_per_delivery: int = Field(default=20, ge=1, le=1000)
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

    def org_for(self, mapped: str | None) -> str:
        """The organisation of a delivery the mapping gave ``mapped`` (``None``: unmapped)."""
        if mapped:
            return mapped
        if self.orgs.refuse_unmapped:
            raise PayloadError("unknown_tenant", status=403)
        return self.default_org

    def chatwork_bot_ids(self) -> frozenset[str]:
        ids = set(self.orgs.chatwork_accounts)
        if self.bots.chatwork_account_id:
            ids.add(self.bots.chatwork_account_id)
        return frozenset(ids)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> IngressConfig:
        """The configuration ``CHARTER_INGRESS_CONFIG`` in ``env`` gives (see ``load``)."""
        return cls.load(env.get("CHARTER_INGRESS_CONFIG"))

    @classmethod
    def load(cls, setting: str | None) -> IngressConfig:
        """Defaults when ``CHARTER_INGRESS_CONFIG`` is unset; ``ConfigError`` when it is invalid.

        The setting is inline JSON or the path of a JSON file.
        """
        raw = (setting or "").strip()
        if not raw:
            return cls()
        if raw.startswith("{"):
            text, origin = raw, "inline JSON"
        else:
            try:
                text, origin = Path(raw).read_text(encoding="utf-8"), raw
            except OSError as exc:
                raise ConfigError(
                    f"CHARTER_INGRESS_CONFIG: cannot read {raw!r}: {exc.strerror or exc}"
                ) from exc
        try:
            return cls.model_validate(json.loads(text))
        except (ValueError, RecursionError) as exc:
            detail = _describe(exc.errors()) if isinstance(exc, ValidationError) else str(exc)
            raise ConfigError(f"CHARTER_INGRESS_CONFIG ({origin}) is invalid: {detail}") from exc


# ---------------------------------------------------------------------------- normalisation


class PayloadError(CharterError):
    """A verified body we refuse (answered ``status``, 400 by default, with ``code``)."""

    def __init__(self, code: str, errors: list[dict[str, str]] | None = None, *, status: int = 400) -> None:
        super().__init__(code)
        self.code = code
        self.errors = errors or []
        self.status = status

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


ID_PATTERN = r"^[^/\x00-\x1f\x7f]+$"
ProviderId = Annotated[
    str, BeforeValidator(_coerce_id), Field(min_length=1, max_length=256, pattern=ID_PATTERN)
]
"""A provider's identifier: providers send some ids as numbers, we keep them as strings."""


def clean_text(text: str) -> str:
    r"""``text`` without control characters but line breaks and tabs (see the module doc).

    >>> clean_text("a\x00b\r\nc\td\x1b[31m"), clean_text("\u202eredro\u202c 0\u200b90")
    ('ab\nc\td[31m', 'redro 090')
    """
    return strip_invisible(_CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n")))


_BUTTON = re.compile(r"(approve|deny):(J-[0-9A-Z]{6})")
_BUTTON_WORDS = {"approve": "承認", "deny": "却下"}


def button_text(data: str | None) -> str | None:
    """The message an approval button's payload stands for (LINE postback ``data``, Slack
    action ``value``): ``approve:J-7K2M9Q`` → 「承認 J-7K2M9Q」; ``None`` for anything else.

    >>> button_text("deny:J-7K2M9Q"), button_text("approve:J-7K2M9Q; rm -rf")
    ('却下 J-7K2M9Q', None)
    """
    found = _BUTTON.fullmatch(data or "")  # our own payload, exactly
    return f"{_BUTTON_WORDS[found.group(1)]} {found.group(2)}" if found else None


def event_too_old(event_time: datetime | None, now: datetime) -> bool:
    """True when a provider event is older than the dedupe window: a replay we no longer
    remember, refused rather than served again."""
    return event_time is not None and event_time < now - DEDUPE_WINDOW


def detect_language(text: str) -> str:
    """``"ja"`` when the text contains kana or kanji, else ``"en"``."""
    return "ja" if _JAPANESE.search(text) else "en"


def sent_time(epoch_seconds: float | None) -> datetime | None:
    """A provider's send time (seconds since the epoch) as a UTC time; ``None`` when absent or
    not a plausible time (the debounce then orders by arrival)."""
    if epoch_seconds is None or not math.isfinite(epoch_seconds) or not 0 < epoch_seconds < 2**34:
        return None
    return datetime.fromtimestamp(epoch_seconds, tz=UTC)


def build_message(**fields: Any) -> InboundMessage:
    """An ``InboundMessage`` from normalised fields; text is clipped, language detected.

    A field that breaks the model's limits (an id too long for us) is the sender's
    schema problem, so it becomes a ``PayloadError`` instead of an exception.
    """
    text = clean_text(str(fields.pop("text")))[:MAX_TEXT_CHARS]
    if fields.get("user_name") is not None:
        fields["user_name"] = clean_text(str(fields["user_name"])).strip() or None
    fields.setdefault("language", detect_language(text))
    try:
        return InboundMessage(text=text, **fields)
    except ValidationError as exc:
        raise PayloadError.from_validation("invalid_field", exc) from exc


# ---------------------------------------------------------------------------- splitting

# Cut after these, best first; a cut must keep at least half of the allowed length.
_SEPARATORS = ("\n\n", "\n", "。", "！", "？", ". ", "! ", "? ", "、", ", ", " ")


def _utf16_units(char: str) -> int:
    return 2 if ord(char) > 0xFFFF else 1


def _is_regional_indicator(char: str) -> bool:
    return 0x1F1E6 <= ord(char) <= 0x1F1FF


def _inside_cluster(text: str, at: int) -> bool:
    """True when cutting before ``text[at]`` would split one visible character."""
    char, previous = text[at], text[at - 1]
    if _is_regional_indicator(char) and _is_regional_indicator(previous):
        run = 0  # flags are pairs of regional indicators: cut only after an even run
        while at - run - 1 >= 0 and _is_regional_indicator(text[at - run - 1]):
            run += 1
        return run % 2 == 1
    code = ord(char)
    return bool(
        unicodedata.combining(char)
        or char == "\u200d"
        or previous == "\u200d"  # zero-width joiner sequences
        or 0xFE00 <= code <= 0xFE0F
        or 0xE0100 <= code <= 0xE01EF  # variation selectors
        or 0x1F3FB <= code <= 0x1F3FF  # skin tones
        or 0xE0020 <= code <= 0xE007F  # tag sequences (subdivision flags)
        or code == 0x20E3  # keycap
    )


def _cut(text: str, limit: int) -> tuple[int, str]:
    """Where to end the next part of ``text`` (longer than ``limit`` UTF-16 units), and the separator."""
    used, fit = 0, 0
    for char in text:
        used += _utf16_units(char)
        if used > limit:
            break
        fit += 1
    window, floor = text[:fit], max(1, fit // 2)
    for separator in _SEPARATORS:
        at = window.rfind(separator)
        if at >= 0 and at + len(separator) >= floor:
            return at + len(separator), separator
    cut = fit
    while cut > 1 and _inside_cluster(text, cut):
        cut -= 1
    return (cut if cut > 1 else max(fit, 1)), ""  # one "character" longer than the limit: cut it


def split_text(text: str, limit: int) -> list[str]:
    """Split ``text`` into parts of at most ``limit`` UTF-16 code units.

    Parts end at a paragraph break, else a line break, else a sentence or word end,
    else between two characters — never inside a surrogate pair (lengths are counted
    in UTF-16 units, the strictest of the providers' counts) and, where possible, not
    inside an emoji sequence or before a combining mark. Whitespace at a cut is dropped.

    >>> split_text("第一段落。\\n\\n第二段落。", 8)
    ['第一段落。', '第二段落。']
    """
    if limit < 2:
        raise ValueError("limit must be at least 2 (one surrogate pair)")
    parts: list[str] = []
    rest = text.strip()
    while rest:
        if sum(_utf16_units(c) for c in rest) <= limit:
            parts.append(rest)
            break
        cut, separator = _cut(rest, limit)
        head, rest = rest[:cut].rstrip(), rest[cut:]
        # After a line break keep the next line's indentation; elsewhere drop the blanks.
        rest = rest.lstrip("\n") if separator.endswith("\n") else rest.lstrip(" ")
        if head:
            parts.append(head)
    return parts
