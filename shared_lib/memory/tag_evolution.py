"""Tags split and merge (seed 001 §21.5.4), run by the nightly tagging job after it tags.

Merge: two tags are one when their spellings are (``tag_match.loose_key``: 打ち合わせ / 打合せ,
見積 / 見積もり, PC / パソコン, written apart before the rules knew it) or when their names'
vectors are at least ``MERGE_COSINE`` apart and they co-occur (at least ``MERGE_CO_SHARE`` of
the rarer tag's memories carry the other). The more used tag stays; the other's master keeps
``merged_into`` (a search or a new use of the old name lands on the kept one), and every memory
carrying it is re-tagged (its confidence reinforced when it carried both).

Split: a tag on at least ``SPLIT_MIN_ITEMS`` memories whose vectors fall in two clear clusters
(2-means; each cluster at least ``SPLIT_MIN_SHARE`` of them; the mean cosine of a memory to its
own centre at least ``SPLIT_MARGIN`` above the cosine of the two centres), each named by a tag
most of its memories carry and few of the other's (プログラミング → Rust, Python). Each memory
with a vector moves to the nearer child (the parent's confidence, or the child's if higher); the
parent's master keeps ``split_into`` and both centres, so a search of the parent finds the
children, and a run interrupted half-way finishes on the next one. A broad tag without two
nameable clusters stays as it is.

Idempotent: the masters record what was done first, the items follow; a second run finds
nothing to do and re-tags only what an interrupted run left. Each change is returned
(``Change``) for the day's job record and logged.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from shared_lib.adapters.scoped import scoped
from shared_lib.memory.tag_match import cosine, embed_tags, loose_key
from shared_lib.memory.tag_signal import items_path, masters
from shared_lib.memory.tags import TAGGED, reinforce
from shared_lib.observability.logs import log_event
from shared_lib.ports import Doc, Embedder, Store, Transaction

MERGE_COSINE = 0.95  # above the search's threshold: merging is not undone by a search
MERGE_CO_SHARE = 0.5
SPLIT_MIN_ITEMS = 30
SPLIT_MIN_SHARE = 0.25
SPLIT_MARGIN = 0.1
CHILD_MIN_SHARE = 0.5  # a child's name: on at least half its cluster's memories
CHILD_MAX_OTHER = 0.2  # and on at most this share of the other cluster's
ROUNDS = 10

Vector = Sequence[float]


@dataclass(frozen=True)
class Change:
    action: Literal["merge", "split"]
    tag: str
    into: tuple[str, ...]
    items: int  # memories re-tagged
    why: str

    def as_doc(self) -> Doc:
        return {
            "action": self.action,
            "tag": self.tag,
            "into": list(self.into),
            "items": self.items,
            "why": self.why,
        }


def items_of(store: Store, org_id: str, tag: str) -> list[tuple[str, Doc]]:
    found = []
    for collection in TAGGED:
        where = items_path(org_id, collection)
        for doc_id, doc in store.query(where, where=[("tags", "array_contains", tag)], limit=10_000):
            found.append((f"{where}/{doc_id}", doc))
    return found


def _retag(store: Store, org_id: str, item: str, old: str, new: str) -> bool:
    """``item`` carries ``new`` instead of ``old`` (one transaction); False when it no longer
    carries ``old``."""

    def write(txn: Transaction) -> bool:
        doc = txn.get(item)
        if doc is None or old not in (doc.get("tags") or []):
            return False
        scores = dict(doc.get("tag_scores") or {})
        moved, kept = scores.pop(old, None), scores.get(new)
        if moved is not None:
            value = reinforce(_conf(kept), _conf(moved)) if kept is not None else _conf(moved)
            scores[new] = {**(moved if isinstance(moved, dict) else {}), "confidence": value}
        names = list(dict.fromkeys(new if t == old else t for t in doc.get("tags") or []))
        txn.set(item, {**doc, "tags": names, "tag_scores": scores})
        return True

    return bool(scoped(store, org_id).run_transaction(write))


def _conf(score: object) -> float:
    return float(score.get("confidence", 1.0)) if isinstance(score, dict) else 1.0


def _nearer(vector: Vector, centres: Sequence[Vector]) -> int:
    return max(range(len(centres)), key=lambda i: cosine(vector, centres[i]))


def _mean(vectors: Sequence[Vector]) -> list[float]:
    return [sum(col) / len(vectors) for col in zip(*vectors, strict=True)]


def two_means(vectors: Sequence[Vector]) -> tuple[list[int], list[list[float]]]:
    """Deterministic 2-means by cosine: seeded by the memory farthest from the mean and the one
    farthest from it. Returns each vector's cluster (0/1) and the two centres."""
    mean = _mean(vectors)
    first = min(range(len(vectors)), key=lambda i: (cosine(vectors[i], mean), i))
    second = min(range(len(vectors)), key=lambda i: (cosine(vectors[i], vectors[first]), i))
    centres = [list(vectors[first]), list(vectors[second])]
    labels: list[int] = []
    for _ in range(ROUNDS):
        new = [_nearer(v, centres) for v in vectors]
        if new == labels or len(set(new)) < 2:
            labels = new
            break
        labels = new
        centres = [_mean([v for v, lab in zip(vectors, labels, strict=True) if lab == k]) for k in (0, 1)]
    return labels, centres


