"""Recall@5 of the memory search: keyword, vector and hybrid, on a labelled Japanese set.

``infra/bench/recall_set.json``: a fictional company's CEO teachings, knowledge documents and
values, and queries that name an exact term or paraphrase, each with the ids of the documents
that answer it. Every document is indexed with ``shared_lib.memory.index`` (chunks, terms,
embeddings) into an in-memory store, then each query is searched three ways with
``shared_lib.memory.search`` (``mode`` keyword, vector, hybrid). recall@5 of a query is the
share of its relevant documents among the first five hits; the figure is the mean over the
queries (and per query type).

The embedder is the one the composition root builds (``rt.embedder``) for ``--embedder``
(default: the settings' ``CHARTER_EMBEDDER``, ``local`` unless set). With ``none`` only the
keyword figure is printed. Exit 1 when the hybrid recall is below either side's.

    python -m infra.bench.recall [--embedder local|vertex|none] [--k 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.cli.runner import progress
from shared_lib.memory.index import index_text
from shared_lib.memory.search import Reader, fusion_weight, search
from shared_lib.ports import Embedder

SET = Path(__file__).with_name("recall_set.json")
MODES = ("keyword", "vector", "hybrid")
NOW = datetime(2026, 11, 25, tzinfo=UTC)
ORG = "bench"


def load_set(path: Path = SET) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def measure(
    labelled: dict[str, Any], embedder: Embedder | None, *, k: int = 5, vector_weight: float | None = None
) -> dict[str, Any]:
    """recall@k per mode (overall and per query type), with each query's misses."""
    store = MemoryStore()
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
        "hybrid_not_worse": recalls.get("hybrid", recalls["keyword"]) >= max(recalls.values()),
        "documents": len(labelled["documents"]),
        "queries": len(labelled["queries"]),
        "modes": figures,
    }


def render(result: dict[str, Any]) -> str:
    k = result["k"]
    lines = [
        f"recall@{k} over {result['queries']} queries, {result['documents']} documents, "
        f"embedder {result['embedder'] or 'none'} (fusion: vector {result['vector_weight']:.2f}, "
        f"keyword {1 - result['vector_weight']:.2f})",
        f"{'mode':<8} {'all':>6}  by type",
    ]
    for mode, f in result["modes"].items():
        types = "  ".join(f"{t} {v:.3f}" for t, v in f["by_type"].items())
        lines.append(f"{mode:<8} {f['recall']:>6.3f}  {types}")
    if not result["hybrid_not_worse"]:
        lines.append("hybrid is worse than one side alone")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="recall@5 of the memory search: keyword, vector, hybrid")
    ap.add_argument("--embedder", choices=("local", "vertex", "none"), help="default: the settings'")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--vector-weight", type=float, help="the fusion's vector weight (default: the model's)")
    ap.add_argument("--set", type=Path, default=SET, dest="labelled")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from shared_lib.adapters.inproc_bus import InProcessBus
    from shared_lib.settings import Settings
    from shared_lib.wiring.composition import build_runtime

    values = {"embedder": args.embedder} if args.embedder else {}
    rt = build_runtime(
        settings=Settings.from_env(**values), store=MemoryStore(), llm=None, bus=InProcessBus(), notifiers=[]
    )
    progress(f"indexing with {rt.embedder.name if rt.embedder else 'no embedder'} …")
    result = measure(load_set(args.labelled), rt.embedder, k=args.k, vector_weight=args.vector_weight)
    sys.stdout.write((json.dumps(result, ensure_ascii=False) if args.json else render(result)) + "\n")
    return 0 if result["hybrid_not_worse"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
