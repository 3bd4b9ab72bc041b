"""The masking vault: how placeholders the user's own message produced become values again,
only inside the executor.

The brain stores, per turn, the placeholder -> value map of the user's message (never of
the context) encrypted with Fernet at ``orgs/{org}/vaults/{turn_id}`` (``-shadow`` for the
shadow copy) with an ``expires_at`` for the store's TTL policy. The executor calls
``restore_parameters(turn, params, store)`` right before the handler runs; nothing else
decrypts a vault. An approved confirmation also restores from the vault of the turn
that asked for it (its ``turn_id`` is in the pending action).

The deployment's keys are ``CHARTER_VAULT_KEY`` (Fernet keys, comma-separated, newest first: a
rotation adds the new key in front and keeps the old one until every vault written under it has
expired; from Secret Manager in the cloud, where a service refuses to start without it). Without
it, ``demo``/``test``/``local`` use a fixed development key. What is sealed is sealed with the
organisation's key derived from them (``org_vault``: ``shared_lib.privacy.org_vault``), so a vault
is encrypted with ``rt.cipher(turn.org_id)``; a cipher of ``None`` stores no vault and
placeholders stay masked (fail closed).
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
from datetime import datetime, timedelta
from typing import Any

from cryptography.fernet import InvalidToken, MultiFernet

from shared_lib import collections
from shared_lib.errors import ConfigError
from shared_lib.ids import utc_now
from shared_lib.ports import Store, Transaction
from shared_lib.privacy.org_vault import OrgVault
from shared_lib.privacy.sanitizer import PLACEHOLDER, unmask
from shared_lib.turn.envelope import Turn

log = logging.getLogger(__name__)
DEV_ENVS = frozenset({"demo", "test", "local"})
_DEV_SEED = b"charter development vault key - not a secret, never used outside demo/test/local"


def vault_keys(env_name: str, keys: str | None) -> list[bytes] | None:
    """The deployment's vault keys of ``keys`` (``CHARTER_VAULT_KEY``, newest first); the
    development key in demo/test/local; ``None`` without a key elsewhere."""
    if keys:
        return [k.strip().encode() for k in keys.split(",") if k.strip()]
    if env_name in DEV_ENVS:
        return [base64.urlsafe_b64encode(hashlib.sha256(_DEV_SEED).digest())]
    return None


def org_vault(env_name: str, keys: str | None) -> OrgVault | None:
    """The vault of ``keys``: each organisation's cipher derived from them (``OrgVault.for_org``);
    ``None`` without a key (nothing is sealed, placeholders stay masked).

    ``ConfigError`` when a key is not a Fernet key.
    """
    found = vault_keys(env_name, keys)
    if not found:
        return None
    try:
        return OrgVault(found)
    except ValueError as exc:
        raise ConfigError(f"CHARTER_VAULT_KEY: not a Fernet key ({exc})") from exc


def vault_cipher(env_name: str, keys: str | None) -> MultiFernet | None:
    """The deployment keys' own cipher: it opens what was sealed before keys were per
    organisation, never what an organisation's cipher seals (``org_vault`` for those).

    ``ConfigError`` when a key is not a Fernet key.
    """
    vault = org_vault(env_name, keys)
    return vault.deployment if vault is not None else None


def vault_path(org_id: str, turn_id: str, *, shadow: bool = False) -> str:
    return collections.path("vaults", org=org_id, id=f"{turn_id}{'-shadow' if shadow else ''}")


def store_vault(
    store: Store,
    turn: Turn,
    entries: dict[str, str],
    *,
    now: datetime,
    ttl_minutes: int,
    cipher: MultiFernet | None,
) -> bool:
    """Merge ``entries`` into the turn's vault; ``False`` when no key is configured."""
    if not entries:
        return True
    if cipher is None:
        log.warning("no CHARTER_VAULT_KEY: masked values of turn %s cannot be restored", turn.turn_id)
        return False
    path = vault_path(turn.org_id, turn.turn_id, shadow=turn.shadow)

    def _merge(txn: Transaction) -> None:
        merged = {**_decrypt(cipher, txn.get(path)), **entries}
        txn.set(
            path,
            {
                "ciphertext": cipher.encrypt(json.dumps(merged).encode()).decode(),
                "count": len(merged),
                "user_id": turn.user_id,  # whose values: ``charter data purge`` finds them
                "created_at": now,
                "expires_at": now + timedelta(minutes=ttl_minutes),
            },
        )

    store.run_transaction(_merge)
    return True


def _decrypt(cipher: MultiFernet, doc: dict[str, Any] | None, now: datetime | None = None) -> dict[str, str]:
    if not doc or (
        now is not None and isinstance(doc.get("expires_at"), datetime) and doc["expires_at"] <= now
    ):
        return {}
    try:
        data = json.loads(cipher.decrypt(str(doc.get("ciphertext", "")).encode()))
    except (InvalidToken, ValueError):
        log.warning("a vault could not be decrypted (wrong key?)")
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _holds_placeholder(value: Any) -> bool:
    if isinstance(value, str):
        return PLACEHOLDER.search(value) is not None
    if isinstance(value, dict):
        return any(_holds_placeholder(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_holds_placeholder(v) for v in value)
    return False


def _vault_paths(turn: Turn) -> list[str]:
    paths = [vault_path(turn.org_id, turn.turn_id, shadow=turn.shadow)]
    approval, pending = turn.proposal.approval or {}, turn.context.pending_action or {}
    # the approved action's own turn (an earlier job of the conversation, or the requester's)
    asked = approval.get("pending_turn_id") or pending.get("turn_id")
    if approval.get("approved") and asked and asked != turn.turn_id:
        paths.append(vault_path(turn.org_id, str(asked)))
    return paths


def restore_parameters(
    turn: Turn,
    params: dict[str, Any],
    store: Store,
    *,
    now: datetime | None = None,
    cipher: MultiFernet | None,
) -> dict[str, Any]:
    """``params`` with the placeholders of the user's own message replaced by their values.

    For the executor only, right before validation and the handler. Placeholders that
    the user's message did not produce stay masked (the fixed logic then rejects or
    keeps them as text).
    """
    if cipher is None or not _holds_placeholder(params):
        return dict(params)  # nothing to restore: no vault read (most tool calls carry none)
    now = now or utc_now()
    entries: dict[str, str] = {}
    for path in _vault_paths(turn):
        entries.update(_decrypt(cipher, store.get(path), now))
    restored: dict[str, Any] = unmask(dict(params), entries)
    return restored
