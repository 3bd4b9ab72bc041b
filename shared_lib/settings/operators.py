"""The operators' settings: who may act on the admin service, and where alerts go.

A base of ``Settings`` (``shared_lib.settings.model``), declared with the same field helper
and read by the same sources; only the settings model reads the environment.

Nobody acts on the admin service by a shared token: an operator is an identity
(``shared_lib.admin.identity``): a per-organisation operator credential, or a Google ID token
whose verified email an operator record names. The scheduler's tasks (``/tasks/*``) take the
OIDC identity of ``CHARTER_SCHEDULER_SA`` only, checked in the app as well as by Cloud Run.
"""

from __future__ import annotations

from pydantic import SecretStr

from shared_lib.settings.channels import ChannelSettings
from shared_lib.settings.fields import _f

ALERT_TARGETS = ("observer", "admin")


class OperatorSettings(ChannelSettings):
    # Cloud Run sets K_SERVICE in every service: a process that has it is served in the cloud,
    # whatever else its environment says (Settings refuses a local CHARTER_ENV there).
    k_service: str | None = _f(None, "K_SERVICE", targets=(), doc="set by Cloud Run, never by us")
    scheduler_identities: str | None = _f(
        None,
        "CHARTER_SCHEDULER_SA",
        targets=("admin",),
        deploy="env",
        required=True,
        doc="the service account(s) whose OIDC token may run /tasks/* (comma list)",
    )
    admin_audience: str | None = _f(
        None,
        "CHARTER_ADMIN_AUDIENCE",
        targets=("admin",),
        doc="the audience an ID token must name (empty: any; Cloud Run's IAM checks it first)",
    )
    alert_room: str | None = _f(None, "CHARTER_ALERT_ROOM", targets=ALERT_TARGETS)
    alert_webhook_url: str | None = _f(None, "CHARTER_ALERT_WEBHOOK_URL", targets=ALERT_TARGETS)
    # the HMAC key of the alert webhook's signature: a receiver that checks it is never sent a forged alert
    alert_webhook_secret: SecretStr | None = _f(
        None, "CHARTER_ALERT_WEBHOOK_SECRET", targets=ALERT_TARGETS, deploy="secret"
    )
    alert_email_to: str | None = _f(None, "CHARTER_ALERT_EMAIL_TO", targets=ALERT_TARGETS)
    alert_email_from: str = _f("charter-alerts@localhost", "CHARTER_ALERT_EMAIL_FROM", targets=ALERT_TARGETS)
    smtp_host: str | None = _f(None, "CHARTER_SMTP_HOST", targets=ALERT_TARGETS)
    smtp_port: int = _f(587, "CHARTER_SMTP_PORT", targets=ALERT_TARGETS, ge=1, le=65535)
    smtp_user: str | None = _f(None, "CHARTER_SMTP_USER", targets=ALERT_TARGETS)
    smtp_password: SecretStr | None = _f(None, "CHARTER_SMTP_PASSWORD", targets=ALERT_TARGETS)
    smtp_starttls: bool = _f(True, "CHARTER_SMTP_STARTTLS", targets=ALERT_TARGETS)

    def scheduler_emails(self) -> frozenset[str]:
        """The service accounts whose OIDC token may run the scheduler's tasks, lower case."""
        raw = self.scheduler_identities or ""
        return frozenset(e.strip().lower() for e in raw.split(",") if e.strip())
