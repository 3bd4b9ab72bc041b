"""The notifier port and its adapters: where operator alerts go.

``Notifier.notify(alert)`` delivers one alert or raises ``NotifyError``. Adapters:

==================  =====================================================================
``ChannelRoomNotifier``  a message in an admin room of a chat channel (the ``Channel`` port)
``WebhookNotifier``      a signed JSON ``POST`` (``X-Charter-Timestamp``/``-Signature``)
``EmailNotifier``        an e-mail over SMTP (STARTTLS by default)
``RecordingNotifier``    keeps what it was given (tests, the embedded demo)
==================  =====================================================================

``notifiers_from_env`` builds the configured ones (the variables below); none configured
means alerts stay in the store and the log, which says so.

=================================  ===============================================
``CHARTER_ALERT_ROOM``             ``channel:org:room`` of the admin room
``CHARTER_ALERT_WEBHOOK_URL``      webhook URL (https; http only to loopback)
``CHARTER_ALERT_WEBHOOK_SECRET``   HMAC-SHA256 key of the webhook signature
``CHARTER_ALERT_EMAIL_TO``         comma-separated recipients
``CHARTER_ALERT_EMAIL_FROM``       sender (default ``charter-alerts@localhost``)
``CHARTER_SMTP_HOST`` / ``_PORT``  SMTP server (port 587 by default)
``CHARTER_SMTP_USER`` / ``_PASSWORD`` / ``_STARTTLS``  login and TLS (``0`` turns STARTTLS off)
=================================  ===============================================
"""

from __future__ import annotations

import hashlib
import hmac
import json
import smtplib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

import httpx
from pydantic import BaseModel, ConfigDict, Field

from shared_lib.errors import CharterError, ConfigError
from shared_lib.ports import Channel, OutboundReply
from shared_lib.settings import Settings

Severity = Literal["info", "warning", "critical"]


class NotifyError(CharterError):
    """A notifier could not deliver an alert (the dispatcher retries later)."""


