"""Episodes in the memory index (seed 001 §22.6: 「ストーリー記憶もメモリシステム（§18）でインデックス化
され、通常のメモリ検索でも参照可能」): how an episode is indexed, who may read it, and when it
happened.

An episode is indexed as the chunks of source kind ``episode`` (``memory.index``: masked,
embedded, keyword terms; the same index and the same hybrid scoring as memories and knowledge),
each chunk carrying ``happened_at`` (the episode's JST date and time), so a hit says when.

Who may read it is the index's ``Reader`` rule, set from what the episode tells:

* an event episode tells one person's turn: it is that person's (``user_id``), like a memory
  they saved. Nobody else reads it, so nothing of a conversation reaches someone who could not
  read it, whatever room it was said in.
* a daily digest retells the whole organisation's day (every room): only the organisation's top
  level (``DIGEST_READ_LEVEL``) reads it.

``reindex_episodes`` indexes the episodes already stored (written before episodes were indexed,
or by a run killed between the episode and its chunks).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from cryptography.fernet import MultiFernet

from shared_lib.collections import collection_path
from shared_lib.dates.model import JST
from shared_lib.memory.index import index_text, source_path
from shared_lib.ports import Doc, Embedder, Store
from shared_lib.privacy.sealing import unseal

SOURCE_KIND = "episode"
DIGEST_READ_LEVEL = 6  # a digest retells everyone's conversations: the organisation's top level


def happened_at(doc: Doc) -> datetime | None:
    """When the episode's story happened (its ``date`` and ``time``, JST); ``None`` if unreadable."""
    try:
        return datetime.fromisoformat(f"{doc.get('date')}T{doc.get('time') or '00:00:00'}").replace(
            tzinfo=JST
        )
    except ValueError:
        return None


def reader_scope(doc: Doc) -> tuple[str | None, int]:
    """(``user_id``, ``min_level``) of an episode's chunks: an event episode its person's, a
    digest (or an event episode naming nobody) the top level's."""
    people = [str(u) for u in doc.get("user_ids") or [] if u]
    if doc.get("type") == "event_driven" and len(people) == 1:
        return people[0], 1
    return None, DIGEST_READ_LEVEL


def index_episode(
    store: Store,
    embedder: Embedder | None,
    org_id: str,
    episode_id: str,
    doc: Doc,
    *,
    now: datetime,
    cipher: MultiFernet | None = None,
) -> bool:
    """Index one stored episode (``doc`` as stored: sealed values are opened with ``cipher`` and
    sealed again in its chunks); ``False`` when it tells nothing."""
    opened = unseal(doc, cipher)[0]
    story = str(opened.get("story_text") or "").strip()
    if not story:
        return False
    user_id, min_level = reader_scope(opened)
    metadata: dict[str, Any] = opened.get("metadata") or {}
    index_text(
        store,
        embedder,
        org_id,
        source_kind=SOURCE_KIND,
        source_id=episode_id,
        text=story,
        now=now,
        min_level=min_level,
        user_id=user_id,
        tags=[str(t) for t in metadata.get("tags") or []],
        expires_at=opened.get("expires_at"),
        cipher=cipher,
        happened_at=happened_at(opened),
    )
    return True


def is_indexed(store: Store, org_id: str, episode_id: str) -> bool:
    return store.get(source_path(org_id, SOURCE_KIND, episode_id)) is not None


def reindex_episodes(
    store: Store,
    embedder: Embedder | None,
    org_id: str,
    *,
    now: datetime,
    cipher: MultiFernet | None = None,
    every: bool = True,
) -> int:
    """Index the organisation's stored episodes (every one, or with ``every=False`` those not
    indexed yet); how many were indexed."""
    count = 0
    for eid, doc in store.query(collection_path("episodes", org=org_id), limit=None):
        if (every or not is_indexed(store, org_id, eid)) and index_episode(
            store, embedder, org_id, eid, doc, now=now, cipher=cipher
        ):
            count += 1
    return count
