"""Re-embed an organisation's chunks with the current model (``charter memory reindex``).

Every vector lives in a chunk of ``memory_chunks`` beside the name of the model that made it
(``model``; the search reads only the current model's). After a model change each chunk whose
``model`` is not the current one gets a new vector of its own text: the text the index embedded
(masked, cut) leaning toward its title as the index's ``TITLE_WEIGHT`` says, so the vector is
the one indexing it again would give, for every kind of source (teachings, knowledge, values,
memories, episodes) and without touching the keyword statistics. A chunk with a title whose
vector was made with another weight (or none, before titles leaned vectors) is re-embedded too.

Resumable and idempotent by construction: a chunk already of the current model is skipped, so a
run that was interrupted (a crash, Ctrl-C, a timeout) is simply run again and does the rest, and
a second run does nothing. Each batch is written in one transaction that reads the chunks again
first: a chunk re-indexed meanwhile (its text changed, or it is gone) is left as the index wrote it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from shared_lib.memory.index import TITLE_WEIGHT, chunk_path, chunks_path, titled_vectors, vector_fields
from shared_lib.ports import Doc, Embedder, Store, Transaction, Vector

BATCH = 32  # chunks embedded and written together

Progress = Callable[[int, int], None]  # (chunks done, chunks to do)


@dataclass(frozen=True)
class Reembedded:
    current: int  # chunks already of the model when the run started
    embedded: int  # chunks given a new vector
    changed: int  # chunks re-indexed or removed during the run (left as they were written)


def stale(doc: Doc, model: str, dimensions: int | None = None) -> bool:
    """Not a vector of ``model`` (of ``dimensions`` when given), or made with another title
    weight than the index's now."""
    titled = bool(str(doc.get("title") or "").strip() and TITLE_WEIGHT)
    weight = doc.get("title_weight") if titled else None
    vector = doc.get("embedding")
    return (
        doc.get("model") != model
        or not vector
        or (dimensions is not None and len(vector) != dimensions)
        or weight != (TITLE_WEIGHT if titled else None)
    )


def reembed(
    store: Store, embedder: Embedder, org_id: str, *, progress: Progress | None = None, batch: int = BATCH
) -> Reembedded:
    """Give every chunk of the organisation not embedded by ``embedder``'s model a vector of it."""
    rows = store.query(chunks_path(org_id))
    todo = sorted(
        (cid, str(doc.get("text") or ""), doc.get("title"))
        for cid, doc in rows
        if stale(doc, embedder.name, embedder.dimensions)
    )
    current = len(rows) - len(todo)
    done = changed = 0
    if progress:
        progress(0, len(todo))
    for start in range(0, len(todo), batch):
        part = todo[start : start + batch]
        vectors = titled_vectors(embedder, [(text, title) for _, text, title in part], cached=False)
        changed += store.run_transaction(_writer(org_id, embedder, part, vectors))
        done += len(part)
        if progress:
            progress(done, len(todo))
    return Reembedded(current=current, embedded=done - changed, changed=changed)


def _writer(
    org_id: str, embedder: Embedder, part: list[tuple[str, str, str | None]], vectors: list[Vector]
) -> Callable[[Transaction], int]:
    def write(txn: Transaction) -> int:
        paths = [chunk_path(org_id, cid) for cid, _, _ in part]
        docs = [txn.get(p) for p in paths]  # reads first
        skipped = 0
        for path, doc, (_, text, title), vector in zip(paths, docs, part, vectors, strict=True):
            if doc is None or str(doc.get("text") or "") != text or doc.get("title") != title:
                skipped += 1
                continue
            txn.set(path, vector_fields(embedder, vector, title), merge=True)
        return skipped

    return write
