"""Writing and removing a source's chunks (seed 001 §18): the index the search reads.

A source (a teaching, a knowledge document, a company value, a memory, an episode) is
masked, cut into chunks, embedded (outside any transaction: it is the slow part), then
written in ONE transaction with everything that depends on it: its chunks
(``memory_chunks``), their keyword statistics (``memory_stats``: chunk count and total length
in ``totals``, document frequency per term in ``df-NN``, the term hashed into one of
``keyword.BUCKETS`` documents, so a query reads a few small documents, never the chunks
of the whole organisation) and the source's manifest (``memory_sources``: its chunk ids). So
re-indexing the same source replaces its chunks exactly, and a crash leaves either the
old chunks or the new ones, with statistics that count what is there.

Chunk ids derive from the source (``sha256(kind, id)[:20]-seq``): the same source always
writes the same ids.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cryptography.fernet import MultiFernet

from shared_lib import collections
from shared_lib.errors import ArgumentError
from shared_lib.memory.chunking import CHUNK_TOKENS, chunk_text
from shared_lib.memory.keyword import BUCKETS, bucket, term_counts
from shared_lib.memory.tags import untagged_fields
from shared_lib.ports import Doc, Embedder, Store, Transaction, Vector, read_together
from shared_lib.privacy.sealing import SEALED_FIELD, masked_values, seal_excerpt

MAX_CHUNKS = 200  # a source of more (about 300 000 characters) is refused: one transaction writes it
SOURCE_KINDS = ("teaching", "knowledge", "value", "memory", "episode", "fact")  # fact: compaction's


def source_key(source_kind: str, source_id: str) -> str:
    return hashlib.sha256(f"{source_kind}\0{source_id}".encode()).hexdigest()[:20]


def chunks_path(org_id: str) -> str:
    return collections.collection_path("memory_chunks", org=org_id)


def chunk_path(org_id: str, chunk_id: str) -> str:
    return collections.path("memory_chunks", org=org_id, id=chunk_id)


def source_path(org_id: str, source_kind: str, source_id: str) -> str:
    return collections.path("memory_sources", org=org_id, id=source_key(source_kind, source_id))


def stats_path(org_id: str, name: str) -> str:
    """``totals`` or ``df-NN`` (``NN`` a bucket)."""
    return collections.path("memory_stats", org=org_id, id=name)


def df_name(b: int) -> str:
    return f"df-{b:02d}"


@dataclass(frozen=True)
class Prepared:
    """A source's chunks, masked and embedded, ready to be written (``write``) in a transaction."""

    org_id: str
    source_kind: str
    source_id: str
    chunks: dict[str, Doc]
    now: datetime


_CACHE: OrderedDict[tuple[str, str], Vector] = OrderedDict()
_CACHE_LOCK = threading.Lock()
CACHE_SIZE = 4096  # vectors of chunks the process embedded lately (seed 001 §18.2's cache)
# a chunk's vector leans this far toward its source's title, embedded apart (chosen on the office
# recall set, reported on the others: infra/bench/README.md)
TITLE_WEIGHT = 0.2


def _embedded(embedder: Embedder, pieces: list[str]) -> list[Vector]:
    """``pieces`` embedded, each text once per process and model (by its SHA-256): a transaction
    retried under contention, or the same memory saved twice, embeds nothing again."""
    keys = [(embedder.name, hashlib.sha256(p.encode()).hexdigest()) for p in pieces]
    with _CACHE_LOCK:
        known = {k: _CACHE[k] for k in keys if k in _CACHE}
    missing = [p for p, k in zip(pieces, keys, strict=True) if k not in known]
    fresh = (
        dict(zip([k for k in keys if k not in known], embedder.embed(missing, kind="document"), strict=True))
        if missing
        else {}
    )
    with _CACHE_LOCK:
        for k, v in fresh.items():
            _CACHE[k] = v
            _CACHE.move_to_end(k)
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    return [known.get(k) or fresh[k] for k in keys]


def titled_vectors(
    embedder: Embedder, rows: Sequence[tuple[str, str | None]], *, cached: bool = True
) -> list[Vector]:
    """The vector of each ``(chunk text, its source's title)``: the chunk's own, plus
    ``TITLE_WEIGHT`` times the title's, back to unit length (the chunk's own when it has no
    title). A title names what the whole source is about in a few words (「昇給・賞与」), which a
    chunk's sentences may never say: embedded with the text it was drowned (measured worse),
    embedded apart and added it moves every chunk of the source toward its subject. The texts and
    titles are embedded in one call, through the process's cache (``_embedded``) unless ``cached``
    is false."""
    titles = [t if t and t.strip() and TITLE_WEIGHT else None for _, t in rows]
    named = sorted({t for t in titles if t})
    texts = [text for text, _ in rows] + named
    if not rows:
        return []
    vectors = _embedded(embedder, texts) if cached else embedder.embed(texts, kind="document")
    heads = dict(zip(named, vectors[len(rows) :], strict=True))
    return [
        _unit([a + TITLE_WEIGHT * b for a, b in zip(v, heads[t], strict=True)]) if t else v
        for v, t in zip(vectors[: len(rows)], titles, strict=True)
    ]


