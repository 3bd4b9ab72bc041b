"""Session state in the store: mode, pending action, last intent; 30-minute sessions and
10-minute pending actions (seed 000 §5.1.5). Every change happens in a transaction.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from datetime import datetime, timedelta
from typing import Any, Literal

from shared_lib.ports import Store, Transaction

SESSION_TTL = timedelta(minutes=30)
PENDING_TTL = timedelta(minutes=10)
Answer = Literal["approve", "deny", "other"]

_APPROVE = {"はい", "うん", "ok", "おk", "okay", "yes", "y", "1", "お願い", "お願いします", "おねがい", "実行",
            "実行して", "いいよ", "いいです", "大丈夫", "承認", "approve", "sure", "go"}
_DENY = {"いいえ", "いや", "no", "n", "2", "やめて", "やめる", "やめておく", "キャンセル", "cancel", "中止",
         "だめ", "ダメ", "不要", "しない"}


def conversation_id(conversation_key: str) -> str:
    return hashlib.sha256(conversation_key.encode()).hexdigest()[:32]


def session_path(org_id: str, conversation_key: str) -> str:
    return f"orgs/{org_id}/sessions/{conversation_id(conversation_key)}"


def params_hash(tool_name: str, parameters: dict[str, Any]) -> str:
    body = json.dumps({"tool": tool_name, "parameters": parameters}, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(body.encode()).hexdigest()


def parse_answer(text: str) -> Answer:
    """Approval / denial in Japanese and English forms and numbered choices."""
    norm = unicodedata.normalize("NFKC", text).strip().lower()
    norm = re.sub(r"[。、!！?？\s🐺]+$", "", norm)
    norm = re.sub(r"^(では|じゃあ|それでは)\s*", "", norm)
    if norm in _APPROVE:
        return "approve"
    if norm in _DENY:
        return "deny"
    return "other"


def load_session(store: Store, org_id: str, conversation_key: str, now: datetime) -> dict[str, Any]:
    """The live session (expired sessions and pending actions read as absent)."""
    doc = store.get(session_path(org_id, conversation_key)) or {}
    if doc and _expired(doc.get("expires_at"), now):
        return {"mode": "normal", "expired": True}
    pending = doc.get("pending_action")
    if pending and _expired(pending.get("expires_at"), now):
        doc = {**doc, "mode": "normal", "pending_action": None, "pending_expired": True}
    return doc or {"mode": "normal"}


def _expired(value: Any, now: datetime) -> bool:
    return isinstance(value, datetime) and value <= now


def set_pending(store: Store, org_id: str, conversation_key: str, pending: dict[str, Any], now: datetime) -> None:
    path = session_path(org_id, conversation_key)

    def _txn(txn: Transaction) -> None:
        doc = txn.get(path) or {}
        txn.set(path, {**doc, "mode": "confirmation_pending", "updated_at": now, "expires_at": now + SESSION_TTL,
                       "pending_action": {**pending, "created_at": now, "expires_at": now + PENDING_TTL}})

    store.run_transaction(_txn)


def resolve_pending(store: Store, org_id: str, conversation_key: str, approval_id: str, now: datetime,
                    *, last_intent: str | None = None) -> bool:
    """Clear the pending action if it is still the one named; ``False`` when it was not."""
    path = session_path(org_id, conversation_key)

    def _txn(txn: Transaction) -> bool:
        doc = txn.get(path) or {}
        pending = doc.get("pending_action") or {}
        if pending.get("approval_id") != approval_id:
            return False
        txn.set(path, {**doc, "mode": "normal", "pending_action": None, "updated_at": now,
                       "expires_at": now + SESSION_TTL, "last_intent": last_intent or doc.get("last_intent")})
        return True

    return store.run_transaction(_txn)


def touch(store: Store, org_id: str, conversation_key: str, now: datetime, **fields: Any) -> None:
    path = session_path(org_id, conversation_key)

    def _txn(txn: Transaction) -> None:
        doc = txn.get(path) or {"mode": "normal"}
        if _expired(doc.get("expires_at"), now):
            doc = {"mode": "normal"}
        txn.set(path, {**doc, **fields, "updated_at": now, "expires_at": now + SESSION_TTL})

    store.run_transaction(_txn)
