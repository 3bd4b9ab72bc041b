"""Memory and knowledge tools (seed 000 §6.3.3): save, query and delete what a person
asked Charter to remember (``orgs/{org}/memories``, visible to that person only), and
search over the company's knowledge (``orgs/{org}/knowledge``).

Both searches are ``shared_lib.memory.search``'s hybrid search (keyword and, with the
context's embedder, vector) over the chunks ``shared_lib.memory.index`` keeps: a memory is
indexed with its save and unindexed with its delete, in the same transaction, its chunks
private to its owner (``user_id``); knowledge comes in through ``shared_lib.memory.ingest``.

Preferences are memories with ``category = "preference"``; the Context Builder reads them
as the user's preferences. Memories are stored masked and sealed (``shared_lib.tools.at_rest``,
``shared_lib.privacy.sealing``): a phone number the user asked to keep is stored as ``[PHONE]`` with its
value encrypted under the vault's key in the same document, and given back in clear to its
author only (a memory is its author's: ``own_memories``), listed as ``_revealed`` so the reply
restores it after the LLM phrased it with placeholders. Its search chunks hold the masked text.

What was lived is recalled by the same search: episodes (``memory.episode_index``) and the facts
compaction kept (``memory.fact_memory``), each a hit the asker may read (``search.Reader``: an
event episode and a fact are their person's, a digest the top level's) with when it happened.
Their chunks seal their values too; the memory search tool opens them for the chunk's own person
only (never a digest's: nobody's), the Context Builder's source never (it is for the model).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Literal

from cryptography.fernet import MultiFernet
from pydantic import Field, model_validator

from shared_lib.dates import JST
from shared_lib.memory import index
from shared_lib.memory.episode_index import SOURCE_KIND as EPISODE
from shared_lib.memory.fact_memory import SOURCE_KIND as FACT
from shared_lib.memory.search import Hit, Reader, search
from shared_lib.memory.tag_signal import suggested_tags
from shared_lib.ports import Embedder, Store, Transaction
from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.privacy.sealing import SEALED_FIELD, masked_values, revealed, unseal
from shared_lib.tools.directory import get_person
from shared_lib.tools.handlers.base import Params, doc_id, pick_one, preview, require_text, writer
from shared_lib.tools.normalize import DocId, clean_text
from shared_lib.tools.registry import ToolContext

Category = Literal["preference", "fact", "person", "other"]
MEMORY_SCAN_LIMIT = 300
MEMORY_HITS = 10
LIVED = (EPISODE, FACT)  # what happened and what was said: recalled with when


def memories_path(org_id: str, memory_id: str = "") -> str:
    return f"orgs/{org_id}/memories" + (f"/{memory_id}" if memory_id else "")


def own_memories(
    store: Store, org_id: str, user_id: str, category: str | None = None
) -> list[tuple[str, dict[str, Any]]]:
    where: list[tuple[str, Any, Any]] = [("user_id", "==", user_id)]
    if category:
        where.append(("category", "==", category))
    docs = store.query(memories_path(org_id), where=where, limit=MEMORY_SCAN_LIMIT)
    return sorted(docs, key=lambda item: (str(item[1].get("created_at", "")), item[0]), reverse=True)


class SaveMemoryParams(Params):
    content: str = Field(min_length=1, max_length=2000, description="記憶する内容")
    category: Category = Field(default="other", description="記憶の種類（嗜好・事実・人物・その他）")
    subject: str | None = Field(
        default=None, max_length=100, description="記憶の対象（人名やテーマ）。省略可"
    )


def save_memory(p: SaveMemoryParams, ctx: ToolContext, txn: Transaction | None) -> dict[str, Any]:
    content = require_text(p.content, "content")
    subject = clean_text(p.subject) if p.subject else None
    stored = Sanitizer.default().mask_stored(content)  # what the store holds of it
    same = [
        mid
        for mid, d in own_memories(ctx.store, ctx.org_id, ctx.user_id, p.category)
        if d.get("content") == stored
    ]
    if same:  # already remembered: no second copy
        return {"memory_id": same[0], "content": content, "category": p.category, "already_saved": True}
    memory_id = doc_id(ctx, "m")
    if ctx.dry_run:
        return preview("save_memory", content=content, category=p.category, subject=subject)

    def index_it(store: Store, retention: timedelta | None) -> None:
        # after the memory's own write (ToolContext.after_commit): the organisation's keyword
        # statistics are shared documents; indexing inside the effect's transaction made
        # concurrent deliveries contend until the tool's timeout
        index.index_text(
            store,
            ctx.embedder,
            ctx.org_id,
            source_kind="memory",
            source_id=memory_id,
            text=content,
            title=subject,
            now=ctx.now,
            user_id=ctx.user_id,
            tags=(p.category,),
            expires_at=ctx.now + retention if retention else None,  # personal data: the org's retention
            cipher=ctx.cipher,  # its chunks seal what their masked text stands for
        )

    writer(ctx, txn).set(
        memories_path(ctx.org_id, memory_id),
        {
            "content": content,
            "category": p.category,
            "subject": subject,
            "user_id": ctx.user_id,
            "created_at": ctx.now,
        },
    )
    if txn is None:  # a direct write, no effect transaction: index it now
        index_it(ctx.store, None)
    else:
        ctx.after_commit.append(index_it)
    return {
        "memory_id": memory_id,
        "content": content,
        "category": p.category,
        "subject": subject,
        **revealed(masked_values(content)[1]),  # its author, told what is kept: in clear
    }


class QueryMemoryParams(Params):
    query: str = Field(min_length=1, max_length=200, description="思い出したいことの検索語")
    category: Literal["preference", "fact", "person", "other", "all"] = Field(
        default="all", description="検索対象の記憶の種類"
    )


def query_memory(p: QueryMemoryParams, ctx: ToolContext, txn: Transaction | None) -> dict[str, Any]:
    """The asker's memories and the episodes and kept facts they may read (seed 001 §22.6: what
    happened is recalled by the same search), best first; an episode or a fact says when it
    happened (``when``), its values in clear when it is the asker's own."""
    docs = dict(own_memories(ctx.store, ctx.org_id, ctx.user_id, None if p.category == "all" else p.category))
    hits = search(
        ctx.store,
        ctx.embedder,
        ctx.org_id,
        p.query,
        reader=_reader(ctx.store, ctx.org_id, ctx.user_id),
        kinds=("memory", *LIVED) if p.category == "all" else ("memory",),  # those have no category
        limit=MEMORY_HITS * 5 if p.category != "all" else MEMORY_HITS,  # room for the category filter
    )
    given: list[str] = []
    memories: list[dict[str, Any]] = []
    for h in hits:
        if h.source_kind in LIVED:
            text, values = _opened(h, ctx.user_id, ctx.cipher)
            given += values
            memories.append(_lived_entry(h, text))
        elif h.source_id in docs:
            d, values = unseal(
                docs[h.source_id], ctx.cipher
            )  # the asker's own: the author reads them in clear
            given += values
            memories.append(
                {
                    "memory_id": h.source_id,
                    "content": d.get("content"),
                    "category": d.get("category"),
                    "subject": d.get("subject"),
                }
            )
    memories = memories[:MEMORY_HITS]
    # tags to search next: those the hits carry (only what the asker may read), when any
    related = suggested_tags(ctx.store, ctx.org_id, p.query, [h.tags for h in hits[:MEMORY_HITS]])
    # what was found first: a reply quotes it before the echo of the question
    return {
        "memories": memories,
        "count": len(memories),
        "query": p.query,
        **({"related_tags": related} if related else {}),
        **revealed(given),
    }


