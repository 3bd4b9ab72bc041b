"""Tags as a signal of the memory search, and the related tags of a tag (issue 36).

A query naming a tag (``tag_match.tags_in_text``: its key, reading or alias in the sentence)
makes the chunks carrying that tag a third ranking of the hybrid fusion (``search.fuse``,
weight ``TAG_WEIGHT``): the chunks the keyword and vector sides found that carry it, and up to
``PER_TAG_LIMIT`` more per matched tag. The tag only adds a vote: ``KEYWORD_SHARE``'s rule for
the keyword side is unchanged, and a chunk found by no side and no tag is not made up.

Round trips: the tag master of an organisation is small (a few hundred tags) and read once per
``MASTER_TTL`` per process (``masters``); a query naming no tag costs nothing more; one naming
tags costs one query per tag (at most ``MAX_SIGNAL_TAGS``).

``suggested_tags``: for the memory search tool, the tags its hits carry (what the reader may
read), without those the query names. ``related_tags`` (seed 001 §21.4 ``get_related_tags``): the tags seen on the same memories
(co-occurrence: the share of the tag's items carrying the other) and the tags whose names'
vectors are nearest (``tag_match.VECTOR_THRESHOLD``), best first.
"""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
from collections import Counter
from collections.abc import Callable
from typing import Any

from shared_lib.collections import collection_path
from shared_lib.memory.tag_match import VECTOR_THRESHOLD, TagMatch, cosine, tags_in_text
from shared_lib.memory.tags import CHUNKS, SCAN_LIMIT, TAGGED
from shared_lib.ports import Doc, Store

TAG_WEIGHT = 0.2  # a tag's vote in the fusion, beside the vector's and the keyword's (1 together)
MAX_SIGNAL_TAGS = 3
PER_TAG_LIMIT = 50
MASTER_TTL = 60.0  # seconds a process trusts its copy of an organisation's tag master
RELATED_LIMIT = 5

_CACHE: weakref.WeakKeyDictionary[Any, dict[str, tuple[float, list[tuple[str, Doc]]]]] = (
    weakref.WeakKeyDictionary()
)
_LOCK = threading.Lock()


def masters(store: Store, org_id: str, *, fresh: bool = False) -> list[tuple[str, Doc]]:
    """(path, doc) of the organisation's tags, from the process's copy when younger than
    ``MASTER_TTL`` (``fresh``: read now)."""
    now = time.monotonic()
    with _LOCK:
        try:
            cached = _CACHE.get(store, {}).get(org_id)
        except TypeError:  # a store that cannot be weakly referenced: no cache
            cached = None
    if cached and not fresh and now - cached[0] < MASTER_TTL:
        return cached[1]
    where = collection_path("memory_tags", org=org_id)
    docs = [(f"{where}/{doc_id}", doc) for doc_id, doc in store.query(where, limit=SCAN_LIMIT)]
    with _LOCK, contextlib.suppress(TypeError):
        _CACHE.setdefault(store, {})[org_id] = (now, docs)
    return docs


def items_path(org_id: str, collection: str) -> str:
    return f"orgs/{org_id}/{CHUNKS}" if collection == CHUNKS else collection_path(collection, org=org_id)


def tag_ranking(
    store: Store,
    org_id: str,
    query: str,
    wanted: Callable[[Doc], bool],
    seen: list[tuple[str, Doc, float]],
) -> list[tuple[str, Doc, float]]:
    """Chunks carrying a tag the query names, best first: the summed confidence of the matched
    tags each carries. ``seen``: chunks the other sides read (no second read of them)."""
    matched: list[TagMatch] = tags_in_text(query, (d for _, d in masters(store, org_id)))
    if not matched:
        return []
    names = [m.tag for m in matched[:MAX_SIGNAL_TAGS]]
    candidates: dict[str, Doc] = {cid: doc for cid, doc, _ in seen}
    for name in names:
        for cid, doc in store.query(
            items_path(org_id, CHUNKS), where=[("tags", "array_contains", name)], limit=PER_TAG_LIMIT
        ):
            candidates.setdefault(cid, doc)
    scored = []
    for cid, doc in candidates.items():
        carried = set(doc.get("tags") or ())
        value = sum(_confidence(doc, n) for n in names if n in carried)
        if value > 0 and wanted(doc):
            scored.append((cid, doc, value))
    return sorted(scored, key=lambda s: (-s[2], s[0]))


def _confidence(doc: Doc, name: str) -> float:
    score = (doc.get("tag_scores") or {}).get(name)
    return float(score.get("confidence", 1.0)) if isinstance(score, dict) else 1.0


def related_tags(
    store: Store, org_id: str, tag: str, *, limit: int = RELATED_LIMIT
) -> list[tuple[str, float, str]]:
    """(tag, score, why) of the tags related to ``tag``: ``co-occurs`` (the share of ``tag``'s
    items carrying it) and ``similar`` (the cosine of the names' vectors), best first."""
    docs = {str(d.get("tag")): d for _, d in masters(store, org_id, fresh=True) if d.get("tag")}
    counts: Counter[str] = Counter()
    items = 0
    for collection in TAGGED:
        for _, doc in store.query(
            items_path(org_id, collection), where=[("tags", "array_contains", tag)], limit=SCAN_LIMIT
        ):
            items += 1
            counts.update(t for t in set(doc.get("tags") or ()) if t != tag)
    found: dict[str, tuple[float, str]] = {t: (n / items, "co-occurs") for t, n in counts.items() if items}
    own = (docs.get(tag) or {}).get("embedding")
    model = (docs.get(tag) or {}).get("embedding_model")
    for name, doc in docs.items():
        vector = doc.get("embedding")
        if name == tag or not own or not vector or doc.get("embedding_model") != model:
            continue
        if doc.get("merged_into"):
            continue
        similarity = cosine(own, vector)
        if similarity >= VECTOR_THRESHOLD and similarity > found.get(name, (0.0, ""))[0]:
            found[name] = (similarity, "similar")
    ranked = sorted(found.items(), key=lambda kv: (-kv[1][0], kv[0]))
    return [(name, round(score, 4), why) for name, (score, why) in ranked[:limit]]


def suggested_tags(
    store: Store, org_id: str, query: str, hit_tags: list[tuple[str, ...]], limit: int = 3
) -> list[str]:
    """Tags to search next, for a memory search's answer: the tags the found memories carry
    (co-occurrence on what this reader may read: nothing from memories they may not), most
    carried first, without the ones the query already names. No read beyond the cached master."""
    named = {m.tag for m in tags_in_text(query, (d for _, d in masters(store, org_id)))}
    counts = Counter(t for tags in hit_tags for t in set(tags) if t not in named)
    return [t for t, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]]