class Alert(BaseModel):
    """What an operator is told. ``count`` > 1 when similar alerts were folded into this one."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    alert_id: str
    code: str
    severity: Severity = "warning"
    message: str
    at: str
    org_id: str | None = None
    turn_id: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)


def format_alert(alert: Alert) -> str:
    """One short text for chat rooms and e-mail subjects/bodies."""
    where = " ".join(
        x
        for x in (
            f"org {alert.org_id}" if alert.org_id else "",
            f"turn {alert.turn_id}" if alert.turn_id else "",
        )
        if x
    )
    return f"[Charter {alert.severity}] {alert.code}: {alert.message}" + (f" ({where})" if where else "")


class Notifier(Protocol):
    name: str

    def notify(self, alert: Alert) -> None:
        """Deliver ``alert`` once; raise ``NotifyError`` when it could not be delivered."""
        ...


@dataclass
class RecordingNotifier:
    name: str = "recording"
    sent: list[Alert] = field(default_factory=list)

    def notify(self, alert: Alert) -> None:
        self.sent.append(alert)


@dataclass
class ChannelRoomNotifier:
    """Posts to an admin room through a chat channel adapter (same clients as replies)."""

    channel: Channel
    org_id: str
    room_id: str
    name: str = "room"

    def notify(self, alert: Alert) -> None:
        reply = OutboundReply(
            channel=self.channel.name,
            org_id=self.org_id,
            room_id=self.room_id,
            user_id="charter-alerts",
            text=format_alert(alert),
            idempotency_key=f"alert-{alert.alert_id}",
        )
        result = self.channel.send(reply)
        if not result.ok:
            raise NotifyError(f"{self.channel.name} room {self.room_id}: {result.error or result.status}")


def sign(secret: str, timestamp: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()


@dataclass
class WebhookNotifier:
    url: str
    secret: str = ""
    client: httpx.Client = field(
        default_factory=lambda: httpx.Client(timeout=httpx.Timeout(10.0, connect=3.0))
    )
    clock: Callable[[], float] = time.time
    name: str = "webhook"

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        loopback = parts.hostname in ("127.0.0.1", "localhost", "::1")
        if parts.scheme != "https" and not (parts.scheme == "http" and loopback):
            raise ConfigError(f"alert webhook must be https (http only to loopback): {self.url!r}")

    def notify(self, alert: Alert) -> None:
        body = json.dumps(
            {"text": format_alert(alert), "alert": alert.model_dump()}, ensure_ascii=False
        ).encode()
        stamp = str(int(self.clock()))
        headers = {
            "Content-Type": "application/json",
            "Idempotency-Key": alert.alert_id,
            "X-Charter-Timestamp": stamp,
        }
        if self.secret:
            headers["X-Charter-Signature"] = sign(self.secret, stamp, body)
        try:
            response = self.client.post(self.url, content=body, headers=headers)
        except httpx.HTTPError as exc:
            raise NotifyError(f"webhook: {type(exc).__name__}") from exc
        if response.status_code >= 300:
            raise NotifyError(f"webhook: status {response.status_code}")


@dataclass
class EmailNotifier:
    host: str
    recipients: tuple[str, ...]
    sender: str = "charter-alerts@localhost"
    port: int = 587
    username: str = ""
    password: str = ""
    starttls: bool = True
    smtp_factory: Callable[[str, int], smtplib.SMTP] = lambda host, port: smtplib.SMTP(host, port, timeout=10)
    name: str = "email"

    def notify(self, alert: Alert) -> None:
        msg = EmailMessage()
        msg["Subject"] = format_alert(alert)[:180]
        msg["From"] = self.sender
        msg["To"] = ", ".join(self.recipients)
        msg["Message-ID"] = f"<{alert.alert_id}@charter>"
        msg.set_content(
            format_alert(alert) + "\n\n" + json.dumps(alert.model_dump(), ensure_ascii=False, indent=2)
        )
        try:
            with self.smtp_factory(self.host, self.port) as smtp:
                if self.starttls:
                    smtp.starttls()
                if self.username:
                    smtp.login(self.username, self.password)
                smtp.send_message(msg)
        except (OSError, smtplib.SMTPException) as exc:
            raise NotifyError(f"email: {type(exc).__name__}") from exc


def notifiers_from_env(env: Mapping[str, str], channels: Mapping[str, Channel]) -> list[Notifier]:
    """The notifiers the ``CHARTER_ALERT_*`` variables of ``env`` configure."""
    return build_notifiers(Settings.from_env(env), channels)


def build_notifiers(settings: Settings, channels: Mapping[str, Channel]) -> list[Notifier]:
    """The notifiers the settings configure (possibly none)."""
    out: list[Notifier] = []
    room = (settings.alert_room or "").strip()
    if room:
        parts = room.split(":", 2)
        if len(parts) != 3 or parts[0] not in channels:
            raise ConfigError(
                f"CHARTER_ALERT_ROOM must be channel:org:room with a known channel, got {room!r}"
            )
        out.append(ChannelRoomNotifier(channels[parts[0]], parts[1], parts[2]))
    url = (settings.alert_webhook_url or "").strip()
    if url:
        out.append(WebhookNotifier(url, settings.secret("alert_webhook_secret") or ""))
    to = tuple(a.strip() for a in (settings.alert_email_to or "").split(",") if a.strip())
    if to:
        host = (settings.smtp_host or "").strip()
        if not host:
            raise ConfigError("CHARTER_ALERT_EMAIL_TO is set but CHARTER_SMTP_HOST is not")
        out.append(
            EmailNotifier(
                host,
                to,
                sender=settings.alert_email_from,
                port=settings.smtp_port,
                username=settings.smtp_user or "",
                password=settings.secret("smtp_password") or "",
                starttls=settings.smtp_starttls,
            )
        )
    return out
