"""The recall@5 benchmark (infra/bench/recall.py): its labelled set is sound and it measures the
three modes. The figures of the real local model are in infra/bench/README.md; here the tests'
n-gram embedder stands in (tests/unit/memory/memory_fakes.py), so no figure is asserted but
what the n-gram model cannot change: the keyword side finds every exact term."""

import re

from infra.bench.recall import SETS, load_set, measure, render
from shared_lib.memory.keyword import terms
from tests.unit.memory.memory_fakes import NgramEmbedder

OFFICE = load_set(SETS[1])
HELD_OUT = load_set(SETS[2])


def _content(text: str) -> set[str]:
    """Content terms: kanji, katakana and latin terms of the keyword index (hiragana bigrams are particles)."""
    return {t for t in terms(text) if not re.fullmatch(r"[\u3041-\u309f]+", t)}


def _shared_by_paraphrases(labelled: dict) -> dict[str, list[str]]:
    docs = {d["id"]: _content(f"{d['title']}\n{d['text']}") for d in labelled["documents"]}
    return {
        q["query"]: sorted(_content(q["query"]) & docs[r])
        for q in labelled["queries"]
        if q["type"] == "paraphrase"
        for r in q["relevant"]
        if _content(q["query"]) & docs[r]
    }


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


def test_the_office_set_is_large_half_paraphrases_with_distractors():
    ids = {d["id"] for d in OFFICE["documents"]}
    assert len(ids) == len(OFFICE["documents"]) >= 100
    queries = OFFICE["queries"]
    assert len(queries) >= 150
    assert all(q["relevant"] and set(q["relevant"]) <= ids for q in queries)
    paraphrases = [q for q in queries if q["type"] == "paraphrase"]
    assert len(paraphrases) * 2 >= len(queries)
    # distractors (dx*): near-topic documents (another question on the same subject), each with its own query
    assert len(ids - {i for q in queries for i in q["relevant"]}) == 0  # each has its own exact query
    assert sum(1 for i in ids if i.startswith("dx")) >= 20


def test_a_paraphrase_shares_no_content_word_with_its_answer():
    assert _shared_by_paraphrases(OFFICE) == {}
    assert _shared_by_paraphrases(HELD_OUT) == {}


def test_the_held_out_set_is_of_the_same_kinds():
    ids = {d["id"] for d in HELD_OUT["documents"]}
    queries = HELD_OUT["queries"]
    assert len(ids) == len(HELD_OUT["documents"]) >= 30 and len(queries) >= 40
    assert all(q["relevant"] and set(q["relevant"]) <= ids for q in queries)
    assert {q["type"] for q in queries} == {"exact", "paraphrase"}
    assert sum(q["type"] == "paraphrase" for q in queries) >= 30
    assert ids == {i for q in queries if q["type"] == "exact" for i in q["relevant"]}  # one exact each
    assert sum(1 for i in ids if i.startswith("hx")) >= 8  # near-topic distractors
    assert not ids & {d["id"] for d in OFFICE["documents"]}  # another company's documents


def test_the_title_weight_is_reported_and_given_back():
    from shared_lib.memory import index

    kept = index.TITLE_WEIGHT
    result = measure(load_set(), NgramEmbedder(), title_weight=0.5)
    assert result["title_weight"] == 0.5 and kept == index.TITLE_WEIGHT
    assert "title 0.50" in render(result)