def _lived_entry(h: Hit, text: str) -> dict[str, Any]:
    """An episode or a kept fact as the memory tools show it: its id (``episode_id`` or
    ``fact_id``: what tells it from a memory, which has a ``memory_id``), when it happened (JST,
    read by the display as 「11月25日（水）」) and what happened."""
    at: datetime | None = h.happened_at
    when = at.astimezone(JST).isoformat(timespec="minutes") if at else None
    key = "episode_id" if h.source_kind == EPISODE else "fact_id"
    return {key: h.source_id, "when": when, "content": text}


def _opened(h: Hit, asker: str | None, cipher: MultiFernet | None) -> tuple[str, list[str]]:
    """The hit's text with its sealed values in clear for its own person (a chunk naming nobody,
    a digest, is nobody's to open), and those values; masked for anyone else."""
    if not h.sealed or not asker or h.owner != asker:
        return h.text, []
    doc, values = unseal({"text": h.text, SEALED_FIELD: h.sealed}, cipher)
    return str(doc["text"]), values


class DeleteMemoryParams(Params):
    memory_id: DocId | None = Field(default=None, description="削除する記憶のID")
    memory_query: str | None = Field(default=None, max_length=200, description="削除する記憶を特定する言葉")

    @model_validator(mode="after")
    def _one_target(self) -> DeleteMemoryParams:
        if not self.memory_id and not self.memory_query:
            raise ValueError("memory_id か memory_query のどちらかが必要です")
        return self


