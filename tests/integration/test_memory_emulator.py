"""Teachings on the Firestore emulator (issue 20 acceptance): added by an allowed person, found
by a paraphrase (vector: FirestoreStore.find_nearest) and by an exact term (keyword: the
``terms`` array and the term statistics), never by a person of another organisation; a person
below the level cannot add one; a deleted teaching is gone from both.

The embedder is the tests' n-gram embedder (tests/unit/memory/memory_fakes.py: hashed character
n-grams), deterministic, so the paraphrase below shares characters but no keyword term with the
teaching: only the vector side can find it. The real model's quality is the benchmark's
(infra/bench/recall.py)."""

from __future__ import annotations

import pytest

from shared_lib.memory.index import chunks_path
from shared_lib.memory.ingest import NotAllowed, add_item, delete_item, list_items
from shared_lib.memory.keyword import query_terms, terms
from shared_lib.memory.search import Reader, search
from tests.unit.memory.memory_fakes import NgramEmbedder
from tests.unit.memory.test_memory_ingest import NOW

pytestmark = pytest.mark.integration

ORG, OTHER = "acme-mem", "globex-mem"
TEACHING = "深夜のメッセージ送信は禁止する。"
PARAPHRASE = "夜中にチャットを送らないで"  # shares characters, not one keyword term
EXACT = "メッセージ送信"


@pytest.fixture
def fs(firestore_store):
    for org in (ORG, OTHER):
        firestore_store.set(f"orgs/{org}/users/ceo", {"name": "社長", "level": 6})
        firestore_store.set(f"orgs/{org}/users/staff", {"name": "社員", "level": 2})
    firestore_store.set(f"orgs/{OTHER}/users/head", {"name": "部長", "level": 4})
    return firestore_store


def test_a_teaching_found_by_paraphrase_and_term_only_in_its_organisation_and_gone_when_deleted(fs):
    emb = NgramEmbedder()
    assert not set(query_terms(PARAPHRASE)) & set(terms(TEACHING))  # the premise: no shared keyword term
    # GIVEN the CEO's teaching, and a decoy knowledge document in the other organisation
    item = add_item(fs, emb, ORG, kind="teaching", text=TEACHING, title="深夜連絡", now=NOW, by="ceo")
    add_item(fs, emb, OTHER, kind="knowledge", text="深夜のメッセージ送信について", now=NOW, by="head")
    staff = Reader("staff", 2)
    # WHEN a staff member asks in other words THEN the vector side finds it
    by_vector = search(fs, emb, ORG, PARAPHRASE, reader=staff)
    assert by_vector[0].source_id == item["id"] and by_vector[0].keyword_score is None
    assert by_vector[0].vector_score is not None and by_vector[0].vector_score > 0
    # WHEN they name the exact term THEN the keyword side finds it too
    by_term = search(fs, emb, ORG, EXACT, reader=staff)
    assert by_term[0].source_id == item["id"] and by_term[0].keyword_rank == 1
    # a person of the other organisation finds only their own organisation's document
    theirs = search(fs, emb, OTHER, EXACT, reader=Reader("staff", 2))
    assert [h.source_kind for h in theirs] == ["knowledge"] and item["id"] not in {
        h.source_id for h in theirs
    }
    # WHEN it is deleted THEN neither side finds it, and no chunk is left
    delete_item(fs, ORG, item["id"], by="ceo")
    assert search(fs, emb, ORG, PARAPHRASE, reader=staff) == []
    assert search(fs, emb, ORG, EXACT, reader=staff) == []
    assert fs.query(chunks_path(ORG)) == [] and list_items(fs, ORG) == []


def test_a_person_below_the_level_cannot_add_a_teaching(fs):
    with pytest.raises(NotAllowed):
        add_item(fs, NgramEmbedder(), ORG, kind="teaching", text="勝手な教え。", now=NOW, by="staff")
    assert list_items(fs, ORG, "teaching") == [] and fs.query(chunks_path(ORG)) == []