def vector_fields(embedder: Embedder, vector: Vector, title: str | None) -> Doc:
    """What a chunk stores beside its text: the vector, its model and, when the title leans it,
    the weight (``memory.reembed`` re-embeds a chunk whose weight is not the current one)."""
    fields: Doc = {"embedding": vector, "model": embedder.name}
    if title and title.strip() and TITLE_WEIGHT:
        fields["title_weight"] = TITLE_WEIGHT
    return fields


def _unit(values: list[float]) -> Vector:
    norm = math.sqrt(sum(x * x for x in values)) or 1.0
    return Vector(x / norm for x in values)


def prepare(
    embedder: Embedder | None,
    org_id: str,
    *,
    source_kind: str,
    source_id: str,
    text: str,
    now: datetime,
    min_level: int = 1,
    user_id: str | None = None,
    tags: Sequence[str] = (),
    title: str | None = None,
    expires_at: datetime | None = None,
    cipher: MultiFernet | None = None,
    happened_at: datetime | None = None,
) -> Prepared:
    """Mask, cut and embed ``text`` (the slow part, done before any transaction); with ``cipher``
    (a person's memory) each chunk seals the values its masked text stands for (``sealing``);
    ``happened_at`` (an episode) is when what the text tells happened, which a hit shows."""
    if source_kind not in SOURCE_KINDS:
        raise ArgumentError(f"unknown source kind {source_kind!r}; one of {', '.join(SOURCE_KINDS)}")
    if len(text) > MAX_CHUNKS * CHUNK_TOKENS * 4:  # more chunks whatever the script: no need to cut it
        raise ArgumentError(f"text too long to index: {len(text)} characters")
    masked, values = masked_values(text)  # ``mask_stored`` text, and what each placeholder stood for
    pieces = chunk_text(masked)
    if len(pieces) > MAX_CHUNKS:
        raise ArgumentError(f"text too long to index: {len(pieces)} chunks (at most {MAX_CHUNKS})")
    shown, title_values = masked_values(title) if title else (None, [])
    vectors = titled_vectors(embedder, [(p, shown) for p in pieces]) if embedder and pieces else []
    key = source_key(source_kind, source_id)
    chunks: dict[str, Doc] = {}
    at = 0
    for seq, piece in enumerate(pieces):
        at = max(masked.find(piece, at), 0)  # chunks overlap: each is found after the last one's start
        tf = term_counts(f"{shown}\n{piece}" if shown else piece)
        doc: Doc = {
            "source_kind": source_kind,
            "source_id": source_id,
            "seq": seq,
            "text": piece,
            "title": shown,
            "terms": sorted(tf),
            "tf": tf,
            "length": sum(tf.values()),
            "min_level": int(min_level),
            "user_id": user_id,
            **untagged_fields(),  # the tagging job finds it (memory.tags): Firestore cannot query a missing field
            "tags": list(tags),
            "created_at": now,
        }
        if vectors and embedder:
            doc.update(vector_fields(embedder, vectors[seq], shown))
        if expires_at is not None:
            doc["expires_at"] = expires_at
        if happened_at is not None:
            doc["happened_at"] = happened_at
        sealed = {
            field: entries
            for field, entries in (
                ("text", seal_excerpt(masked, values, at, piece, cipher)),
                ("title", seal_excerpt(shown or "", title_values, 0, shown or "", cipher)),
            )
            if entries
        }
        if sealed:
            doc[SEALED_FIELD] = sealed
        chunks[f"{key}-{seq:03d}"] = doc
    return Prepared(org_id, source_kind, source_id, chunks, now)


def write(txn: Transaction, prepared: Prepared) -> list[str]:
    """Replace the source's chunks by the prepared ones inside ``txn`` (reads first, so call it
    before the transaction's other writes); the new chunk ids."""
    p = prepared
    manifest = {
        "source_kind": p.source_kind,
        "source_id": p.source_id,
        "chunk_ids": sorted(p.chunks),
        "updated_at": p.now,
    }
    _replace(txn, p.org_id, p.source_kind, p.source_id, p.chunks, manifest)
    return sorted(p.chunks)