def delete_memory(p: DeleteMemoryParams, ctx: ToolContext, txn: Transaction | None) -> dict[str, Any]:
    docs = own_memories(ctx.store, ctx.org_id, ctx.user_id)
    labels = [(mid, str(d.get("content", ""))) for mid, d in docs]
    chosen = pick_one("記憶", "memory_query", labels, p.memory_query, p.memory_id)
    opened, given = unseal(dict(docs)[chosen], ctx.cipher)  # its author's: told what is forgotten
    content = str(opened.get("content", ""))
    if ctx.dry_run:
        return preview("delete_memory", memory_id=chosen, content=content)
    index.unindex(writer(ctx, txn), ctx.org_id, "memory", chosen)  # its reads before the delete
    writer(ctx, txn).delete(memories_path(ctx.org_id, chosen))
    return {"memory_id": chosen, "content": content, "deleted": True, **revealed(given)}


def _reader(store: Store, org_id: str, user_id: str | None) -> Reader:
    """The asker as a reader; their level (seed 000) read from the directory only when a chunk
    needs one, someone not in the directory reads as level 1."""

    def level() -> int:
        person = get_person(store, org_id, user_id) if user_id else None
        return person.level if person else 1

    return Reader(user_id, level)


def search_knowledge(
    store: Store,
    org_id: str,
    query: str,
    limit: int = 5,
    *,
    embedder: Embedder | None = None,
    user_id: str | None = None,
) -> list[dict[str, Any]]:
    """The organisation's knowledge documents ``user_id`` may read, best first (hybrid search)."""
    hits = search(
        store,
        embedder,
        org_id,
        query,
        reader=_reader(store, org_id, user_id),
        kinds=("knowledge",),
        limit=limit,
    )
    return [
        {
            "knowledge_id": h.source_id,
            "title": h.title or "",
            "snippet": h.text[:300],
            "score": round(h.score, 6),
        }
        for h in hits
    ]


def search_episodes(
    store: Store,
    org_id: str,
    query: str,
    limit: int = 3,
    *,
    embedder: Embedder | None = None,
    user_id: str | None = None,
) -> list[dict[str, Any]]:
    """The episodes (seed 001 §22) and kept facts (seed 001 §19.7) ``user_id`` may read that are
    nearest ``query``, best first (the same hybrid search; an event episode and a fact are their
    person's, a digest the top level's: ``memory.episode_index``, ``memory.fact_memory``), each
    with when it happened (``happened_at``, JST), masked: this is what the model reads."""
    hits = search(
        store,
        embedder,
        org_id,
        query,
        reader=_reader(store, org_id, user_id),
        kinds=LIVED,
        limit=limit,
    )
    return [_lived_entry(h, h.text[:300]) for h in hits]


class KnowledgeSearchParams(Params):
    query: str = Field(min_length=1, max_length=200, description="調べたい社内知識の検索語")
    limit: int = Field(default=5, ge=1, le=10, description="返す件数")


def knowledge_search(p: KnowledgeSearchParams, ctx: ToolContext, txn: Transaction | None) -> dict[str, Any]:
    found = search_knowledge(
        ctx.store, ctx.org_id, p.query, p.limit, embedder=ctx.embedder, user_id=ctx.user_id
    )
    return {"query": p.query, "count": len(found), "results": found}
