"""The memory index's consistency check and repair (seed 001 §17.3, ``charter memory check``):
an index written by the product has nothing to report; each kind of break someone or something
can make (a chunk deleted, a source document gone, an orphan chunk, a vector lost or of another
size or model, statistics or postings out of step, a fact's chunk lost, an expired memory) is
found as what it is, repaired, and a second repair changes nothing more."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.memory import consistency
from shared_lib.memory.index import chunk_path, chunks_path, df_name, index_text, source_path, stats_path
from shared_lib.memory.ingest import add_item
from shared_lib.memory.keyword import bucket
from shared_lib.memory.search import Reader, search
from shared_lib.ports import Vector
from tests.unit.memory.memory_fakes import NgramEmbedder

NOW = datetime(2026, 11, 25, 9, 0, tzinfo=UTC)
ORG = "acme"
EMBEDDER = NgramEmbedder()
KNOWLEDGE = (
    "経費精算は毎月25日締め。領収書はスマホで撮ってアップロードしてください📱 "
    "立替が３万円を超えるときは事前に部長へ相談のこと。"
)
TEACHING = "お客様からの問い合わせには必ず当日中に一次回答すること！（社長より）"
LONG = "出張旅費規程を改定し、日当を見直しました。新幹線はグリーン車不可です。" * 60


@pytest.fixture
def store() -> MemoryStore:
    # GIVEN an organisation whose index the product wrote: knowledge, a teaching, a long
    # document of several chunks, a person's memory and a fact kept by compaction
    s = MemoryStore()
    add_item(s, EMBEDDER, ORG, kind="knowledge", text=KNOWLEDGE, now=NOW, title="経費精算のルール")
    add_item(s, EMBEDDER, ORG, kind="teaching", text=TEACHING, now=NOW)
    add_item(s, EMBEDDER, ORG, kind="knowledge", text=LONG, now=NOW, title="出張旅費規程")
    s.set(
        f"orgs/{ORG}/memories/m-1",
        {"content": "佐藤さんは火曜の午後は在宅勤務", "user_id": "u-sato", "subject": "佐藤さん"},
    )
    index_text(
        s, EMBEDDER, ORG, source_kind="memory", source_id="m-1", text="佐藤さんは火曜の午後は在宅勤務",
        now=NOW, user_id="u-sato", title="佐藤さん",
    )  # fmt: skip
    index_text(
        s, EMBEDDER, ORG, source_kind="fact", source_id="f-1", text="見積は来週金曜までに先方へ送る、で決定。" * 90,
        now=NOW, user_id="u-sato",
    )  # fmt: skip
    return s


def manifest(store: MemoryStore, kind: str, sid: str) -> dict:
    return store.get(source_path(ORG, kind, sid)) or {}


def item_id(store: MemoryStore, kind: str, text_part: str) -> str:
    coll = {"knowledge": "knowledge", "teaching": "teachings"}[kind]
    return next(i for i, d in store.query(f"orgs/{ORG}/{coll}") if text_part in d["content"])


def problems(store: MemoryStore) -> dict[str, int]:
    return consistency.check(store, EMBEDDER, ORG).counts()


def repaired(store: MemoryStore) -> consistency.Repaired:
    return consistency.repair(store, EMBEDDER, ORG, consistency.check(store, EMBEDDER, ORG), now=NOW)


def found(store: MemoryStore, query: str) -> list[str]:
    return [h.source_id for h in search(store, EMBEDDER, ORG, query, reader=Reader("u-sato", 6))]


def test_an_index_the_product_wrote_has_nothing_to_report(store: MemoryStore) -> None:
    # WHEN the whole organisation is checked THEN nothing is found, every source and chunk counted
    report = consistency.check(store, EMBEDDER, ORG)
    assert report.findings == []
    assert report.sources == 5 and report.chunks == len(store.query(chunks_path(ORG))) > 5
    # AND a repair of nothing writes nothing
    assert consistency.repair(store, EMBEDDER, ORG, report, now=NOW).statistics == "unchanged"


def test_a_deleted_chunk_is_found_and_its_source_indexed_again_from_its_document(store: MemoryStore) -> None:
    kid = item_id(store, "knowledge", "経費精算")
    (cid,) = manifest(store, "knowledge", kid)["chunk_ids"]
    # GIVEN the expense rule's only chunk deleted by hand: the search cannot find it
    store.delete(chunk_path(ORG, cid))
    assert kid not in found(store, "経費精算の締め日")
    # WHEN checked THEN the missing chunk is named with its source, and the counts are off too
    report = consistency.check(store, EMBEDDER, ORG)
    assert [
        (f.problem, f.source_id, f.chunk_id) for f in report.findings if f.problem == "chunk_missing"
    ] == [("chunk_missing", kid, cid)]
    assert {"totals", "postings"} <= set(report.counts())
    # WHEN repaired THEN the source is indexed again, found again, and the check is clean
    done = consistency.repair(store, EMBEDDER, ORG, report, now=NOW)
    assert done.reindexed_sources == 1
    assert kid in found(store, "経費精算の締め日")
    assert problems(store) == {}
    # AND a second repair changes nothing
    assert repaired(store) == consistency.Repaired()


def test_a_source_whose_document_is_gone_is_removed_from_the_index(store: MemoryStore) -> None:
    tid = item_id(store, "teaching", "一次回答")
    # GIVEN the teaching's document deleted without its chunks (a hand edit on the console)
    store.delete(f"orgs/{ORG}/teachings/{tid}")
    assert tid in found(store, "問い合わせ 当日中")
    # WHEN checked THEN it is a gone source; repaired, its chunks no longer answer
    assert problems(store) == {"source_gone": 1}
    assert repaired(store).removed_sources == 1
    assert tid not in found(store, "問い合わせ 当日中")
    assert problems(store) == {}


def test_an_orphan_chunk_is_deleted(store: MemoryStore) -> None:
    # GIVEN a chunk no manifest lists (left by a restore of one collection), counted nowhere
    kid = item_id(store, "knowledge", "経費精算")
    (cid,) = manifest(store, "knowledge", kid)["chunk_ids"]
    stray = dict(store.get(chunk_path(ORG, cid)) or {}, source_id="k-old-version")
    store.set(chunk_path(ORG, "0123456789abcdef0123-000"), stray)
    # WHEN checked THEN the orphan is named, and it disagrees with the statistics
    report = consistency.check(store, EMBEDDER, ORG)
    assert report.counts()["orphan_chunk"] == 1 and "totals" in report.counts()
    # WHEN repaired THEN it is deleted, and the statistics (which never counted it) agree again
    done = consistency.repair(store, EMBEDDER, ORG, report, now=NOW)
    assert done.deleted_chunks == 1 and done.statistics == "unchanged"
    assert store.get(chunk_path(ORG, "0123456789abcdef0123-000")) is None
    assert problems(store) == {}


@pytest.mark.parametrize(
    ("broken", "problem"),
    [
        ({"embedding": None}, "no_vector"),
        ({"embedding": Vector([0.1] * 64)}, "vector_dimension"),
        ({"model": "text-embedding-old"}, "vector_model"),
    ],
)
def test_a_chunk_the_vector_search_cannot_rank_is_embedded_again(
    store: MemoryStore, broken: dict, problem: str
) -> None:
    # GIVEN one chunk of the long travel rule whose vector was lost, cut short or made by another model
    kid = item_id(store, "knowledge", "出張旅費")
    cid = manifest(store, "knowledge", kid)["chunk_ids"][1]
    store.set(chunk_path(ORG, cid), broken, merge=True)
    # WHEN checked THEN that chunk is named; repaired, it has a vector of the embedder again
    report = consistency.check(store, EMBEDDER, ORG)
    assert [(f.problem, f.chunk_id) for f in report.findings] == [(problem, cid)]
    assert consistency.repair(store, EMBEDDER, ORG, report, now=NOW).reembedded_chunks == 1
    doc = store.get(chunk_path(ORG, cid)) or {}
    assert doc["model"] == EMBEDDER.name and len(doc["embedding"]) == EMBEDDER.dimensions
    assert problems(store) == {}


def test_postings_and_counts_out_of_step_are_counted_again_from_the_chunks(store: MemoryStore) -> None:
    # GIVEN the postings table of the term 経費 deleted and the chunk count written wrong
    table = df_name(bucket(next(t for t in (store.query(chunks_path(ORG))[0][1]["terms"]))))
    store.delete(stats_path(ORG, table))
    store.set(stats_path(ORG, "totals"), {"chunks": 3}, merge=True)
    # WHEN checked THEN both are found, the table by name
    report = consistency.check(store, EMBEDDER, ORG)
    assert report.counts() == {"postings": 1, "totals": 1}
    assert table in next(f.detail for f in report.findings if f.problem == "postings")
    # WHEN repaired THEN they agree with the chunks again
    assert consistency.repair(store, EMBEDDER, ORG, report, now=NOW).statistics == "rewritten"
    assert problems(store) == {}


def test_a_fact_that_lost_a_chunk_keeps_the_chunks_it_has(store: MemoryStore) -> None:
    # GIVEN a fact compaction kept (it has no document to index it from) that lost a chunk
    ids = manifest(store, "fact", "f-1")["chunk_ids"]
    assert len(ids) > 1
    store.delete(chunk_path(ORG, ids[0]))
    # WHEN checked and repaired THEN its manifest names the chunks still there, nothing invented
    assert problems(store)["chunk_missing"] == 1
    assert repaired(store).trimmed_sources == 1
    assert manifest(store, "fact", "f-1")["chunk_ids"] == ids[1:]
    assert problems(store) == {}


def test_an_expired_memory_whose_chunks_went_with_it_is_quietly_removed(store: MemoryStore) -> None:
    # GIVEN Firestore's TTL deleted the memory and its chunks, but not its manifest
    for cid in manifest(store, "memory", "m-1")["chunk_ids"]:
        store.delete(chunk_path(ORG, cid))
    store.delete(f"orgs/{ORG}/memories/m-1")
    # WHEN checked THEN it is an expired source (no alert is due for it), repaired away
    report = consistency.check(store, EMBEDDER, ORG)
    assert report.counts()["expired"] == 1 and "expired" in consistency.QUIET
    consistency.repair(store, EMBEDDER, ORG, report, now=NOW + timedelta(days=1))
    assert store.get(source_path(ORG, "memory", "m-1")) is None
    assert problems(store) == {}


def test_a_source_written_again_after_the_check_is_not_removed_by_its_repair(store: MemoryStore) -> None:
    tid = item_id(store, "teaching", "一次回答")
    kept = store.get(f"orgs/{ORG}/teachings/{tid}")
    # GIVEN a check that found the teaching's document gone
    store.delete(f"orgs/{ORG}/teachings/{tid}")
    report = consistency.check(store, EMBEDDER, ORG)
    # WHEN the CEO adds the same teaching again before the repair runs
    store.set(f"orgs/{ORG}/teachings/{tid}", kept)
    # THEN the repair leaves it indexed, and it is found
    assert consistency.repair(store, EMBEDDER, ORG, report, now=NOW).removed_sources == 0
    assert tid in found(store, "問い合わせ 当日中") and problems(store) == {}
