"""Runtime flag overrides: ``config/flags_override``, written by an operator or the rollback guard.

An override lives beside the Terraform-managed ``config/flags`` (so ``terraform apply``
never fights it), always has an expiry, an author and a reason, and wins in evaluation
until it expires. Every change is appended to ``config_audit/{id}`` in the same
transaction (ids are ULIDs, so the audit sorts by time).

The document has a global part (``write_override``) and per-organisation rollbacks
(``write_org_override``: ``orgs[org]``, each with its own expiry). Writing one part keeps
the other's active entries; ``clear_override`` removes the whole document.

>>> from datetime import timedelta
>>> from shared_lib.adapters.memory_store import MemoryStore
>>> store = MemoryStore()
>>> write_override(store, brain_mode="legacy", ttl=timedelta(hours=1), author="ops", reason="drill").brain_mode
'legacy'
>>> write_org_override(store, "acme", ttl=timedelta(hours=2), author="ops", reason="drill").orgs["acme"].brain_mode
'legacy'
>>> clear_override(store, "ops", "drill over")
True
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from shared_lib.errors import ConfigError
from shared_lib.flags import AUDIT_COLLECTION, OVERRIDE_DOC, BrainMode, FlagsOverride, OrgOverride
from shared_lib.ids import new_ulid, utc_now
from shared_lib.observability.logs import log_event
from shared_lib.ports import Store, Transaction

MAX_TTL = timedelta(days=30)


def _strictness(override: FlagsOverride | None, now: datetime) -> int:
    """2 = emergency stop, 1 = rollback to legacy, 0 = nothing stricter than the file."""
    if override is None or not override.active(now):
        return 0
    if override.kill_switch:
        return 2
    return 1 if override.brain_mode == "legacy" else 0


def _parse(raw: dict[str, Any] | None) -> FlagsOverride | None:
    if not raw:
        return None
    try:
        return FlagsOverride.model_validate(raw)
    except ValueError:
        return None  # a broken override is replaced (and audited with its raw content)


def _active_orgs(override: FlagsOverride | None, now: datetime) -> dict[str, OrgOverride]:
    if override is None:
        return {}
    return {org: entry for org, entry in override.orgs.items() if entry.active(now)}


def _check_ttl(ttl: timedelta) -> None:
    if not timedelta(0) < ttl <= MAX_TTL:
        raise ConfigError(f"override ttl must be within (0, {MAX_TTL}], got {ttl}")


def operator_override(override: FlagsOverride | None, now: datetime, automaton: str) -> FlagsOverride | None:
    """The active global part an operator set (any author but ``automaton``, the rollback guard),
    else ``None``: an explicit choice for every organisation that no automaton overwrites."""
    if override is None or not override.active(now) or override.author == automaton:
        return None
    return override if override.brain_mode is not None or override.kill_switch is not None else None


def read_override(store: Store) -> FlagsOverride | None:
    """The stored override (active or expired), or None; raises when it does not validate."""
    raw = store.get(OVERRIDE_DOC)
    return FlagsOverride.model_validate(raw) if raw else None


def write_override(
    store: Store,
    *,
    brain_mode: BrainMode | None = None,
    kill_switch: bool | None = None,
    ttl: timedelta,
    author: str,
    reason: str,
    now: datetime | None = None,
    unless_stricter_active: bool = False,
    unless_operator: bool = False,
) -> FlagsOverride | None:
    """Write (replace) the override and audit it; returns it.

    With ``unless_stricter_active`` (the rollback guard) nothing is written and ``None``
    is returned when an active override is already at least as strict; with
    ``unless_operator`` also when an operator's (another author's) global part is active.
    """
    if brain_mode is None and kill_switch is None:
        raise ConfigError("an override sets brain_mode, kill_switch or both")
    _check_ttl(ttl)
    at = now or utc_now()
    override = FlagsOverride(
        brain_mode=brain_mode,
        kill_switch=kill_switch,
        expires_at=at + ttl,
        author=author,
        reason=reason,
        created_at=at,
    )

    def _txn(txn: Transaction) -> FlagsOverride | None:
        raw_before = txn.get(OVERRIDE_DOC)
        before = _parse(raw_before)
        if unless_stricter_active and _strictness(before, at) >= _strictness(override, at):
            return None
        if unless_operator and operator_override(before, at, author) is not None:
            return None
        # Organisations rolled back stay rolled back until their own expiry.
        written = override.model_copy(update={"orgs": _active_orgs(before, at)})
        txn.set(OVERRIDE_DOC, written.model_dump(exclude_none=True))
        txn.create(
            f"{AUDIT_COLLECTION}/{new_ulid()}",
            _audit("override_set", author, reason, at, written.model_dump(exclude_none=True), raw_before),
        )
        return written

    written = store.run_transaction(_txn)
    if written is not None:
        log_event(
            "flags_override_set",
            layer="rollout",
            severity="WARNING",
            author=author,
            reason=reason,
            brain_mode=brain_mode,
            kill_switch=kill_switch,
            expires_at=override.expires_at.isoformat(),
        )
    return written


def write_org_override(
    store: Store,
    org_id: str,
    *,
    ttl: timedelta,
    author: str,
    reason: str,
    now: datetime | None = None,
    unless_stricter_active: bool = False,
    unless_operator: bool = False,
) -> FlagsOverride | None:
    """Roll one organisation back to legacy (``orgs[org_id]``) and audit it; returns the document.

    The global part is kept while active. With ``unless_stricter_active`` (the rollback guard)
    nothing is written and ``None`` is returned when a global rollback or kill switch, or
    this organisation's own rollback, is already active; with ``unless_operator`` also when
    an operator's (another author's) global part is active: it chose every organisation's arm.
    """
    if not org_id:
        raise ConfigError("an organisation override names its organisation")
    _check_ttl(ttl)
    at = now or utc_now()
    entry = OrgOverride(expires_at=at + ttl, author=author, reason=reason, created_at=at)

    def _txn(txn: Transaction) -> FlagsOverride | None:
        raw_before = txn.get(OVERRIDE_DOC)
        before = _parse(raw_before)
        orgs = _active_orgs(before, at)
        if unless_stricter_active and (_strictness(before, at) >= 1 or org_id in orgs):
            return None
        if unless_operator and operator_override(before, at, author) is not None:
            return None
        orgs[org_id] = entry
        if before is not None and before.active(at) and (before.brain_mode or before.kill_switch is not None):
            written = before.model_copy(update={"orgs": orgs})
        else:  # no global part in force: the document's own fields describe its organisations
            written = FlagsOverride(
                expires_at=max(e.expires_at for e in orgs.values()),
                author=author,
                reason=f"organisation rollbacks: {', '.join(sorted(orgs))}",
                created_at=at,
                orgs=orgs,
            )
        body = written.model_dump(exclude_none=True)
        txn.set(OVERRIDE_DOC, body)
        txn.create(
            f"{AUDIT_COLLECTION}/{new_ulid()}",
            {**_audit("org_override_set", author, reason, at, body, raw_before), "org_id": org_id},
        )
        return written

    written = store.run_transaction(_txn)
    if written is not None:
        log_event(
            "flags_org_override_set",
            layer="rollout",
            severity="WARNING",
            author=author,
            reason=reason,
            org_id=org_id,
            expires_at=entry.expires_at.isoformat(),
        )
    return written


def clear_override(store: Store, author: str, reason: str, *, now: datetime | None = None) -> bool:
    """Remove the override (evaluation falls back to the file); ``False`` when there was none."""
    at = now or utc_now()

    def _txn(txn: Transaction) -> bool:
        raw_before = txn.get(OVERRIDE_DOC)
        if raw_before is None:
            return False
        txn.delete(OVERRIDE_DOC)
        txn.create(
            f"{AUDIT_COLLECTION}/{new_ulid()}",
            _audit("override_cleared", author, reason, at, None, raw_before),
        )
        return True

    cleared = store.run_transaction(_txn)
    if cleared:
        log_event("flags_override_cleared", layer="rollout", severity="WARNING", author=author, reason=reason)
    return cleared


def audit_entries(store: Store, *, limit: int = 20) -> list[dict[str, Any]]:
    """The latest audit entries, newest first."""
    rows = store.query(AUDIT_COLLECTION, order_by="at", descending=True, limit=limit)
    # Ids are ULIDs: they break ties between entries written in the same instant.
    rows.sort(key=lambda row: (row[1].get("at"), row[0]), reverse=True)
    return [{"id": doc_id, **doc} for doc_id, doc in rows]


def _audit(
    action: str,
    author: str,
    reason: str,
    at: datetime,
    override: dict[str, Any] | None,
    previous: dict[str, Any] | None,
) -> dict[str, Any]:
    return {
        "action": action,
        "author": author,
        "reason": reason,
        "at": at,
        "document": OVERRIDE_DOC,
        "override": override,
        "previous": previous,
    }
