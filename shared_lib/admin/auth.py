"""The operator token (``CHARTER_ADMIN_TOKEN``) of the admin dashboard.

The token travels as ``X-Charter-Admin-Token`` (or ``Authorization: Bearer <token>`` where
no platform identity uses that header) and is compared in constant time. Rules:

=======================  ===========================  ==================================
environment              token set                    token missing
=======================  ===========================  ==================================
local, test, demo        reads open; controls need it  everything open (a laptop)
dev, stg, prod           reads and controls need it    locked: controls refused, reads too
=======================  ===========================  ==================================

In a deployed environment a token shorter than ``MIN_TOKEN_CHARS`` counts as missing.
Scheduler tasks (``/tasks/*``) are not behind the token: Cloud Run IAM admits only the
scheduler's identity and the operators (the admin service must never allow ``allUsers``).
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

LOCAL_ENVS = frozenset({"local", "test", "demo"})
MIN_TOKEN_CHARS = 16
TOKEN_HEADER = "X-Charter-Admin-Token"


@dataclass(frozen=True)
class Decision:
    ok: bool
    status: int = 200
    reason: str = ""


@dataclass(frozen=True)
class TokenPolicy:
    env: str
    token: str | None

    @classmethod
    def from_env(cls, env_name: str, environ: Mapping[str, str]) -> TokenPolicy:
        return cls.of(env_name, environ.get("CHARTER_ADMIN_TOKEN"))

    @classmethod
    def of(cls, env_name: str, token_setting: str | None) -> TokenPolicy:
        token = (token_setting or "").strip() or None
        if token is not None and env_name not in LOCAL_ENVS and len(token) < MIN_TOKEN_CHARS:
            token = None
        return cls(env=env_name, token=token)

    @property
    def local(self) -> bool:
        return self.env in LOCAL_ENVS

    @property
    def locked(self) -> bool:
        return self.token is None and not self.local

    def check(self, headers: Iterable[tuple[str, str]], *, control: bool) -> Decision:
        """``headers`` as (name, value) pairs (a werkzeug ``Headers`` iterates so)."""
        if self.locked:
            return Decision(False, 403, "locked: CHARTER_ADMIN_TOKEN is not configured in this environment")
        if self.token is None:
            return Decision(True)
        if not control and self.local:
            return Decision(True)
        provided = presented_token(headers)
        if provided is None:
            return Decision(False, 401, "operator token required")
        if not hmac.compare_digest(provided.encode(), self.token.encode()):
            return Decision(False, 401, "operator token rejected")
        return Decision(True)

    def describe(self) -> dict[str, object]:
        return {
            "env": self.env,
            "locked": self.locked,
            "token_configured": self.token is not None,
            "reads_need_token": self.token is not None and not self.local,
            "controls_need_token": self.token is not None,
        }


def presented_token(headers: Iterable[tuple[str, str]]) -> str | None:
    """``X-Charter-Admin-Token`` first: behind Cloud Run IAM, ``Authorization`` carries the caller's identity."""
    lower = {k.lower(): v for k, v in headers}
    value = lower.get(TOKEN_HEADER.lower(), "").strip()
    if value:
        return value
    auth = lower.get("authorization", "")
    return (auth[7:].strip() or None) if auth[:7].lower() == "bearer " else None
