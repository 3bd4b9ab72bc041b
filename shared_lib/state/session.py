"""Session state in the store (seed 000 §5.1.5–5.1.6), changed only inside transactions.

One document per conversation, ``orgs/{org}/sessions/{id}``::

    mode            normal | confirmation_pending | multi_step_flow | error_recovery
    pending_actions the actions awaiting the user's answer, oldest first (each: its job id as
                    ``approval_id``, proposing user, proposal, parameters hash, policy
                    version, reasons, confirmations, ``reminded`` once the reminder was shown)
    pending_action  the latest of them (what the reminder is about; written with the list, and
                    a document of before the list, with only this, reads as a list of one)
    last_intent, last_tool_called, last_error, error_count, updated_at, expires_at
    last_route      the route of the last reply (seed 003: a change of route is announced)
    local_only      /local set it, /cloud cleared it (seed 003): no cloud LLM while true; read
                    from its own document (``shared_lib.state.local_only``), which outlives the
                    session: /local holds until /cloud, never lapsing with the session's TTL

A session lives 30 minutes from its last update and a pending action 10 minutes from
its creation (policy ``confirmation``). Expiry is automatic: an expired session or
pending action reads as absent (with ``expired`` / ``pending_expired`` and the ids in
``expired_approval_ids`` set so the brain can say so and expire their jobs) and the next
write drops it; the conversation is ``confirmation_pending`` while any action waits.

    normal ──CONFIRM──► confirmation_pending ──answer / expiry──► normal
      │  ▲                                      (error_recovery and multi_step_flow
      ▼  │                                       return to normal the same way)
    multi_step_flow / error_recovery
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, Literal

from shared_lib.collections import session_path
from shared_lib.errors import CharterError
from shared_lib.policy.config import Confirmation, load_policy_config
from shared_lib.ports import Store, Transaction
from shared_lib.state.local_only import read_local_only

Mode = Literal["normal", "confirmation_pending", "multi_step_flow", "error_recovery"]
MODES: tuple[Mode, ...] = ("normal", "confirmation_pending", "multi_step_flow", "error_recovery")
# A live pending action pins the mode: it leaves confirmation_pending only by an answer or expiry.
TRANSITIONS: dict[Mode, frozenset[Mode]] = {
    "normal": frozenset(MODES),
    "confirmation_pending": frozenset({"normal", "confirmation_pending"}),
    "multi_step_flow": frozenset(MODES),
    "error_recovery": frozenset(MODES),
}


class InvalidTransition(CharterError):
    """A mode change the state machine does not allow."""


def _ttl(config: Confirmation | None) -> tuple[timedelta, timedelta]:
    cfg = config or load_policy_config().confirmation
    return timedelta(minutes=cfg.session_ttl_minutes), timedelta(minutes=cfg.pending_ttl_minutes)


def params_hash(tool_name: str, parameters: dict[str, Any]) -> str:
    """Hash of one call (kept for callers of the first version; pending actions hash every call)."""
    body = json.dumps(
        {"tool": tool_name, "parameters": parameters}, sort_keys=True, ensure_ascii=False, default=str
    )
    return hashlib.sha256(body.encode()).hexdigest()


def _expired(value: Any, now: datetime) -> bool:
    return isinstance(value, datetime) and value <= now


def actions(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The pending actions of a stored session, oldest first (a document of before the list
    keeps only ``pending_action``)."""
    listed = doc.get("pending_actions")
    if isinstance(listed, list):
        return [a for a in listed if isinstance(a, dict)]
    one = doc.get("pending_action")
    return [one] if isinstance(one, dict) else []


def _with_actions(doc: dict[str, Any], kept: list[dict[str, Any]]) -> dict[str, Any]:
    return {**doc, "pending_actions": kept, "pending_action": kept[-1] if kept else None}


