"""The recall@5 benchmark (infra/bench/recall.py): its labelled set is sound and it measures the
three modes. The figures of the real local model are in infra/bench/README.md; here the tests'
n-gram embedder stands in (tests/unit/memory/memory_fakes.py), so no figure is asserted but
what the n-gram model cannot change: the keyword side finds every exact term."""

from infra.bench.recall import load_set, measure, render
from tests.unit.memory.memory_fakes import NgramEmbedder


def test_the_labelled_set_is_japanese_and_every_relevant_id_exists():
    labelled = load_set()
    ids = {d["id"] for d in labelled["documents"]}
    assert len(ids) == len(labelled["documents"]) >= 30
    assert len(labelled["queries"]) >= 40
    assert {q["type"] for q in labelled["queries"]} == {"exact", "paraphrase"}
    assert all(q["relevant"] and set(q["relevant"]) <= ids for q in labelled["queries"])
    assert {d["kind"] for d in labelled["documents"]} == {"teaching", "knowledge", "value"}


def test_measure_gives_recall_for_keyword_vector_and_hybrid():
    result = measure(load_set(), NgramEmbedder())
    assert set(result["modes"]) == {"keyword", "vector", "hybrid"}
    assert result["modes"]["keyword"]["by_type"]["exact"] == 1.0
    assert all(0 <= f["recall"] <= 1 for f in result["modes"].values())
    text = render(result)
    assert "keyword" in text and "vector" in text and "hybrid" in text and "test-ngram" in text


def test_without_an_embedder_only_the_keyword_figure():
    result = measure(load_set(), None)
    assert list(result["modes"]) == ["keyword"] and result["hybrid_not_worse"]
