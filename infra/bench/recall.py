"""Recall@5 of the memory search: keyword, vector and hybrid, on a labelled Japanese set.

Three labelled sets: ``infra/bench/recall_set.json`` (30 documents, 42 queries: a fictional
company's CEO teachings, knowledge documents and values), ``recall_set_office.json`` (112
office documents with near-topic distractors, 225 queries, half of them paraphrases sharing no
content word with their answer; the set the weights are chosen on) and
``recall_set_heldout.json`` (38 documents of another company, 70 queries of the same kinds,
held out: nothing is tuned on it); queries name an exact term or paraphrase, each with the ids
of the documents that answer it. Every document is indexed with ``shared_lib.memory.index`` (chunks, terms,
embeddings) into an in-memory store, then each query is searched three ways with
``shared_lib.memory.search`` (``mode`` keyword, vector, hybrid). recall@5 of a query is the
share of its relevant documents among the first five hits; the figure is the mean over the
queries (and per query type).

The embedder is the one the composition root builds (``rt.embedder``) for ``--embedder``
(default: the settings' ``CHARTER_EMBEDDER``, ``local`` unless set). With ``none`` only the
keyword figure is printed. Beside the recall: the model's load time (its first embedding), the
mean time to embed one query, and the process's resident memory (RSS) after the run. Exit 1
when the hybrid recall is below either side's on a set.

``--title-weight`` overrides how far a chunk's vector leans toward its source's title
(``memory.index.TITLE_WEIGHT``), to compare weights.

    python -m infra.bench.recall [--embedder local|vertex|none] [--k 5] [--set FILE]
        [--vector-weight W] [--title-weight T] [--json]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.cli.runner import progress
from shared_lib.memory import index
from shared_lib.memory.index import index_text
from shared_lib.memory.search import Reader, fusion_weight, search
from shared_lib.ports import Embedder

SET = Path(__file__).with_name("recall_set.json")
SETS = (
    SET,
    Path(__file__).with_name("recall_set_office.json"),
    Path(__file__).with_name("recall_set_heldout.json"),
)
MODES = ("keyword", "vector", "hybrid")
NOW = datetime(2026, 11, 25, tzinfo=UTC)
ORG = "bench"


def load_set(path: Path = SET) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def measure(
    labelled: dict[str, Any],
    embedder: Embedder | None,
    *,
    k: int = 5,
    vector_weight: float | None = None,
    title_weight: float | None = None,
) -> dict[str, Any]:
    """recall@k per mode (overall and per query type), with each query's misses."""
    store = MemoryStore()
    kept = index.TITLE_WEIGHT
    index.TITLE_WEIGHT = kept if title_weight is None else title_weight
    try:
        for d in labelled["documents"]:
            index_text(
                store,
                embedder,
                ORG,
                source_kind=d["kind"],
                source_id=d["id"],
                text=d["text"],
                title=d["title"],
                now=NOW,
            )
    finally:
        index.TITLE_WEIGHT = kept
    reader = Reader(None, 6)
    modes = MODES if embedder is not None else ("keyword",)
    figures: dict[str, Any] = {}
    for mode in modes:
        per_type: dict[str, list[float]] = {}
        misses = []
        for q in labelled["queries"]:
            hits = search(
                store,
                embedder,
                ORG,
                q["query"],
                reader=reader,
                limit=k,
                mode=mode,
                vector_weight=vector_weight,
            )
            found = {h.source_id for h in hits}
            recall = len(found & set(q["relevant"])) / len(q["relevant"])
            per_type.setdefault(q["type"], []).append(recall)
            if recall < 1:
                misses.append(
                    {"query": q["query"], "relevant": q["relevant"], "got": [h.source_id for h in hits]}
                )
        every = [r for rs in per_type.values() for r in rs]
        figures[mode] = {
            "recall": round(sum(every) / len(every), 4),
            "by_type": {t: round(sum(rs) / len(rs), 4) for t, rs in sorted(per_type.items())},
            "misses": misses,
        }
    recalls = {mode: f["recall"] for mode, f in figures.items()}
    return {
        "k": k,
        "embedder": embedder.name if embedder else None,
        "vector_weight": vector_weight if vector_weight is not None else fusion_weight(embedder),
        "title_weight": kept if title_weight is None else title_weight,
        "hybrid_not_worse": recalls.get("hybrid", recalls["keyword"]) >= max(recalls.values()),
        "documents": len(labelled["documents"]),
        "queries": len(labelled["queries"]),
        "modes": figures,
    }


