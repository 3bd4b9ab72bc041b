"""Hybrid search over an organisation's chunks (seed 001 §18): keyword (BM25) and vector,
fused by reciprocal rank, for one reader.

Why rank fusion and these weights. BM25 scores are unbounded and depend on the collection;
cosine similarities of a sentence model crowd into a narrow band that differs per model
(e5 and MiniLM on Japanese text, Vertex's multilingual model). A weighted sum of raw scores would
need calibrating per model and per organisation; ranks need none. Reciprocal rank fusion
(Cormack, Clarke & Büttcher 2009, k = 60: a hit's weight falls slowly with its rank, so
agreement between the two lists counts more than a first place in one) adds
``w / (k + rank)`` per list.

The weights belong to the embedding model, because they say how far its ranking is to be
trusted on Japanese. Seed 001 §18.2's vector 0.7 / keyword 0.3 was set for ruri-v3, a Japanese
model: paraphrases are the vector's, exact terms (names, numbers, product codes) the keyword's.
The local model, multilingual-e5-small, reads Japanese; on the office set of
``infra/bench/recall.py`` (225 queries, half paraphrases sharing no content word with their
answer) the seed's 0.7 is among the best weights, and it is kept (figures in
``infra/bench/README.md``). A model not in ``MODEL_WEIGHTS`` (Vertex's multilingual model) gets
the seed's; measure it with the benchmark (``--vector-weight``) before trusting it.

Rank fusion counts a keyword hit however weak: a paraphrase shares a common word or two
(「出」「会社」) with documents about anything, and those ranks pushed the vector's right answers
out of the top five (hybrid below the vector alone). So in the fusion the keyword side ranks
only chunks holding ``KEYWORD_SHARE`` of what the query names (its terms weighed by idf): an
exact term still leads, a stray shared word no longer votes. ``mode="keyword"`` (and a search
without an embedder) keeps every match: there nothing else fills the list.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, cast

from shared_lib.errors import ConfigError
from shared_lib.memory.index import chunks_path, df_name, stats_path
from shared_lib.memory.keyword import MAX_QUERY_TERMS, bm25, bucket, idf, query_terms
from shared_lib.memory.tag_signal import TAG_WEIGHT, tag_ranking
from shared_lib.ports import Doc, Embedder, Op, Store, VectorSearch

RRF_K = 60
SEED_VECTOR_WEIGHT = 0.7  # seed 001 §18.2 (keyword 0.3), for a model that reads Japanese
MODEL_WEIGHTS = {"multilingual-e5-small-q4": 0.7}  # vector weight per model; keyword = 1 - it (see above)
PER_TERM_LIMIT = 200  # candidates read per query term (the rarest terms are read first)
# in the fusion, the keyword side ranks only chunks holding this share of what the query names
# (its terms by idf): a chunk sharing one common word with a paraphrase is not a keyword match
KEYWORD_SHARE = 0.5  # chosen on the office set with the weight (infra/bench/README.md)
VECTOR_FACTOR = 8  # nearest chunks read per hit wanted, before the reader's filter


class Reader:
    """Who asks: their id (``None``: nobody's private chunks) and their level (seed 000, 1-6).

    ``level`` may be a function, called at most once and only when a chunk needs more than
    level 1 (most need none: a search that finds nothing, or only what everyone may read, never
    reads the directory).
    """

    def __init__(self, user_id: str | None, level: int | Callable[[], int]) -> None:
        self.user_id = user_id
        self._level = level

    @property
    def level(self) -> int:
        if callable(self._level):
            self._level = int(self._level())
        return self._level

    def may_read(self, doc: Doc) -> bool:
        owner = doc.get("user_id")
        needed = int(doc.get("min_level", 1))
        return (owner is None or owner == self.user_id) and (needed <= 1 or needed <= self.level)


@dataclass(frozen=True)
class Hit:
    chunk_id: str
    source_kind: str
    source_id: str
    text: str
    title: str | None
    score: float
    keyword_score: float | None
    vector_score: float | None
    keyword_rank: int | None
    vector_rank: int | None
    tags: tuple[str, ...] = ()
    happened_at: datetime | None = None  # an episode's: when what it tells happened
    tag_rank: int | None = None  # its rank among the chunks carrying a tag the query names
    owner: str | None = None  # the chunk's person (``user_id``): who alone may read it in clear
    sealed: dict[str, Any] | None = None  # its values, sealed (``privacy.sealing``): for ``owner`` only

    def public(self) -> dict[str, Any]:
        when = self.happened_at.isoformat() if self.happened_at else None
        out = {**asdict(self), "tags": list(self.tags), "happened_at": when}
        for private in ("sealed", "owner"):  # for the tool that opens it for its owner, not a listing
            out.pop(private)
        return out


def search(
    store: Store,
    embedder: Embedder | None,
    org_id: str,
    query: str,
    *,
    reader: Reader,
    kinds: Sequence[str] | None = None,
    limit: int = 5,
    mode: str = "hybrid",
    vector_weight: float | None = None,
) -> list[Hit]:
    """The ``limit`` best sources for ``query`` that ``reader`` may read (``kinds``: only those
    source kinds). ``embedder=None`` (or ``mode="keyword"``) searches by keyword only;
    ``mode="vector"`` by vector only (the benchmark compares the three). ``vector_weight``
    overrides the model's fusion weight (``fusion_weight``)."""

    def wanted(doc: Doc) -> bool:
        return reader.may_read(doc) and (not kinds or doc.get("source_kind") in kinds)

    totals = store.get(stats_path(org_id, "totals")) or {}
    if nothing_to_find(totals, kinds):
        return []  # no chunk of the kinds asked: no query embedded, nothing read
    use_vector = embedder is not None and mode != "keyword"
    share = KEYWORD_SHARE if use_vector else 0.0
    keyword = (
        keyword_ranking(store, org_id, query, wanted, totals=totals, min_share=share)
        if mode != "vector"
        else []
    )
    vector = vector_ranking(store, embedder, org_id, query, wanted, limit) if use_vector and embedder else []
    weight = vector_weight if vector_weight is not None else fusion_weight(embedder)
    tagged = tag_ranking(store, org_id, query, wanted, keyword + vector) if mode == "hybrid" else []
    return fuse(keyword, vector, limit, vector_weight=weight, tagged=tagged)


def fusion_weight(embedder: Embedder | None) -> float:
    """The vector's weight in the fusion for this embedder's model (the keyword's is 1 - it)."""
    return MODEL_WEIGHTS.get(embedder.name, SEED_VECTOR_WEIGHT) if embedder else 0.0


def nothing_to_find(totals: Doc, kinds: Sequence[str] | None) -> bool:
    """The organisation's statistics say it holds no chunk of ``kinds`` (any kind when ``None``);
    statistics without per-kind counts say nothing of kinds."""
    if not int(totals.get("chunks", 0)):
        return True
    counts = totals.get("kinds")
    return bool(kinds) and isinstance(counts, dict) and not any(int(counts.get(k, 0)) for k in kinds or ())


def keyword_ranking(
    store: Store, org_id: str, query: str, wanted: Any, *, totals: Doc | None = None, min_share: float = 0.0
) -> list[tuple[str, Doc, float]]:
    """Chunks holding a query term, by BM25, best first. Reads the totals (unless given), the
    frequency buckets of the query's terms, then each of the rarest ``MAX_QUERY_TERMS`` terms' chunks.
    ``min_share``: only chunks holding at least that share of the query's terms, weighed by idf
    (the fusion's: see ``KEYWORD_SHARE``)."""
    asked = query_terms(query)
    if not asked:
        return []
    totals = totals if totals is not None else store.get(stats_path(org_id, "totals")) or {}
    n_docs = int(totals.get("chunks", 0))
    if not n_docs:
        return []
    buckets = sorted({bucket(t) for t in asked})  # known paths: one get_many, not one read each
    found = store.get_many([stats_path(org_id, df_name(b)) for b in buckets]) if buckets else {}
    tables = {b: found.get(stats_path(org_id, df_name(b))) or {} for b in buckets}
    df = {t: int((tables[bucket(t)].get("df") or {}).get(t, 0)) for t in asked}
    present = sorted((t for t in asked if df[t]), key=lambda t: (df[t], asked.index(t)))[:MAX_QUERY_TERMS]
    candidates: dict[str, Doc] = {}
    # A term held by at most PER_TERM_LIMIT chunks has all of them read either way: those terms
    # are read together, one query (``array_contains_any``, each chunk once) instead of one each;
    # a commoner term is read on its own, capped, as before. Same candidates, fewer round trips.
    together = [t for t in present if df[t] <= PER_TERM_LIMIT]
    together = together if len(together) > 1 else []  # one such term: its own query, as before
    reads: list[tuple[tuple[str, Op, Any], int]] = (
        [(("terms", "array_contains_any", together), PER_TERM_LIMIT * len(together))] if together else []
    )
    reads += [(("terms", "array_contains", t), PER_TERM_LIMIT) for t in present if t not in together]
    for condition, limit in reads:
        for cid, doc in store.query(chunks_path(org_id), where=[condition], limit=limit):
            candidates.setdefault(cid, doc)
    avg = int(totals.get("length", 0)) / n_docs
    scored = [
        (
            cid,
            doc,
            bm25(
                present, int(doc.get("length", 0)), doc.get("tf") or {}, n_docs=n_docs, avg_length=avg, df=df
            ),
        )
        for cid, doc in candidates.items()
        if wanted(doc) and (not min_share or _share(asked, doc, df, n_docs) >= min_share)
    ]
    return sorted((s for s in scored if s[2] > 0), key=lambda s: (-s[2], s[0]))


def _share(asked: Sequence[str], doc: Doc, df: dict[str, int], n_docs: int) -> float:
    """The share of the query's terms (weighed by idf: a rare term names more, and a term no
    chunk holds names the most) the chunk holds."""
    held = set(doc.get("terms") or ())
    weights = {t: idf(df[t], n_docs) for t in asked}
    total = sum(weights.values())
    return sum(w for t, w in weights.items() if t in held) / total if total else 0.0


def vector_ranking(
    store: Store, embedder: Embedder, org_id: str, query: str, wanted: Any, limit: int
) -> list[tuple[str, Doc, float]]:
    """The nearest chunks of ``embedder``'s model the reader may read, with ``1 - distance``."""
    if not query.strip():
        return []
    if not callable(getattr(store, "find_nearest", None)):
        raise ConfigError(f"{type(store).__name__} has no vector search (find_nearest)")
    vector = embedder.embed([query], kind="query")[0]
    found = cast(VectorSearch, store).find_nearest(
        chunks_path(org_id),
        field="embedding",
        vector=vector,
        limit=max(limit, 1) * VECTOR_FACTOR,
        where=[("model", "==", embedder.name)],
    )
    return [(cid, doc, 1.0 - distance) for cid, doc, distance in found if wanted(doc)]


def fuse(
    keyword: list[tuple[str, Doc, float]],
    vector: list[tuple[str, Doc, float]],
    limit: int,
    *,
    vector_weight: float = SEED_VECTOR_WEIGHT,
    tagged: list[tuple[str, Doc, float]] | None = None,
) -> list[Hit]:
    """Reciprocal rank fusion of the rankings, per source (its best chunk of each list):
    keyword and vector, and the chunks carrying a tag the query names (``tag_signal``, weight
    ``TAG_WEIGHT``: a vote beside the two, never a hit on its own above an agreement of both)."""
    sides: dict[tuple[str, str], dict[str, Any]] = {}
    for side, ranking in (("keyword", keyword), ("vector", vector), ("tag", tagged or [])):
        rank = 0
        for cid, doc, value in ranking:
            key = (str(doc.get("source_kind")), str(doc.get("source_id")))
            entry = sides.setdefault(key, {"cid": cid, "doc": doc})
            if f"{side}_rank" in entry:
                continue  # the source's best chunk of this list already counted
            rank += 1
            entry[f"{side}_rank"], entry[f"{side}_score"] = rank, value
    hits = []
    for (kind, source_id), e in sides.items():
        kr, vr = e.get("keyword_rank"), e.get("vector_rank")
        tr = e.get("tag_rank")
        score = (
            ((1 - vector_weight) / (RRF_K + kr) if kr else 0.0)
            + (vector_weight / (RRF_K + vr) if vr else 0.0)
            + (TAG_WEIGHT / (RRF_K + tr) if tr else 0.0)
        )
        doc = e["doc"]
        hits.append(
            Hit(
                chunk_id=e["cid"],
                source_kind=kind,
                source_id=source_id,
                text=str(doc.get("text", "")),
                title=doc.get("title"),
                score=score,
                keyword_score=e.get("keyword_score"),
                vector_score=e.get("vector_score"),
                keyword_rank=kr,
                vector_rank=vr,
                tags=tuple(doc.get("tags") or ()),
                happened_at=doc.get("happened_at"),
                tag_rank=tr,
                owner=doc.get("user_id"),
                sealed=doc.get("sealed") if isinstance(doc.get("sealed"), dict) else None,
            )
        )
    hits.sort(key=lambda h: (-h.score, h.source_kind, h.source_id))
    return hits[: max(limit, 0)]
