"""The admin service's door in tests: operator credentials made as ``charter operators add``
makes them, and a fake ``IdTokenVerifier`` (Google's ID tokens as a table, no network)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from shared_lib.admin.app import create_app
from shared_lib.admin.identity import TOKEN_HEADER, Gate, new_credential

SCHEDULER = "charter-scheduler@acme-prod.iam.gserviceaccount.com"
NOW = datetime(2026, 11, 25, 9, 0, tzinfo=UTC)


class FakeVerifier:
    """ID tokens as ``token -> verified email``; any other token is not verified."""

    def __init__(self, emails: dict[str, str] | None = None) -> None:
        self.emails = dict(emails or {})
        self.audiences: list[str | None] = []

    def verify(self, token: str, audience: str | None) -> str | None:
        self.audiences.append(audience)
        return self.emails.get(token)


def gate(rt: Any, *, local: bool = True, verifier: FakeVerifier | None = None) -> Gate:
    return Gate(
        store=rt.store,
        local=local,
        verifier=verifier or FakeVerifier(),
        audience="https://charter-admin.example.run.app",
        scheduler=frozenset({SCHEDULER}),
    )


def client(rt: Any, *, local: bool = True, verifier: FakeVerifier | None = None) -> Any:
    return create_app(rt, gate=gate(rt, local=local, verifier=verifier)).test_client()


def credential(rt: Any, person: str, org: str, *, platform: bool = False) -> str:
    return new_credential(rt.store, org, person, by="test", now=NOW, platform=platform)


def as_(rt: Any, person: str, org: str, *, platform: bool = False) -> dict[str, str]:
    """The headers of an operator credential of ``person`` in ``org``."""
    return {TOKEN_HEADER: credential(rt, person, org, platform=platform)}
