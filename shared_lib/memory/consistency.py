"""Is the memory index what its sources say? (seed 001 §17.3 メモリ: インデックスの整合性チェック)

The index (``memory.index``) keeps, per organisation, a manifest per source (``memory_sources``:
its kind, id and chunk ids), the chunks (``memory_chunks``: text, terms, vector and model) and
the keyword statistics the search reads (``memory_stats``: ``totals`` with the chunk count,
total length and chunks per kind; ``df-NN`` the document frequency of each term). A crash is
covered by the index's one transaction; what this finds is what else breaks it: a document
deleted by hand or by Firestore's TTL, a restore of one collection, a model change, a bug.
Each finding is one of ``PROBLEMS``:

* ``source_gone`` — a manifest whose source document (the teaching, knowledge document, value,
  memory or episode) is gone: its chunks still answer searches. ``expired`` is the same when its
  chunks are gone too (Firestore's TTL deleted a memory and its chunks, not the manifest):
  expected, repaired, never alerted.
* ``chunk_missing`` — a manifest lists a chunk that is not there: the search cannot find that
  part of the source.
* ``orphan_chunk`` — a chunk no manifest lists: nothing would ever replace or remove it.
* ``no_vector``, ``vector_dimension``, ``vector_model`` — a chunk the vector search cannot rank
  (checked when an embedder is configured: its name and dimensions are the truth).
* ``totals`` — the chunk count, total length or per-kind counts differ from the chunks (BM25's
  length normalisation, the search's skip of kinds the organisation has none of).
* ``postings`` — a ``df-NN`` table differs from the chunks' terms (BM25's idf of those terms).

``check`` reads the whole organisation (the operator's ``charter memory check``); ``check_sources``
checks a page of manifests (the heartbeat's bounded check). ``repair`` fixes what ``check``
found, idempotently: a gone source is removed from the index, a source with chunks missing is
indexed again from its document (a fact, which has no document, keeps the chunks it has), an
orphan is deleted, vectors are made again (``memory.reembed``), and the statistics are counted
again from the chunks and written only if no index write happened meanwhile.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from cryptography.fernet import MultiFernet

from shared_lib import collections
from shared_lib.memory.index import (
    Prepared,
    chunk_path,
    chunks_path,
    df_name,
    remove_source,
    source_key,
    stats_path,
    write,
)
from shared_lib.memory.ingest import index_source, origin_path
from shared_lib.memory.keyword import BUCKETS, bucket
from shared_lib.memory.reembed import reembed
from shared_lib.ports import Doc, Embedder, Store, Transaction

PROBLEMS = (
    "source_gone",
    "expired",
    "chunk_missing",
    "orphan_chunk",
    "no_vector",
    "vector_dimension",
    "vector_model",
    "totals",
    "postings",
)
QUIET = frozenset({"expired"})  # found and repaired, not worth an alert


@dataclass(frozen=True)
class Finding:
    problem: str
    source_kind: str | None = None
    source_id: str | None = None
    chunk_id: str | None = None
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in (None, "")}


@dataclass
class Report:
    org_id: str
    sources: int = 0
    chunks: int = 0
    findings: list[Finding] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for f in self.findings:
            out[f.problem] = out.get(f.problem, 0) + 1
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "org": self.org_id,
            "sources": self.sources,
            "chunks": self.chunks,
            "counts": self.counts(),
            "findings": [f.as_dict() for f in self.findings],
        }


def sources_path(org_id: str) -> str:
    return collections.collection_path("memory_sources", org=org_id)


def vector_findings(embedder: Embedder | None, cid: str, doc: Doc) -> list[Finding]:
    """What keeps the vector search from ranking the chunk (nothing without an embedder)."""
    if embedder is None:
        return []
    kind, sid = str(doc.get("source_kind")), str(doc.get("source_id"))
    vector = doc.get("embedding")
    if not vector:
        return [Finding("no_vector", kind, sid, cid)]
    if len(vector) != embedder.dimensions:
        return [Finding("vector_dimension", kind, sid, cid, f"{len(vector)} != {embedder.dimensions}")]
    if doc.get("model") != embedder.name:
        return [Finding("vector_model", kind, sid, cid, f"{doc.get('model')} != {embedder.name}")]
    return []


def check_sources(
    store: Store, embedder: Embedder | None, org_id: str, manifests: Iterable[tuple[str, Doc]]
) -> tuple[list[Finding], dict[str, Doc]]:
    """Check these manifests against their source documents and chunks (a read of each); the
    findings and the chunks found (by id)."""
    findings: list[Finding] = []
    found: dict[str, Doc] = {}
    for _, manifest in manifests:
        kind, sid = str(manifest.get("source_kind")), str(manifest.get("source_id"))
        ids = [str(c) for c in manifest.get("chunk_ids") or []]
        chunks = {cid: store.get(chunk_path(org_id, cid)) for cid in ids}
        present = {cid: d for cid, d in chunks.items() if d is not None}
        found.update(present)
        origin = origin_path(org_id, kind, sid)
        if origin is not None and store.get(origin) is None:
            findings.append(Finding("expired" if not present else "source_gone", kind, sid))
            continue
        findings.extend(Finding("chunk_missing", kind, sid, cid) for cid in ids if cid not in present)
        for cid, doc in present.items():
            findings.extend(vector_findings(embedder, cid, doc))
    return findings, found


def recount(chunks: Iterable[Doc]) -> tuple[Doc, dict[int, dict[str, int]]]:
    """The statistics the chunks make: ``totals`` and each bucket's document frequencies."""
    n = length = 0
    kinds: dict[str, int] = {}
    tables: dict[int, dict[str, int]] = {b: {} for b in range(BUCKETS)}
    for doc in chunks:
        n += 1
        length += int(doc.get("length", 0))
        kind = str(doc.get("source_kind"))
        kinds[kind] = kinds.get(kind, 0) + 1
        for term in doc.get("terms") or []:
            table = tables[bucket(str(term))]
            table[str(term)] = table.get(str(term), 0) + 1
    return {"chunks": n, "length": length, "buckets": BUCKETS, "kinds": kinds}, tables