def index_text(
    store: Store,
    embedder: Embedder | None,
    org_id: str,
    *,
    source_kind: str,
    source_id: str,
    text: str,
    now: datetime,
    min_level: int = 1,
    user_id: str | None = None,
    tags: Sequence[str] = (),
    title: str | None = None,
    expires_at: datetime | None = None,
    cipher: MultiFernet | None = None,
    happened_at: datetime | None = None,
) -> list[str]:
    """Index ``text`` as the chunks of the source (replacing any it had); their ids.

    Without an embedder the chunks carry no vector (keyword search still finds them; a later
    re-index with one adds them). ``user_id`` makes the chunks that person's only.
    """
    prepared = prepare(
        embedder,
        org_id,
        source_kind=source_kind,
        source_id=source_id,
        text=text,
        now=now,
        min_level=min_level,
        user_id=user_id,
        tags=tags,
        title=title,
        expires_at=expires_at,
        cipher=cipher,
        happened_at=happened_at,
    )
    return store.run_transaction(lambda txn: write(txn, prepared))


def remove_source(store: Store, org_id: str, source_kind: str, source_id: str) -> int:
    """Remove the source's chunks (their vectors with them) and their statistics; how many."""
    return store.run_transaction(lambda txn: unindex(txn, org_id, source_kind, source_id))


def unindex(txn: Transaction, org_id: str, source_kind: str, source_id: str) -> int:
    """``remove_source`` inside ``txn`` (reads first: call it before the transaction's writes)."""
    return _replace(txn, org_id, source_kind, source_id, {}, None)


def _replace(
    txn: Transaction,
    org_id: str,
    source_kind: str,
    source_id: str,
    chunks: dict[str, Doc],
    manifest: Doc | None,
) -> int:
    """Reads first (manifest, old chunks, statistics), then every write; the old chunk count."""
    spath, tpath = source_path(org_id, source_kind, source_id), stats_path(org_id, "totals")
    # one batched read for what the new chunks need (the manifest, the totals, their terms'
    # buckets); a second only for a source indexed before (its old chunks, their buckets)
    new_buckets = sorted({bucket(t) for d in chunks.values() for t in d["terms"]})
    first = read_together(txn, [spath, tpath, *(stats_path(org_id, df_name(b)) for b in new_buckets)])
    old_ids = [str(c) for c in (first[spath] or {}).get("chunk_ids", [])]
    old_docs = read_together(txn, [chunk_path(org_id, c) for c in old_ids])
    old = {cid: old_docs[chunk_path(org_id, cid)] or {} for cid in old_ids}
    delta: dict[str, int] = {}
    _count(delta, (d.get("terms") or [] for d in old.values()), -1)
    _count(delta, (d["terms"] for d in chunks.values()), +1)
    touched = sorted({bucket(t) for t, n in delta.items() if n})
    totals = first[tpath] or {}
    more = read_together(txn, [stats_path(org_id, df_name(b)) for b in touched if b not in new_buckets])
    read = {**first, **more}
    tables = {b: read[stats_path(org_id, df_name(b))] or {} for b in touched}
    for b, table in tables.items():
        df = dict(table.get("df") or {})
        for term, n in delta.items():
            if n and bucket(term) == b:
                value = int(df.get(term, 0)) + n
                if value > 0:
                    df[term] = value
                else:
                    df.pop(term, None)
        txn.set(stats_path(org_id, df_name(b)), {"df": df})
    length = sum(int(d.get("length", 0)) for d in chunks.values())
    length -= sum(int(d.get("length", 0)) for d in old.values())
    counted: dict[str, Any] = {
        "chunks": max(0, int(totals.get("chunks", 0)) + len(chunks) - len(old)),
        "length": max(0, int(totals.get("length", 0)) + length),
        "buckets": BUCKETS,
    }
    # chunks per source kind (a search of kinds the organisation has none of reads nothing more);
    # statistics written before the counts existed keep none rather than wrong ones
    if "kinds" in totals or not int(totals.get("chunks", 0)):
        kinds = {k: int(v) for k, v in dict(totals.get("kinds") or {}).items()}
        kinds[source_kind] = max(0, kinds.get(source_kind, 0) + len(chunks) - len(old))
        counted["kinds"] = {k: v for k, v in kinds.items() if v}
    txn.set(stats_path(org_id, "totals"), counted)
    for cid in old:
        if cid not in chunks:
            txn.delete(chunk_path(org_id, cid))
    for cid, doc in chunks.items():
        txn.set(chunk_path(org_id, cid), doc)
    if manifest is None:
        txn.delete(spath)
    else:
        txn.set(spath, manifest)
    return len(old)


def _count(delta: dict[str, int], term_lists: Iterable[Iterable[Any]], sign: int) -> None:
    for term_list in term_lists:
        for term in term_list:
            delta[str(term)] = delta.get(str(term), 0) + sign
