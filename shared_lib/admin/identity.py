"""Who acts on the admin service: an operator's identity, never a name in a request body.

An operator is one of:

1. **A per-organisation operator credential** (``X-Charter-Admin-Token``, or ``Authorization:
   Bearer`` when it is not a JWT): a random token bound to one organisation and one person of
   its directory, made by ``charter operators add`` (someone with access to the store) and
   shown once; the store keeps its SHA-256 only (``operator_credentials/{sha256}``).
2. **An IAM identity** (``Authorization: Bearer <Google ID token>``, which Cloud Run's IAM
   passes through): the token verified (``IdTokenVerifier``: Google's keys in the cloud, a fake
   in tests), its email names an operator record (``operator_identities/{email}``).

Either gives an ``Operator`` (organisation, person, ``platform``). Rules:

==========================  =============================================================
what                        who
==========================  =============================================================
reads (``GET /api/...``)    an operator, of the organisation asked (a ``platform`` one: any);
                            on an explicit local stack also nobody (a laptop's dashboard)
acting in an organisation   an operator of that organisation, as its own person: a ``by`` /
(memory, fine-tuning,       ``author`` in the body is ignored when it is that person, else 403;
jobs, auto-approve OFF)     another organisation is 403 and nothing changes
deployment-wide controls    a ``platform`` operator (stop, pause, resume touch every organisation)
scheduler tasks             the OIDC identity of ``CHARTER_SCHEDULER_SA`` (verified here as well
(``/tasks/*``)              as by Cloud Run); on an explicit local stack anyone (the stack's mode)
==========================  =============================================================

There is no shared operator token and no open dashboard outside an explicit local stack
(``Settings.explicit_local``).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from shared_lib import collections
from shared_lib.errors import CharterError
from shared_lib.ports import Store

TOKEN_HEADER = "X-Charter-Admin-Token"
TOKEN_PREFIX = "cho_"  # a Charter operator credential: told apart from a JWT at a glance


class IdTokenVerifier(Protocol):
    """Verifies a Google ID token: its verified email (lower case), else ``None``.

    >>> class Fake:
    ...     def verify(self, token: str, audience: str | None) -> str | None:
    ...         return {"good": "ops@example.com"}.get(token)
    >>> Fake().verify("good", None)
    'ops@example.com'
    """

    def verify(self, token: str, audience: str | None) -> str | None: ...


@dataclass(frozen=True)
class Operator:
    org: str
    person: str
    via: str  # "credential" or "iam"
    platform: bool = False  # may use the deployment-wide controls and read every organisation

    def public(self) -> dict[str, Any]:
        return {"org": self.org, "person": self.person, "via": self.via, "platform": self.platform}


class Refused(CharterError):
    """An operator request refused: ``status`` (401, 403) and a stable ``code``."""

    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(detail)
        self.status, self.code = status, code


@dataclass(frozen=True)
class Decision:
    ok: bool
    status: int = 200
    reason: str = ""
    operator: Operator | None = None


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def new_credential(
    store: Store, org: str, person: str, *, by: str, now: datetime, platform: bool = False
) -> str:
    """Make an operator credential of ``person`` in ``org``; the token, which is never stored."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    doc = {"org_id": org, "person": person, "platform": platform, "created_by": by, "created_at": now}
    store.set(collections.path("operator_credentials", id=digest(token)), doc)
    return token


def add_identity(store: Store, email: str, org: str, person: str, *, platform: bool = False) -> None:
    """Map a verified Google identity to an operator record."""
    doc = {"org_id": org, "person": person, "platform": platform}
    store.set(collections.path("operator_identities", id=email.strip().lower()), doc)


def list_credentials(store: Store, org: str | None = None) -> list[dict[str, Any]]:
    rows = store.query("operator_credentials", where=[("org_id", "==", org)] if org else [], limit=1000)
    return [{"id": path.rsplit("/", 1)[-1][:12], **doc} for path, doc in rows]


def revoke(store: Store, prefix: str) -> int:
    """Delete the credentials whose id (the token's SHA-256) starts with ``prefix`` (≥ 8 characters)."""
    if len(prefix) < 8:
        return 0
    ids = [path.rsplit("/", 1)[-1] for path, _ in store.query("operator_credentials", limit=1000)]
    gone = [i for i in ids if i.startswith(prefix)]
    for doc_id in gone:
        store.delete(collections.path("operator_credentials", id=doc_id))
    return len(gone)


def _operator(doc: dict[str, Any] | None, via: str) -> Operator | None:
    if not doc or not doc.get("org_id") or not doc.get("person"):
        return None
    return Operator(str(doc["org_id"]), str(doc["person"]), via, bool(doc.get("platform")))


