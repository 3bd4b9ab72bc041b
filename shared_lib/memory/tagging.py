"""The daily tagging job (seed 001 §21.3): today's interests, then the items due, tagged.

1. Today's interests: the day's episodes (the daily digest first) read by the model from the
   persona's point of view, a few keywords back (``interests`` given: used as they are).
2. The items due: episodes and chunks never tagged or last looked at more than
   ``retag_after_days`` ago (``tags_checked_at``), oldest first, at most ``max_items_per_run``;
   chunks of episodes are skipped (their episode is tagged).
3. Per batch of ``batch_size``: one call with the items and the interests, answered
   ``{"items": [{"id": "1", "tags": [{"tag": "...", "confidence": 0.8}]}]}``, validated (one
   retry); ``tags.assign`` keeps what reaches ``min_confidence``, reinforces tags given again,
   and stamps the item as looked at.

One run per organisation and day (``orgs/{org}/tagging_jobs/{day}``, the §21.2 record): a day
completed is not run again; a failed day, or one left running for ``STALE_AFTER``, runs again.
A batch the model answers badly twice ends the run as ``failed`` (its items stay due).
Then the tags evolve (§21.5.4, ``tag_evolution``): near-duplicates merge, a tag grown too broad
splits; what was done is the record's ``tag_changes``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from shared_lib.adapters.scoped import scoped
from shared_lib.collections import collection_path, path
from shared_lib.dates.model import JST
from shared_lib.errors import LLMOutputError
from shared_lib.memory.answers import ask_json
from shared_lib.memory.tag_evolution import evolve_tags
from shared_lib.memory.tags import CHUNKS, ScoredTag, TaggingConfig, assign
from shared_lib.observability.logs import log_event
from shared_lib.ports import LLM, Doc, Embedder, Store, Transaction

STALE_AFTER = timedelta(hours=2)
JOB_RECORD_DAYS = 90
ITEM_CHARS = 1000
INTERESTS_MAX = 20

INTERESTS_SYSTEM = (
    "あなたはこの組織のアシスタントです。以下はあなたが今日のことを書いた日記です。"
    "あなたの視点で「今日何が重要だったか」を考え、今の関心事を短いキーワードで挙げてください。\n"
    'JSONだけを返してください: {"interests": ["キーワード", ...]}（最大20個）'
)
TAGGING_SYSTEM = (
    "以下のテキストそれぞれに、与えられた関心事リストを参考にタグを付けてください。"
    "関心事に直接関連しないタグも自由に付けてOKです。タグは短い名詞にしてください。\n"
    "JSONだけを返してください: "
    '{"items": [{"id": "テキストの番号", "tags": [{"tag": "タグ名", "confidence": 0.0〜1.0}]}]}'
)


class Interests(BaseModel):
    model_config = ConfigDict(extra="ignore")
    interests: list[str] = Field(max_length=50)


class ItemTags(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str
    tags: list[ScoredTag] = Field(default_factory=list, max_length=50)


class TaggingAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")
    items: list[ItemTags]


@dataclass(frozen=True)
class TaggingOutcome:
    status: Literal["completed", "failed", "skipped"]
    day: str
    items_processed: int = 0
    tags_added: int = 0
    tags_updated: int = 0
    interests: tuple[str, ...] = ()
    reason: str = ""
    tag_changes: tuple[Doc, ...] = ()  # the night's merges and splits (``tag_evolution``)


def job_path(org_id: str, day: str) -> str:
    return path("tagging_jobs", org=org_id, id=day)


def _claim(store: Store, org_id: str, day: str, now: datetime) -> str | None:
    """Take the day's run; ``None`` when it is taken, else why not (completed, running)."""

    def take(txn: Transaction) -> str | None:
        record = txn.get(job_path(org_id, day))
        if record is not None:
            if record.get("status") == "completed":
                return "completed"
            if record.get("status") == "running" and record["started_at"] > now - STALE_AFTER:
                return "running"
        txn.set(
            job_path(org_id, day),
            {
                "status": "running",
                "started_at": now,
                "completed_at": None,
                "attempts": int((record or {}).get("attempts", 0)) + 1,
                "expires_at": now + timedelta(days=JOB_RECORD_DAYS),
            },
        )
        return None

    return scoped(store, org_id).run_transaction(take)


