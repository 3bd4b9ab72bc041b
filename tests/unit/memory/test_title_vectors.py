"""A chunk's vector leans toward its source's title (``memory.index.TITLE_WEIGHT``): the title
names the subject in a few words that the chunk's sentences may never say. The embedder is
``memory_fakes.NgramEmbedder`` (hashed character n-grams): it holds the arithmetic and the
plumbing; what the lean is worth with the real model is measured by ``infra/bench/recall.py``."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.memory import index
from shared_lib.memory.index import chunks_path, index_text
from shared_lib.memory.reembed import reembed
from shared_lib.memory.search import Reader, search
from shared_lib.ports import Doc
from tests.unit.memory.memory_fakes import NgramEmbedder

NOW = datetime(2026, 11, 25, 9, 0, tzinfo=UTC)
ORG = "acme"
ANYONE = Reader(None, 1)
BONUS_TITLE = "昇給・賞与"
BONUS_TEXT = "年に一度、4月に等級ごとの見直しがあります。一時金は6月と12月、月末の25日に振り込みます💴"
OTHERS = {
    "k-stock": ("非常用備蓄", "各フロアに3日分の水と食料を置いています。入れ替えは9月の防災の日です。"),
    "k-pay": ("給与明細", "明細は毎月25日にポータルで見られます。紙の明細は希望者だけに郵送します。"),
    "k-move": ("住所変更の届出", "引っ越したら2週間以内にポータルから新しい住所を届け出てください。"),
}


def _cos(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def _chunks(store: MemoryStore, source_id: str) -> list[Doc]:
    return [doc for _, doc in store.query(chunks_path(ORG)) if doc["source_id"] == source_id]


def _index_all(store: MemoryStore, embedder: NgramEmbedder) -> None:
    index_text(store, embedder, ORG, source_kind="knowledge", source_id="k-bonus", text=BONUS_TEXT,
               title=BONUS_TITLE, now=NOW)  # fmt: skip
    for sid, (title, text) in OTHERS.items():
        index_text(
            store, embedder, ORG, source_kind="knowledge", source_id=sid, text=text, title=title, now=NOW
        )


def test_a_titled_chunk_leans_toward_its_title_and_stays_its_texts():
    store, emb = MemoryStore(), NgramEmbedder()
    # GIVEN a knowledge document whose text never names its subject, and a memory without a title
    index_text(store, emb, ORG, source_kind="knowledge", source_id="k-bonus", text=BONUS_TEXT,
               title=BONUS_TITLE, now=NOW)  # fmt: skip
    index_text(
        store, emb, ORG, source_kind="memory", source_id="m1", text="田中さんは朝型、連絡は9時前が◎", now=NOW
    )
    text_vec, title_vec = emb.embed([BONUS_TEXT, BONUS_TITLE], kind="document")
    # THEN the titled chunk's vector is of unit length, nearer its title than its text alone is,
    # still nearest its own text, and it says the weight it was made with
    (bonus,) = _chunks(store, "k-bonus")
    vec = tuple(bonus["embedding"])
    assert math.isclose(_cos(vec, vec), 1.0, rel_tol=1e-9)
    assert _cos(vec, title_vec) > _cos(text_vec, title_vec)
    assert _cos(vec, text_vec) > _cos(vec, title_vec)
    assert bonus["title_weight"] == index.TITLE_WEIGHT > 0
    # AND the untitled memory's vector is its text's, with no weight stored
    (memory,) = _chunks(store, "m1")
    assert tuple(memory["embedding"]) == tuple(emb.embed([memory["text"]], kind="document")[0])
    assert "title_weight" not in memory


def test_a_question_in_the_titles_words_finds_the_document_by_vector(monkeypatch: pytest.MonkeyPatch):
    query = "昇給・賞与について教えて"

    def first_hit() -> str:
        store = MemoryStore()
        _index_all(store, NgramEmbedder())
        hits = search(store, NgramEmbedder(), ORG, query, reader=ANYONE, mode="vector", limit=1)
        return hits[0].source_id

    # GIVEN the same documents indexed without the title's lean: the text alone loses the question
    monkeypatch.setattr(index, "TITLE_WEIGHT", 0.0)
    assert first_hit() != "k-bonus"
    # WHEN indexed as the index does
    monkeypatch.undo()
    # THEN the vector search finds the document the title names first
    assert first_hit() == "k-bonus"


def test_reindex_reembeds_a_titled_chunk_made_before_titles_leaned_vectors(monkeypatch: pytest.MonkeyPatch):
    store, emb = MemoryStore(), NgramEmbedder()
    # GIVEN chunks embedded before the lean (their text's vector, no weight stored)
    monkeypatch.setattr(index, "TITLE_WEIGHT", 0.0)
    _index_all(store, emb)
    index_text(store, emb, ORG, source_kind="memory", source_id="m1", text="会議は火曜10時〜🗓", now=NOW)
    monkeypatch.undo()
    assert not any("title_weight" in doc for _, doc in store.query(chunks_path(ORG)))
    # WHEN re-embedded with the same model
    done = reembed(store, emb, ORG)
    # THEN the four titled chunks get the vector indexing them now would give, the untitled one is current
    assert (done.embedded, done.current, done.changed) == (4, 1, 0)
    fresh = MemoryStore()
    _index_all(fresh, NgramEmbedder())
    want = {doc["source_id"]: tuple(doc["embedding"]) for _, doc in fresh.query(chunks_path(ORG))}
    got = {doc["source_id"]: tuple(doc["embedding"]) for _, doc in store.query(chunks_path(ORG))}
    assert all(got[sid] == vec for sid, vec in want.items())
    # AND a second run does nothing
    again = NgramEmbedder()
    assert reembed(store, again, ORG).embedded == 0 and again.calls == []
