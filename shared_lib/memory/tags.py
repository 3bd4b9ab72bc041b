"""Dynamic tags on memories (seed 001 §21): the tag master, tags on items, search by tag.

Where they live:

* ``orgs/{org}/memory_tags/{tag_id}``: ``tag`` (how it is shown), ``key`` (its merge key),
  ``created_at``, ``last_used_at``, ``use_count`` and ``daily_uses`` ({day: uses}, the last
  ``TREND_DAYS`` days, for ``trending_tags``). The id derives from the merge key, so
  「メモリー」「ﾒﾓﾘ」「めもり」 are one tag: near-duplicates merge when they are written.
* on a tagged item (an episode, a chunk of ``memory_chunks``): ``tags`` (the shown names, what
  ``array_contains`` finds), ``tag_scores`` {tag: {confidence, tagged_at, tagged_by}} and
  ``tags_checked_at`` (when the background job last looked at it; ``NEVER_TAGGED`` when it
  never has: a writer of a taggable item sets ``untagged_fields()``).

Evolution (§21.5): a tag given again is reinforced (confidence ``1-(1-old)(1-new)``, so it
rises and stays under 1); a tag nobody gives any more keeps its confidence but weighs less in
search, halving every ``half_life_days`` since its ``last_used_at``; new interests add tags to
old items when the job re-reads them (``memory.tagging``).

>>> merge_key("メモリー"), merge_key("ﾒﾓﾘ"), merge_key("めもり"), merge_key(" Machine  Learning ")
('メモリ', 'メモリ', 'メモリ', 'machinelearning')
>>> reinforce(0.5, 0.5)
0.75
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from shared_lib.adapters.scoped import scoped
from shared_lib.collections import collection_path, path
from shared_lib.ports import Doc, Store, Transaction
from shared_lib.privacy.sanitizer import Sanitizer

TaggedBy = Literal["user", "realtime", "background_job"]
SearchMode = Literal["and", "or"]
NEVER_TAGGED = datetime(1970, 1, 1, tzinfo=UTC)
CHUNKS = "memory_chunks"  # SEARCH's chunk collection: orgs/{org}/memory_chunks/{chunk_id}
TAGGED = ("episodes", CHUNKS)  # the collections whose documents carry tags
MAX_TAG_CHARS = 40
TREND_DAYS = 60
SCAN_LIMIT = 1000  # documents read per tag and collection by one search
_SEPARATORS = re.compile(r"[\s・·\-_/.,、。]+")


class TaggingConfig(BaseModel):
    """Seed 001 §21.6 ``[memory.tagging]`` (what the job reads; defaults are the seed's)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    enabled: bool = True
    batch_size: int = Field(default=50, ge=1, le=200)  # items per LLM call
    min_confidence: float = Field(default=0.3, ge=0.0, le=1.0)  # below it a tag is not stored
    max_tags_per_item: int = Field(default=15, ge=1, le=50)
    retag_after_days: int = Field(default=7, ge=1)
    max_items_per_run: int = Field(default=500, ge=1)  # one run's bound; the rest waits a day
    half_life_days: float = Field(default=30.0, gt=0)  # search weight of a tag unused that long: 1/2


class ScoredTag(BaseModel):
    """One tag the model gives an item (``[{"tag": ..., "confidence": ...}]``)."""

    model_config = ConfigDict(extra="ignore")
    tag: str = Field(min_length=1, max_length=MAX_TAG_CHARS)
    confidence: float = Field(ge=0.0, le=1.0)


def normalise(tag: str) -> str:
    """How a tag is shown: NFKC (half-width kana and full-width Latin folded), spaces collapsed."""
    return " ".join(unicodedata.normalize("NFKC", tag).split())


def merge_key(tag: str) -> str:
    """What makes two tags one: the normalised form, lower case, without separators,
    hiragana as katakana, without a trailing long-vowel mark."""
    text = _SEPARATORS.sub("", normalise(tag).lower())
    text = "".join(chr(ord(c) + 0x60) if "ぁ" <= c <= "ゖ" else c for c in text)
    return text.rstrip("ー")


def tag_id(tag: str) -> str:
    return hashlib.sha256(merge_key(tag).encode()).hexdigest()[:24]


def reinforce(old: float, new: float) -> float:
    """A tag given again: both sightings count, the result stays within [max(old, new), 1]."""
    return round(1 - (1 - old) * (1 - new), 4)


def untagged_fields() -> Doc:
    """The tag fields of an item nobody has tagged yet (what the job's query finds)."""
    return {"tags": [], "tag_scores": {}, "tags_checked_at": NEVER_TAGGED}


def _usable(tag: str) -> str | None:
    """The shown form of a tag worth storing, else ``None`` (empty, or a value masking hides)."""
    shown = normalise(tag)[:MAX_TAG_CHARS]
    if not merge_key(shown) or Sanitizer.default().mask_stored(shown) != shown:
        return None
    return shown


def canonical(store: Store, org_id: str, tag: str) -> str:
    """The name a tag is stored under (the tag master's, else its normalised form; a tag merged
    into another by the nightly job: that one's)."""
    doc = scoped(store, org_id).get(path("memory_tags", org=org_id, id=tag_id(tag)))
    return str(doc.get("merged_into") or doc["tag"]) if doc else normalise(tag)


@dataclass(frozen=True)
class Assigned:
    added: int = 0  # tags new on the item
    updated: int = 0  # tags the item had, reinforced


def assign(
    store: Store,
    org_id: str,
    item_path: str,
    scored: Iterable[ScoredTag],
    *,
    now: datetime,
    tagged_by: TaggedBy,
    config: TaggingConfig,
    checked: bool = False,
) -> Assigned:
    """Put ``scored`` tags on the item at ``item_path`` (one transaction with the tag master):
    below ``min_confidence`` dropped, the same tag twice merged, at most ``max_tags_per_item``
    kept (the most confident). ``checked`` also stamps ``tags_checked_at`` (the job's visit)."""
    wanted: dict[str, tuple[str, float]] = {}  # tag id -> (given name, confidence)
    for s in scored:
        shown = _usable(s.tag)
        if shown is None or s.confidence < config.min_confidence:
            continue
        tid = tag_id(shown)
        if tid not in wanted or wanted[tid][1] < s.confidence:
            wanted[tid] = (shown, s.confidence)
    org_store = scoped(store, org_id)

    def write(txn: Transaction) -> Assigned:
        item = txn.get(item_path)
        if item is None:
            return Assigned()
        masters = {tid: _live(txn, org_id, tid) for tid in wanted}
        scores: dict[str, Any] = dict(item.get("tag_scores") or {})
        added = updated = 0
        for tid, (shown, confidence) in wanted.items():
            master = masters[tid]
            master_id = tag_id(str(master["tag"])) if master is not None else tid  # merged: the kept one
            name = str(master["tag"]) if master else shown
            old = scores.get(name)
            if old is None:
                added += 1
            else:
                updated += 1
                confidence = reinforce(float(old.get("confidence", 0.0)), confidence)
            scores[name] = {"confidence": confidence, "tagged_at": now, "tagged_by": tagged_by}
            txn.set(path("memory_tags", org=org_id, id=master_id), _used(master, name, now))
        kept = sorted(scores.items(), key=lambda kv: -float(kv[1].get("confidence", 0.0)))
        kept = kept[: config.max_tags_per_item]
        fields: Doc = {"tags": [name for name, _ in kept], "tag_scores": dict(kept)}
        if checked:
            fields["tags_checked_at"] = now
        txn.set(item_path, fields, merge=True)
        return Assigned(added, updated)

    return org_store.run_transaction(write)


def _live(txn: Transaction, org_id: str, tid: str) -> Doc | None:
    """The tag master of ``tid``, or of the tag it was merged into by the nightly job."""
    master = txn.get(path("memory_tags", org=org_id, id=tid))
    if master is not None and master.get("merged_into"):
        return txn.get(path("memory_tags", org=org_id, id=tag_id(str(master["merged_into"])))) or master
    return master


def _used(master: Doc | None, name: str, now: datetime) -> Doc:
    """The tag master after one more use at ``now``."""
    day = now.astimezone(UTC).date()
    uses = {
        d: n
        for d, n in dict((master or {}).get("daily_uses") or {}).items()
        if d >= (day - timedelta(days=TREND_DAYS)).isoformat()
    }
    uses[day.isoformat()] = int(uses.get(day.isoformat(), 0)) + 1
    return {
        **(master or {}),  # what the nightly job keeps on it (vector, split) stays
        "tag": name,
        "key": merge_key(name),
        "created_at": (master or {}).get("created_at", now),
        "last_used_at": now,
        "use_count": int((master or {}).get("use_count", 0)) + 1,
        "daily_uses": uses,
    }


@dataclass(frozen=True)
class TagHit:
    """One item found by tag: where it is, what it says, its matching tags and its score."""

    path: str
    kind: Literal["episode", "chunk"]
    text: str
    created_at: datetime | None
    matched: tuple[tuple[str, float], ...]  # (tag, confidence)
    score: float  # the sum of the matched confidences, each weighed by its tag's freshness

    def as_json(self) -> Doc:
        return {
            "id": self.path.rsplit("/", 1)[-1],
            "kind": self.kind,
            "text": self.text,
            "created_at": self.created_at.isoformat() if self.created_at else None,
            "matched": [{"tag": t, "confidence": c} for t, c in self.matched],
            "score": round(self.score, 4),
        }


@dataclass(frozen=True)
class Reader:
    """Who asks, for a search on their behalf."""

    user_id: str
    level: int

    def may_read(self, kind: str, doc: Doc) -> bool:
        """A chunk: not private to someone else (``user_id``) and within the person's level
        (``min_level``). An episode: a daily digest is the organisation's; an event episode
        belongs to the people in it (``user_ids``)."""
        if kind == "chunk":
            owner = doc.get("user_id")
            return owner in (None, "", self.user_id) and int(doc.get("min_level") or 0) <= self.level
        return doc.get("type") != "event_driven" or self.user_id in (doc.get("user_ids") or [])


def freshness(last_used_at: datetime | None, now: datetime | None, half_life_days: float) -> float:
    """The search weight of a tag last used at ``last_used_at``: 1 when used now, halving
    every ``half_life_days`` (1 without a clock or a date)."""
    if now is None or last_used_at is None:
        return 1.0
    days = max(0.0, (now - last_used_at).total_seconds() / 86400)
    return float(0.5 ** (days / half_life_days))


def search_by_tags(
    store: Store,
    org_id: str,
    tags: Sequence[str],
    *,
    mode: SearchMode = "or",
    min_confidence: float = 0.5,
    limit: int = 20,
    since: datetime | None = None,
    until: datetime | None = None,
    now: datetime | None = None,
    half_life_days: float = TaggingConfig().half_life_days,
    reader: Reader | None = None,
) -> list[TagHit]:
    """Episodes and chunks carrying ``tags`` (``and``: all of them, ``or``: any) with at least
    ``min_confidence``, created in ``[since, until)``, best first (§21.4); with ``reader``, only
    what that person may read (``Reader.may_read``), else everything (an operator's view)."""
    org_store = scoped(store, org_id, read_only=True)
    names = list(dict.fromkeys(canonical(store, org_id, t) for t in tags if _usable(t)))
    weight = {
        n: freshness(
            (org_store.get(path("memory_tags", org=org_id, id=tag_id(n))) or {}).get("last_used_at"),
            now,
            half_life_days,
        )
        for n in names
    }
    found: dict[str, tuple[str, Doc]] = {}
    for collection in TAGGED:
        where = collection_path(collection, org=org_id) if collection != CHUNKS else f"orgs/{org_id}/{CHUNKS}"
        for name in names:
            for doc_id, doc in org_store.query(
                where, where=[("tags", "array_contains", name)], limit=SCAN_LIMIT
            ):
                found[f"{where}/{doc_id}"] = (collection, doc)
    hits = []
    for item_path, (collection, doc) in found.items():
        created = doc.get("created_at")
        if (since and (created is None or created < since)) or (
            until and (created is None or created >= until)
        ):
            continue
        matched = tuple(
            (n, c) for n in names if (c := _confidence(doc, n)) is not None and c >= min_confidence
        )
        if not matched or (mode == "and" and len(matched) < len(names)):
            continue
        kind: Literal["episode", "chunk"] = "episode" if collection == "episodes" else "chunk"
        if reader is not None and not reader.may_read(kind, doc):
            continue
        text = str(doc.get("story_text") if kind == "episode" else doc.get("text") or "")
        score = sum(c * weight[n] for n, c in matched)
        hits.append(TagHit(item_path, kind, text, created, matched, score))
    oldest = datetime.min.replace(tzinfo=UTC)
    hits.sort(key=lambda h: (-h.score, -(h.created_at or oldest).timestamp()))
    return hits[:limit]


def _confidence(doc: Doc, name: str) -> float | None:
    """The item's confidence in ``name``; a tag listed without a score (set by hand, or by a
    writer that does not score) counts as certain."""
    if name not in (doc.get("tags") or []):
        return None
    score = (doc.get("tag_scores") or {}).get(name)
    return float(score.get("confidence", 1.0)) if isinstance(score, dict) else 1.0


def trending_tags(
    store: Store, org_id: str, *, days: int, limit: int, now: datetime
) -> list[tuple[str, int]]:
    """The tags used most in the last ``days`` days (§21.4 ``get_trending_tags``), with their uses."""
    since = now - timedelta(days=days)
    first_day = since.astimezone(UTC).date().isoformat()
    docs = scoped(store, org_id, read_only=True).query(
        collection_path("memory_tags", org=org_id), where=[("last_used_at", ">=", since)], limit=SCAN_LIMIT
    )
    counted = [
        (str(doc["tag"]), sum(int(n) for d, n in (doc.get("daily_uses") or {}).items() if d >= first_day))
        for _, doc in docs
    ]
    return sorted((c for c in counted if c[1] > 0), key=lambda c: (-c[1], c[0]))[:limit]


def all_tags(store: Store, org_id: str, *, limit: int = SCAN_LIMIT) -> list[Doc]:
    """The tag master, most used first."""
    docs = scoped(store, org_id, read_only=True).query(
        collection_path("memory_tags", org=org_id), limit=limit
    )
    return sorted((doc for _, doc in docs), key=lambda d: (-int(d.get("use_count", 0)), str(d.get("tag"))))