def _merge(store: Store, org_id: str, docs: dict[str, tuple[str, Doc]], now: datetime) -> list[Change]:
    active = {n: d for n, (_, d) in docs.items() if not d.get("merged_into") and not d.get("split_into")}
    order = sorted(
        active, key=lambda n: (-int(active[n].get("use_count", 0)), str(active[n].get("created_at")), n)
    )
    changes: list[Change] = []
    gone: set[str] = set()
    uses = {n: int(d.get("use_count", 0)) for n, d in active.items()}
    for i, keep in enumerate(order):
        for other in order[i + 1 :]:
            if keep in gone or other in gone:
                continue
            why = ""
            if loose_key(keep) == loose_key(other):
                why = "spelled alike"
            else:
                a, b = active[keep], active[other]
                if (
                    a.get("embedding")
                    and b.get("embedding")
                    and a.get("embedding_model") == b.get("embedding_model")
                    and cosine(a["embedding"], b["embedding"]) >= MERGE_COSINE
                ):
                    rare = items_of(store, org_id, other)
                    both = sum(1 for _, d in rare if keep in (d.get("tags") or []))
                    if rare and both / len(rare) >= MERGE_CO_SHARE:
                        why = f"near names, {both}/{len(rare)} memories carry both"
            if not why:
                continue
            loser_path = docs[other][0]
            uses[keep] += uses[other]
            scoped(store, org_id).set(loser_path, {"merged_into": keep, "merged_at": now}, merge=True)
            scoped(store, org_id).set(docs[keep][0], {"use_count": uses[keep]}, merge=True)
            gone.add(other)
            moved = sum(_retag(store, org_id, p, other, keep) for p, _ in items_of(store, org_id, other))
            changes.append(Change("merge", other, (keep,), moved, why))
    return changes


def _child_names(labels: list[int], items: list[tuple[str, Doc]], parent: str) -> tuple[str, str] | None:
    sizes = Counter(labels)
    counts = [Counter(), Counter()]  # type: list[Counter[str]]
    for lab, (_, doc) in zip(labels, items, strict=True):
        counts[lab].update(t for t in set(doc.get("tags") or ()) if t != parent)
    names = []
    for k in (0, 1):
        other = 1 - k
        scored = [
            (counts[k][t] / sizes[k] - counts[other][t] / sizes[other], t)
            for t in counts[k]
            if counts[k][t] / sizes[k] >= CHILD_MIN_SHARE
            and counts[other][t] / sizes[other] <= CHILD_MAX_OTHER
        ]
        if not scored:
            return None
        names.append(max(scored)[1])
    return (names[0], names[1]) if names[0] != names[1] else None


def _split(store: Store, org_id: str, docs: dict[str, tuple[str, Doc]], now: datetime) -> list[Change]:
    changes = []
    for name, (master_path, doc) in docs.items():
        if doc.get("merged_into") or doc.get("split_into") or int(doc.get("use_count", 0)) < SPLIT_MIN_ITEMS:
            continue
        items = [(p, d) for p, d in items_of(store, org_id, name) if d.get("embedding")]
        if len(items) < SPLIT_MIN_ITEMS:
            continue
        vectors = [d["embedding"] for _, d in items]
        labels, centres = two_means(vectors)
        sizes = Counter(labels)
        if min(sizes[0], sizes[1]) < SPLIT_MIN_SHARE * len(items):
            continue
        own = sum(cosine(v, centres[lab]) for v, lab in zip(vectors, labels, strict=True)) / len(vectors)
        if own - cosine(centres[0], centres[1]) < SPLIT_MARGIN:
            continue
        children = _child_names(labels, items, name)
        if children is None:
            continue
        scoped(store, org_id).set(
            master_path,
            {"split_into": list(children), "split_centres": centres, "split_at": now},
            merge=True,
        )
        doc = {**doc, "split_into": list(children), "split_centres": centres}
        changes.append(
            Change("split", name, children, _finish_split(store, org_id, name, doc), "two clusters")
        )
    return changes


def _finish_split(store: Store, org_id: str, name: str, doc: Doc) -> int:
    children, centres = list(doc["split_into"]), doc.get("split_centres") or []
    moved = 0
    for item, d in items_of(store, org_id, name):
        if d.get("embedding") and len(centres) == len(children):
            moved += _retag(store, org_id, item, name, children[_nearer(d["embedding"], centres)])
    return moved


def _finish(store: Store, org_id: str, docs: dict[str, tuple[str, Doc]]) -> int:
    """What an interrupted run left: memories still carrying a merged or split tag."""
    left = 0
    for name, (_, doc) in docs.items():
        if doc.get("merged_into"):
            left += sum(
                _retag(store, org_id, p, name, str(doc["merged_into"]))
                for p, _ in items_of(store, org_id, name)
            )
        elif doc.get("split_into"):
            left += _finish_split(store, org_id, name, doc)
    return left


def evolve_tags(store: Store, embedder: Embedder | None, org_id: str, now: datetime) -> list[Change]:
    """The night's merges and splits of the organisation's tags (names embedded first)."""
    if embedder is not None:
        embed_tags(store, embedder, masters(store, org_id, fresh=True))

    def current() -> dict[str, tuple[str, Doc]]:
        return {str(d["tag"]): (p, d) for p, d in masters(store, org_id, fresh=True) if d.get("tag")}

    finished = _finish(store, org_id, current())
    changes = _merge(store, org_id, current(), now)
    changes += _split(store, org_id, current(), now)
    for c in changes:
        log_event("tags_evolved", org_id=org_id, **c.as_doc())
    if finished:
        log_event("tags_evolution_finished", org_id=org_id, items=finished)
    return changes
