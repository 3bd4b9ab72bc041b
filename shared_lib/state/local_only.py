"""A conversation's ``/local`` (seed 003 明示コマンド), kept until ``/cloud``.

One document per conversation, ``orgs/{org}/local_only/{id}`` (the session's id)::

    local_only  True after /local, False after /cloud
    set_by      the turn that set it last (turn_id, at): redelivery and reordering never undo it
    updated_at

It has no expiry and no TTL: local-only is explicit, so it never lapses with the 30-minute
session (a conversation that went quiet must not come back to the cloud without the user
saying so). ``shared_lib.state.session`` reads it into the session it loads.
"""

from __future__ import annotations

from datetime import datetime

from shared_lib.collections import conversation_id, path
from shared_lib.ports import Store, Transaction


def local_only_path(org_id: str, conversation_key: str) -> str:
    return path("local_only", org=org_id, id=conversation_id(conversation_key))


def read_local_only(store: Store, org_id: str, conversation_key: str, *, before: bool = False) -> bool:
    """Whether the conversation is local-only. No document: ``before``, what the conversation's
    session said when it still kept the mode (a conversation switched to /local before the mode
    had its own document stays local-only: fail closed)."""
    doc = store.get(local_only_path(org_id, conversation_key))
    return before if doc is None else bool(doc.get("local_only"))


def write_local_only(
    store: Store,
    org_id: str,
    conversation_key: str,
    local_only: bool,
    now: datetime,
    *,
    turn_id: str,
    at: datetime,
) -> bool:
    """Record ``/local`` (``True``) or ``/cloud`` (``False``) of turn ``turn_id`` (received ``at``).

    Idempotent under redelivery: the turn that already set it writes nothing again, and a turn
    older than the one that set it last never overrides it. ``False`` when nothing was written.
    The setting is the conversation's, not the session's: it holds until ``/cloud``
    (the context layer calls it ``set_local_only``).
    """
    doc_path = local_only_path(org_id, conversation_key)

    def _txn(txn: Transaction) -> bool:
        doc = txn.get(doc_path) or {}
        setter = doc.get("set_by") or {}
        if setter.get("turn_id") == turn_id:
            return False
        previous = setter.get("at")
        if isinstance(previous, datetime) and previous > at:
            return False
        txn.set(
            doc_path,
            {"local_only": local_only, "set_by": {"turn_id": turn_id, "at": at}, "updated_at": now},
        )
        return True

    return store.run_transaction(_txn)