def todays_interests(store: Store, llm: LLM, org_id: str, day: str, model: str) -> list[str]:
    """The day's interests from its episodes (none that day: none)."""
    episodes = scoped(store, org_id, read_only=True).query(
        collection_path("episodes", org=org_id), where=[("date", "==", day)], limit=50
    )
    if not episodes:
        return []
    ordered = sorted((d for _, d in episodes), key=lambda d: d.get("type") != "daily_digest")
    diary = "\n\n".join(str(d.get("story_text", "")) for d in ordered)[:8000]
    answer = ask_json(
        llm, job="interests", model=model, system=INTERESTS_SYSTEM, user=diary, answer=Interests
    )
    return list(dict.fromkeys(w.strip()[:40] for w in answer.interests if w.strip()))[:INTERESTS_MAX]


def due_items(store: Store, org_id: str, cutoff: datetime, limit: int) -> list[tuple[str, str]]:
    """(path, text) of the items to tag: never looked at, or not since ``cutoff``; oldest first."""
    org_store = scoped(store, org_id, read_only=True)
    found: list[tuple[datetime, str, str]] = []
    for collection in ("episodes", CHUNKS):
        where = (
            collection_path("episodes", org=org_id) if collection == "episodes" else f"orgs/{org_id}/{CHUNKS}"
        )
        docs = org_store.query(
            where, where=[("tags_checked_at", "<", cutoff)], order_by="tags_checked_at", limit=limit
        )
        found += [
            (doc["tags_checked_at"], f"{where}/{doc_id}", _text(doc))
            for doc_id, doc in docs
            if doc.get("source_kind") != "episode"
        ]
    found.sort(key=lambda f: f[0])
    return [(p, t) for _, p, t in found[:limit]]


def _text(doc: Doc) -> str:
    return " ".join(str(doc.get("story_text") or doc.get("text") or "").split())[:ITEM_CHARS]


def _batch_prompt(batch: list[tuple[str, str]], interests: list[str]) -> str:
    listed = "\n".join(f'<item id="{i}">\n{text}\n</item>' for i, (_, text) in enumerate(batch, 1))
    return f"関心事リスト: {', '.join(interests) or '（なし）'}\n\nテキスト:\n{listed}"


def run_tagging(
    store: Store,
    llm: LLM,
    org_id: str,
    now: datetime,
    model: str,
    interests: list[str] | None = None,
    *,
    config: TaggingConfig | None = None,
    embedder: Embedder | None = None,
) -> TaggingOutcome:
    """The organisation's tagging run of ``now``'s day (JST); once per day. After the tagging,
    tags that grew too broad split and near-duplicates merge (``tag_evolution``; ``embedder``
    embeds the tag names first)."""
    config = config or TaggingConfig()
    day = now.astimezone(JST).date().isoformat()
    if not config.enabled:
        return TaggingOutcome("skipped", day, reason="tagging is off")
    taken = _claim(store, org_id, day, now)
    if taken is not None:
        return TaggingOutcome("skipped", day, reason=f"the day's run is {taken}")
    processed = added = updated = 0
    status: Literal["completed", "failed"] = "completed"
    reason = ""
    try:
        if interests is None:
            interests = todays_interests(store, llm, org_id, day, model)
        items = due_items(
            store, org_id, now - timedelta(days=config.retag_after_days), config.max_items_per_run
        )
        for start in range(0, len(items), config.batch_size):
            batch = items[start : start + config.batch_size]
            answer = ask_json(
                llm,
                job="tagging",
                model=model,
                system=TAGGING_SYSTEM,
                user=_batch_prompt(batch, interests),
                answer=TaggingAnswer,
                max_tokens=4096,
            )
            given = {item.id: item.tags for item in answer.items}
            for i, (item_path, _) in enumerate(batch, 1):
                done = assign(
                    store,
                    org_id,
                    item_path,
                    given.get(str(i), []),
                    now=now,
                    tagged_by="background_job",
                    config=config,
                    checked=True,
                )
                processed, added, updated = processed + 1, added + done.added, updated + done.updated
    except LLMOutputError as exc:
        status, reason = "failed", exc.detail
        log_event("tagging_failed", severity="WARNING", org_id=org_id, day=day, reason=reason)
    changes = tuple(c.as_doc() for c in evolve_tags(store, embedder, org_id, now))
    scoped(store, org_id).set(
        job_path(org_id, day),
        {
            "status": status,
            "completed_at": now,
            "chunks_processed": processed,
            "tags_added": added,
            "tags_updated": updated,
            "current_interests": list(interests or []),
            "tag_changes": list(changes),
            "error": reason or None,
        },
        merge=True,
    )
    return TaggingOutcome(status, day, processed, added, updated, tuple(interests or ()), reason, changes)