def costs(embedder: Embedder, labelled: dict[str, Any]) -> dict[str, float]:
    """Load time (the first embedding, which loads the model), mean ms to embed one query (each
    query of the set once, one at a time as the search does) and resident memory."""
    started = time.perf_counter()
    embedder.embed(["読み込み"], kind="query")
    load = time.perf_counter() - started
    queries = [q["query"] for q in labelled["queries"]]
    started = time.perf_counter()
    for q in queries:
        embedder.embed([q], kind="query")
    per_query = (time.perf_counter() - started) / max(len(queries), 1)
    return {"load_s": round(load, 3), "ms_per_query": round(per_query * 1000, 1), **rss_mb()}


def rss_mb() -> dict[str, float]:
    """The process's resident memory now and at its peak, in MB (Linux: /proc/self/status)."""
    now = 0.0
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                now = int(line.split()[1]) / 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"rss_mb": round(now, 1), "peak_rss_mb": round(peak, 1)}


def render(result: dict[str, Any]) -> str:
    k = result["k"]
    lines = [
        f"{result.get('set', 'set')}: recall@{k} over {result['queries']} queries, {result['documents']} documents, "
        f"embedder {result['embedder'] or 'none'} (fusion: vector {result['vector_weight']:.2f}, "
        f"keyword {1 - result['vector_weight']:.2f}; title {result['title_weight']:.2f})",
        f"{'mode':<8} {'all':>6}  by type",
    ]
    for mode, f in result["modes"].items():
        types = "  ".join(f"{t} {v:.3f}" for t, v in f["by_type"].items())
        lines.append(f"{mode:<8} {f['recall']:>6.3f}  {types}")
    if not result["hybrid_not_worse"]:
        lines.append("hybrid is worse than one side alone")
    return "\n".join(lines)


def render_costs(c: dict[str, float]) -> str:
    return (
        f"load {c['load_s']:.2f} s, {c['ms_per_query']:.1f} ms per query, "
        f"RSS {c['rss_mb']:.0f} MB (peak {c['peak_rss_mb']:.0f} MB)"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="recall@5 of the memory search: keyword, vector, hybrid")
    ap.add_argument("--embedder", choices=("local", "vertex", "none"), help="default: the settings'")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--vector-weight", type=float, help="the fusion's vector weight (default: the model's)")
    ap.add_argument("--title-weight", type=float, help="how far a chunk's vector leans to its title")
    ap.add_argument("--set", type=Path, action="append", dest="labelled", help="default: the three sets")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from shared_lib.adapters.inproc_bus import InProcessBus
    from shared_lib.settings import Settings
    from shared_lib.wiring.composition import build_runtime

    values = {"embedder": args.embedder} if args.embedder else {}
    rt = build_runtime(
        settings=Settings.from_env(**values), store=MemoryStore(), llm=None, bus=InProcessBus(), notifiers=[]
    )
    sets = [(path, load_set(path)) for path in args.labelled or SETS]
    cost = costs(rt.embedder, sets[0][1]) if rt.embedder else None
    results = []
    for path, labelled in sets:
        progress(f"{path.name}: indexing with {rt.embedder.name if rt.embedder else 'no embedder'} …")
        result = measure(
            labelled, rt.embedder, k=args.k, vector_weight=args.vector_weight, title_weight=args.title_weight
        )
        results.append({"set": path.name, **result})
    if cost:
        cost = {**cost, **{k: v for k, v in rss_mb().items() if k == "peak_rss_mb"}}
    if args.json:
        sys.stdout.write(json.dumps({"sets": results, "costs": cost}, ensure_ascii=False) + "\n")
    else:
        text = [render(r) for r in results] + ([render_costs(cost)] if cost else [])
        sys.stdout.write("\n".join(text) + "\n")
    return 0 if all(r["hybrid_not_worse"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