def live(doc: dict[str, Any] | None, now: datetime) -> dict[str, Any]:
    """The session as it stands at ``now``: expiry applied, never ``None``."""
    if not doc:
        return {"mode": "normal"}
    listed = actions(doc)
    if _expired(doc.get("expires_at"), now):
        out: dict[str, Any] = {"mode": "normal", "expired": True}
        gone = listed
        kept: list[dict[str, Any]] = []
    else:
        gone = [a for a in listed if _expired(a.get("expires_at"), now)]
        kept = [a for a in listed if not _expired(a.get("expires_at"), now)]
        out = _with_actions(dict(doc), kept)
        if not kept and out.get("mode") == "confirmation_pending":
            out["mode"] = "normal"
    if gone:
        ids = [str(a.get("approval_id")) for a in gone if a.get("approval_id")]
        out.update(
            pending_expired=True,
            expired_approval_id=ids[-1] if ids else None,
            expired_approval_ids=ids,
        )
    return out


def load_session(store: Store, org_id: str, conversation_key: str, now: datetime) -> dict[str, Any]:
    """The live session (expired sessions and pending actions read as absent), with the
    conversation's ``local_only`` (kept apart: it does not expire with the session)."""
    doc = live(store.get(session_path(org_id, conversation_key)), now)
    before = bool(doc.pop("local_only", False))  # a session written before local-only had its own document
    on = read_local_only(store, org_id, conversation_key, before=before)
    return {**doc, "local_only": True} if on else doc


def _change(
    store: Store,
    org_id: str,
    conversation_key: str,
    now: datetime,
    change: Callable[[dict[str, Any]], dict[str, Any] | None],
    config: Confirmation | None,
) -> bool:
    """Apply ``change`` to the live session in one transaction; ``None`` from it means no write."""
    path = session_path(org_id, conversation_key)
    session_ttl, _ = _ttl(config)

    def _txn(txn: Transaction) -> bool:
        doc = live(txn.get(path), now)
        for transient in ("expired", "pending_expired", "expired_approval_id", "expired_approval_ids"):
            doc.pop(transient, None)
        new = change(doc)
        if new is None:
            return False
        new = _with_actions(new, actions(new))
        txn.set(
            path,
            {
                **new,
                "created_at": new.get("created_at") or now,
                "updated_at": now,
                "expires_at": now + session_ttl,
            },
        )
        return True

    return store.run_transaction(_txn)


def _moved(doc: dict[str, Any], mode: Mode) -> dict[str, Any]:
    current: Mode = doc.get("mode") or "normal"
    if mode not in TRANSITIONS.get(current, frozenset(MODES)):
        raise InvalidTransition(f"{current} -> {mode}")
    return {**doc, "mode": mode}


def set_pending(
    store: Store,
    org_id: str,
    conversation_key: str,
    pending: dict[str, Any],
    now: datetime,
    *,
    replaces: str | None = None,
    config: Confirmation | None = None,
) -> None:
    """Ask: the conversation also waits for an answer to ``pending`` (the latest; an action of
    the same approval id, a redelivered ask, or ``replaces``, the one answered by asking again,
    makes way for it; earlier ones wait on until answered or expired)."""
    _, pending_ttl = _ttl(config)
    gone = {pending.get("approval_id"), replaces} - {None}

    def change(doc: dict[str, Any]) -> dict[str, Any]:
        kept = [a for a in actions(doc) if a.get("approval_id") not in gone]
        new = {**pending, "created_at": now, "expires_at": now + pending_ttl}
        return _with_actions(_moved(doc, "confirmation_pending"), [*kept, new])

    _change(store, org_id, conversation_key, now, change, config)


def _entry(doc: dict[str, Any], approval_id: str) -> dict[str, Any] | None:
    return next((a for a in actions(doc) if a.get("approval_id") == approval_id), None)


def _replaced(doc: dict[str, Any], approval_id: str, entry: dict[str, Any] | None) -> dict[str, Any]:
    """``doc`` with the action ``approval_id`` replaced by ``entry`` (removed when ``None``)."""
    listed = actions(doc)
    at = [a.get("approval_id") for a in listed].index(approval_id)
    kept = listed[:at] + ([entry] if entry else []) + listed[at + 1 :]
    return _with_actions(doc, kept)


