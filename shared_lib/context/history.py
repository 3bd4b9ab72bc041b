"""Conversation memory: every inbound message and every reply, per conversation.

Messages live at ``orgs/{org}/conversations/{id}/messages/{turn}-{step}-{in|out}`` (the
id derives from the turn, so appending twice writes one message); the conversation
document ``orgs/{org}/conversations/{id}`` names whose conversation it is (``user_id``,
``room_id``, ``conversation_key``: how ``charter data purge`` finds a person's history)
and carries its compaction (seed 001 §19, ``context.compaction``): ``summary`` (what the context
shows: the level-3 key points, then the level-2 chunks, one per line), the levels themselves
(``summary_levels``), the cursor ``window_from`` (the ``seq`` of the last message that left the
window: the context reads only messages after it; the messages themselves stay stored, for
their retention) and ``compaction_version``. The conversation id hashes the conversation key, which itself
names the organisation, and every path is under ``orgs/{org}/``: two organisations never
share a history.

Text is stored masked (``Sanitizer.mask_stored``): whatever the user typed or the reply
gave back, the history keeps ``[EMAIL]``, never the address in clear — on a blocked turn too —
and, with the vault's key (``cipher``), the address itself sealed in the same message
(``privacy.sealing``): what a person said is kept, not destroyed. Every reader of the history
(the context, compaction's summaries, the daily digest) reads the masked text; only compaction
and the digest open the sealed values, to seal them again in what they write. With
``expires_at`` (the organisation's retention) both documents expire by the catalogue's
TTL policy, counted from the last message.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from cryptography.fernet import MultiFernet

from shared_lib.collections import conversation_id
from shared_lib.ports import Op, Store
from shared_lib.privacy.sealing import seal, unseal

MAX_STORED_CHARS = 8000


def conversation_path(org_id: str, conversation_key: str) -> str:
    return f"orgs/{org_id}/conversations/{conversation_id(conversation_key)}"


def history_path(org_id: str, conversation_key: str) -> str:
    return f"{conversation_path(org_id, conversation_key)}/messages"


def _order_key(at: datetime, message_id: str) -> str:
    # sortable across writers: UTC timestamp, then the (ULID-based) message id
    return f"{at.astimezone(UTC).strftime('%Y%m%dT%H%M%S.%f')}|{message_id}"


def append_message(
    store: Store,
    org_id: str,
    conversation_key: str,
    message_id: str,
    *,
    role: str,
    text: str,
    at: datetime,
    user_id: str,
    room_id: str = "",
    expires_at: datetime | None = None,
    cipher: MultiFernet | None = None,
) -> None:
    """Idempotent append (``set`` on an id derived from the turn); the text is stored masked,
    its values sealed with ``cipher`` (without one, masked only). The conversation's document
    and the message are one batch: one round trip, and never one without the other."""
    expiry = {"expires_at": expires_at} if expires_at is not None else {}
    conversation = {
        "org_id": org_id,
        "user_id": user_id,
        "room_id": room_id,
        "conversation_key": conversation_key,
        "at": at,
        **expiry,
    }
    message = {
        **seal({"text": text[:MAX_STORED_CHARS]}, cipher),
        "role": role,
        "at": at,
        "user_id": user_id,
        "seq": _order_key(at, message_id),
        **expiry,
    }
    store.set_many(
        [
            (conversation_path(org_id, conversation_key), conversation, True),
            (f"{history_path(org_id, conversation_key)}/{message_id}", message, False),
        ]
    )


def opened(messages: list[dict[str, Any]], cipher: MultiFernet | None) -> list[dict[str, Any]]:
    """``messages`` as stored, with their sealed values back in clear (``cipher`` ``None``: as
    stored, masked): for a writer that seals what it derives from them again, never for a reply."""
    return [unseal(m, cipher)[0] for m in messages]


def window_messages(
    store: Store, org_id: str, conversation_key: str, *, after: str = "", limit: int | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """The messages still in the window (``seq`` after the cursor ``after``), the newest ``limit``
    of them when given, oldest first, with their ids."""
    where: list[tuple[str, Op, Any]] = [("seq", ">", after)] if after else []
    docs = store.query(
        history_path(org_id, conversation_key), where=where, order_by="seq", descending=True, limit=limit
    )
    return docs[::-1]


def recent_messages(
    store: Store, org_id: str, conversation_key: str, limit: int, *, after: str | None = None
) -> list[dict[str, Any]]:
    """The last ``limit`` messages in the window (after the conversation's cursor), oldest first;
    ``after`` given: that cursor, without reading the conversation document."""
    if after is None:
        after = window_cursor(store.get(conversation_path(org_id, conversation_key)) or {})
    return [d for _, d in window_messages(store, org_id, conversation_key, after=after, limit=limit)]


def window_cursor(conversation: dict[str, Any]) -> str:
    """The ``seq`` of the last message that left the window (``""``: none has)."""
    return str(conversation.get("window_from") or "")


def conversation_summary(store: Store, org_id: str, conversation_key: str) -> str:
    doc = store.get(conversation_path(org_id, conversation_key)) or {}
    return str(doc.get("summary") or "")