def stats_findings(totals: Doc, counted: Doc, *, kinds_only_if_kept: bool = True) -> list[Finding]:
    """Where the stored ``totals`` differ from the counted ones."""
    wrong = [k for k in ("chunks", "length") if int(totals.get(k, 0)) != int(counted[k])]
    kept = {k: int(v) for k, v in dict(totals.get("kinds") or {}).items() if int(v)}
    if ("kinds" in totals or not kinds_only_if_kept) and kept != counted["kinds"]:
        wrong.append("kinds")
    detail = ", ".join(f"{k} {totals.get(k, 0) if k != 'kinds' else kept} != {counted[k]}" for k in wrong)
    return [Finding("totals", detail=detail)] if wrong else []


def check(store: Store, embedder: Embedder | None, org_id: str) -> Report:
    """Every invariant over the whole organisation (reads every manifest, chunk, source
    document and statistics document once)."""
    manifests = store.query(sources_path(org_id))
    findings, listed = check_sources(store, embedder, org_id, manifests)
    chunks = store.query(chunks_path(org_id))
    for cid, doc in chunks:
        if cid not in listed:
            findings.append(Finding("orphan_chunk", doc.get("source_kind"), doc.get("source_id"), cid))
            findings.extend(vector_findings(embedder, cid, doc))
    counted, tables = recount(doc for _, doc in chunks)
    findings.extend(stats_findings(store.get(stats_path(org_id, "totals")) or {}, counted))
    for b, table in tables.items():
        stored = {
            k: int(v)
            for k, v in dict((store.get(stats_path(org_id, df_name(b))) or {}).get("df") or {}).items()
        }
        if stored != table:
            off = sorted(t for t in set(stored) | set(table) if stored.get(t, 0) != table.get(t, 0))
            findings.append(Finding("postings", detail=f"{df_name(b)}: {len(off)} term(s)"))
    return Report(org_id, sources=len(manifests), chunks=len(chunks), findings=findings)