def advance_pending(
    store: Store,
    org_id: str,
    conversation_key: str,
    approval_id: str,
    now: datetime,
    *,
    confirmations: int,
    config: Confirmation | None = None,
) -> bool:
    """Record the n-th "yes" of a double confirmation; ``False`` if no pending action is that one."""
    _, pending_ttl = _ttl(config)

    def change(doc: dict[str, Any]) -> dict[str, Any] | None:
        pending = _entry(doc, approval_id)
        if pending is None:
            return None
        if int(pending.get("confirmations_received", 0)) not in (confirmations - 1, confirmations):
            return None
        advanced = {**pending, "confirmations_received": confirmations, "expires_at": now + pending_ttl}
        return _replaced(doc, approval_id, advanced)

    return _change(store, org_id, conversation_key, now, change, config)


def mark_reminded(
    store: Store,
    org_id: str,
    conversation_key: str,
    approval_id: str,
    now: datetime,
    *,
    config: Confirmation | None = None,
) -> bool:
    """The reminder about ``approval_id`` was shown: the next message that is no answer is a new
    intent (seed 000 §5.1.7 reminds once; the action still waits until answered or expired)."""

    def change(doc: dict[str, Any]) -> dict[str, Any] | None:
        pending = _entry(doc, approval_id)
        if pending is None or pending.get("reminded"):
            return None
        return _replaced(doc, approval_id, {**pending, "reminded": True})

    return _change(store, org_id, conversation_key, now, change, config)


def resolve_pending(
    store: Store,
    org_id: str,
    conversation_key: str,
    approval_id: str,
    now: datetime,
    *,
    outcome: str = "resolved",
    last_intent: str | None = None,
    config: Confirmation | None = None,
) -> bool:
    """Clear the pending action ``approval_id`` if it still waits; ``False`` when it did not."""

    def change(doc: dict[str, Any]) -> dict[str, Any] | None:
        if _entry(doc, approval_id) is None:
            return None
        new = _replaced(doc, approval_id, None)
        return {
            **(new if new["pending_actions"] else _moved(new, "normal")),
            "last_intent": last_intent or doc.get("last_intent"),
            "last_resolution": {"approval_id": approval_id, "outcome": outcome, "at": now},
        }

    return _change(store, org_id, conversation_key, now, change, config)


def touch(
    store: Store,
    org_id: str,
    conversation_key: str,
    now: datetime,
    *,
    mode: Mode | None = None,
    config: Confirmation | None = None,
    **fields: Any,
) -> None:
    """Record a finished turn; a live pending action keeps the conversation confirmation_pending."""

    def change(doc: dict[str, Any]) -> dict[str, Any]:
        new = {**doc, **fields}
        if doc.get("pending_action"):
            return {**new, "mode": "confirmation_pending"}
        if doc.get("mode") == "confirmation_pending":  # its pending action expired: back to normal
            new["mode"] = "normal"
        return _moved(new, mode) if mode else new

    _change(store, org_id, conversation_key, now, change, config)


def set_mode(
    store: Store,
    org_id: str,
    conversation_key: str,
    mode: Mode,
    now: datetime,
    *,
    config: Confirmation | None = None,
    **fields: Any,
) -> None:
    """Move to ``mode`` (raises ``InvalidTransition`` while a confirmation is pending)."""
    _change(store, org_id, conversation_key, now, lambda doc: {**_moved(doc, mode), **fields}, config)


def finish_turn(
    store: Store,
    org_id: str,
    conversation_key: str,
    now: datetime,
    *,
    error_code: str | None,
    config: Confirmation | None = None,
    **fields: Any,
) -> None:
    """Record a turn's end: an error moves to ``error_recovery`` (counted), success back to normal."""

    def change(doc: dict[str, Any]) -> dict[str, Any]:
        new = {**doc, **fields}
        if doc.get("pending_action"):
            return {**new, "mode": "confirmation_pending"}
        if error_code:
            return {
                **new,
                "mode": "error_recovery",
                "last_error": error_code,
                "error_count": int(doc.get("error_count") or 0) + 1,
            }
        return {**new, "mode": "normal", "error_count": 0}

    _change(store, org_id, conversation_key, now, change, config)