def _presented(headers: Iterable[tuple[str, str]]) -> tuple[str, str]:
    """(the operator credential, the bearer token) a request presents; empty when absent."""
    lower = {k.lower(): v for k, v in headers}
    auth = lower.get("authorization", "").strip()
    bearer = auth[7:].strip() if auth[:7].lower() == "bearer " else ""
    return lower.get(TOKEN_HEADER.lower(), "").strip(), bearer


def _is_jwt(token: str) -> bool:
    return token.count(".") == 2 and not token.startswith(TOKEN_PREFIX)


@dataclass(frozen=True)
class Gate:
    """The admin service's door: ``check`` for the API, ``check_task`` for the scheduler."""

    store: Store
    local: bool  # an explicit local stack (Settings.explicit_local)
    verifier: IdTokenVerifier | None = None
    audience: str | None = None
    scheduler: frozenset[str] = frozenset()

    def _email(self, bearer: str) -> str | None:
        if not bearer or not _is_jwt(bearer) or self.verifier is None:
            return None
        email = self.verifier.verify(bearer, self.audience)
        return email.strip().lower() if email else None

    def identify(self, headers: Iterable[tuple[str, str]]) -> Decision:
        """The operator a request presents (``ok`` without one when it presents nothing)."""
        credential, bearer = _presented(headers)
        credential = credential or (bearer if bearer and not _is_jwt(bearer) else "")
        if credential:
            doc = self.store.get(collections.path("operator_credentials", id=digest(credential)))
            found = _operator(doc, "credential")
            return (
                Decision(True, operator=found)
                if found
                else Decision(False, 401, "operator credential rejected")
            )
        if bearer:
            email = self._email(bearer)
            if email is None:
                return Decision(False, 401, "identity token rejected")
            doc = self.store.get(collections.path("operator_identities", id=email))
            found = _operator(doc, "iam")
            return (
                Decision(True, operator=found) if found else Decision(False, 403, f"{email} is no operator")
            )
        return Decision(True)

    def check(self, headers: Iterable[tuple[str, str]], *, control: bool) -> Decision:
        decision = self.identify(headers)
        if not decision.ok or decision.operator is not None:
            return decision
        if self.local and not control:
            return decision  # a laptop's dashboard reads without an identity
        return Decision(False, 401, "an operator identity is required (operator credential or ID token)")

    def check_task(self, headers: Iterable[tuple[str, str]]) -> Decision:
        """A scheduler task: the OIDC identity of an allowed service account (locally: anyone)."""
        if self.local:
            return Decision(True)
        email = self._email(_presented(headers)[1])
        if email is None:
            return Decision(False, 401, "the scheduler's OIDC token is required")
        if email not in self.scheduler:
            return Decision(False, 403, f"{email} may not run scheduler tasks")
        return Decision(True)

    def describe(self, operator: Operator | None) -> dict[str, object]:
        return {
            "local": self.local,
            "reads_need_identity": not self.local,
            "operator": operator.public() if operator else None,
        }


def read_org(operator: Operator | None, requested: str | None) -> str | None:
    """The organisation a read is about: the operator's own (asking another one is 403)."""
    if operator is None or operator.platform:
        return requested  # a laptop without identity, or a platform operator: what was asked
    if requested and requested != operator.org:
        raise Refused(403, "other_organisation", f"this operator reads {operator.org} only")
    return operator.org


def acting(operator: Operator | None, org: str, named: str = "") -> str:
    """The person acting in ``org``: the operator's own. A person ``named`` in the request must
    be that person, and ``org`` the operator's organisation; else ``Refused`` (403)."""
    if operator is None:
        raise Refused(401, "unauthorized", "acting needs an operator identity")
    if org and org != operator.org:
        raise Refused(403, "other_organisation", f"this operator acts in {operator.org} only")
    if named and named != operator.person:
        raise Refused(
            403, "not_the_operator", f"the operator is {operator.person}, the request names {named}"
        )
    return operator.person


def deployment_control(operator: Operator | None, named: str = "") -> str:
    """The person using a deployment-wide control: a ``platform`` operator's own."""
    if operator is None:
        raise Refused(401, "unauthorized", "a control needs an operator identity")
    if not operator.platform:
        raise Refused(
            403, "not_platform", "stop, pause and resume touch every organisation: platform operators only"
        )
    if named and named != operator.person:
        raise Refused(
            403, "not_the_operator", f"the operator is {operator.person}, the request names {named}"
        )
    return operator.person
