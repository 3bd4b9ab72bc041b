"""The organisation's vault key: one Fernet key per organisation, derived from the deployment's.

The deployment holds the vault keys (``CHARTER_VAULT_KEY``: Fernet keys, newest first). What an
organisation's people give the assistant is sealed with a key of that organisation alone:
HKDF-SHA256 of a deployment key with the organisation id in ``info`` (``charter/vault/org/`` +
id: domain-separated, so no other use of the deployment key derives it). A value sealed for one
organisation does not open with another's cipher, whatever the other's people or an operator of
it may read.

``OrgVault.for_org(org)`` is the organisation's ``MultiFernet``: its keys derived from each
deployment key (newest first: what it seals is sealed with the first), then the deployment keys
themselves, read-only fallbacks that open what was sealed before keys were per organisation
(``MultiFernet`` encrypts with its first key only). A rotation of the deployment key re-derives
every organisation's key; the older keys stay behind it until their data is sealed again.
Cost: one HKDF per organisation per process (cached); no store read.

>>> from cryptography.fernet import Fernet
>>> vault = OrgVault([Fernet.generate_key()])
>>> token = vault.for_org("org-a").encrypt(b"090-1234-5678")
>>> vault.for_org("org-a").decrypt(token)
b'090-1234-5678'
>>> from cryptography.fernet import InvalidToken
>>> try:
...     vault.for_org("org-b").decrypt(token)
... except InvalidToken:
...     print("another organisation's cipher cannot open it")
another organisation's cipher cannot open it
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Sequence

from cryptography.fernet import Fernet, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

ORG_INFO = b"charter/vault/org/"


def derive_org_key(deployment_key: bytes, org_id: str) -> bytes:
    """The Fernet key of ``org_id`` under one deployment Fernet key (urlsafe base64, as Fernet
    takes it). ``ValueError`` for an empty organisation id: every kept value belongs to one."""
    if not org_id:
        raise ValueError("an organisation's vault key needs the organisation id")
    material = base64.urlsafe_b64decode(deployment_key)
    hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=ORG_INFO + org_id.encode())
    return base64.urlsafe_b64encode(hkdf.derive(material))


class OrgVault:
    """The deployment's vault keys and each organisation's cipher derived from them."""

    def __init__(self, keys: Sequence[bytes]) -> None:
        if not keys:
            raise ValueError("a vault needs at least one key")
        self._fallbacks = [Fernet(k) for k in keys]  # ValueError: not a Fernet key
        self._keys = [bytes(k) for k in keys]
        self._ciphers: dict[str, MultiFernet] = {}
        self._lock = threading.Lock()

    def for_org(self, org_id: str) -> MultiFernet:
        """``org_id``'s cipher: it seals with the organisation's newest key and opens what any
        of its keys or, as before keys were per organisation, a deployment key sealed."""
        cipher = self._ciphers.get(org_id)
        if cipher is None:
            own = [Fernet(derive_org_key(k, org_id)) for k in self._keys]
            cipher = MultiFernet([*own, *self._fallbacks])
            with self._lock:
                cipher = self._ciphers.setdefault(org_id, cipher)
        return cipher

    @property
    def deployment(self) -> MultiFernet:
        """The deployment keys alone: they open only what was sealed before keys were per
        organisation (and a deployment-wide record), never an organisation's new seals."""
        return MultiFernet(self._fallbacks)