@dataclass
class Repaired:
    removed_sources: int = 0
    reindexed_sources: int = 0
    trimmed_sources: int = 0
    deleted_chunks: int = 0
    reembedded_chunks: int = 0
    statistics: str = "unchanged"  # "rewritten", or "changed meanwhile" (run the check again)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def repair(
    store: Store,
    embedder: Embedder | None,
    org_id: str,
    report: Report,
    *,
    now: datetime,
    cipher: MultiFernet | None = None,
) -> Repaired:
    """Fix what ``report`` found (see the module docstring); running it twice changes nothing more."""
    done = Repaired()
    by_source: dict[tuple[str, str], set[str]] = {}
    for f in report.findings:
        if f.source_kind is None or f.source_id is None:
            continue
        by_source.setdefault((f.source_kind, f.source_id), set()).add(f.problem)
    for (kind, sid), problems in sorted(by_source.items()):
        if problems & {"source_gone", "expired"}:
            origin = origin_path(org_id, kind, sid)
            if origin is not None and store.get(origin) is not None:
                continue  # written again since the check: the index already follows it
            remove_source(store, org_id, kind, sid)
            done.removed_sources += 1
        elif "chunk_missing" in problems:
            again = index_source(store, embedder, org_id, kind, sid, now=now, cipher=cipher)
            if again is None:  # no document to index it from (a fact): keep what is there
                _trim(store, org_id, kind, sid, now)
                done.trimmed_sources += 1
            else:
                done.reindexed_sources += 1
    for f in report.findings:
        if f.problem == "orphan_chunk" and f.chunk_id:
            store.delete(chunk_path(org_id, f.chunk_id))
            done.deleted_chunks += 1
    if embedder is not None and any(f.problem.startswith(("no_vector", "vector_")) for f in report.findings):
        done.reembedded_chunks = reembed(store, embedder, org_id).embedded
    done.statistics = _restate(store, org_id)
    return done


def _trim(store: Store, org_id: str, kind: str, sid: str, now: datetime) -> None:
    """A source kept only as chunks: its manifest (and statistics) say the chunks still there."""
    manifest = store.get(collections.path("memory_sources", org=org_id, id=source_key(kind, sid))) or {}
    present = {
        cid: doc
        for cid in manifest.get("chunk_ids") or []
        if (doc := store.get(chunk_path(org_id, str(cid)))) is not None
    }
    store.run_transaction(lambda txn: write(txn, Prepared(org_id, kind, sid, present, now)))


def _restate(store: Store, org_id: str) -> str:
    """Count the statistics again from the chunks; write them if they differ and the index was
    not written meanwhile (every index write rewrites ``totals``)."""
    before = store.get(stats_path(org_id, "totals")) or {}
    counted, tables = recount(doc for _, doc in store.query(chunks_path(org_id)))

    def rewrite(txn: Transaction) -> str:
        paths = {b: stats_path(org_id, df_name(b)) for b in tables}
        current = txn.get(stats_path(org_id, "totals")) or {}
        stored = {b: txn.get(p) or {} for b, p in paths.items()}  # reads first
        if current != before:
            return "changed meanwhile"
        changed = False
        if stats_findings(current, counted, kinds_only_if_kept=False):
            txn.set(stats_path(org_id, "totals"), counted)
            changed = True
        for b, table in tables.items():
            if {k: int(v) for k, v in dict(stored[b].get("df") or {}).items()} != table:
                txn.set(paths[b], {"df": table})
                changed = True
        return "rewritten" if changed else "unchanged"

    return store.run_transaction(rewrite)
