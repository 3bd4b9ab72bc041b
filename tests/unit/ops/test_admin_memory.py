"""The dashboard's memory view (shared_lib/admin/memory_api.py): list, add and delete by an
operator's identity, the person it names held to its level (seed 000), search as a person
reads. The runtime has the tests' n-gram embedder (tests/unit/memory/memory_fakes.py)."""

from __future__ import annotations

from admin_fakes import as_
from admin_fakes import client as admin_client
from ops_fakes import ORG, make_runtime

from tests.unit.memory.memory_fakes import NgramEmbedder


def client():
    rt = make_runtime(embedder=NgramEmbedder())
    return rt, admin_client(rt)


def test_the_ceo_adds_a_teaching_found_by_search_and_listed_then_deleted():
    rt, c = client()
    AUTH = as_(rt, "u-kazu", ORG)
    added = c.post(
        "/api/memory",
        json={"org": ORG, "kind": "teaching", "text": "約束の時間を守る。", "by": "u-kazu"},
        headers=AUTH,
    )
    assert added.status_code == 201
    tid = added.get_json()["item"]["id"]
    listed = c.get(f"/api/memory?org={ORG}", headers=AUTH).get_json()["items"]
    assert [i["id"] for i in listed] == [tid]
    hits = c.get(f"/api/memory/search?org={ORG}&q=約束&as=u-suzuki", headers=AUTH).get_json()["hits"]
    assert hits[0]["source_id"] == tid and hits[0]["keyword_score"] > 0 and hits[0]["vector_score"] > 0
    gone = c.post("/api/memory/delete", json={"org": ORG, "id": tid, "by": "u-kazu"}, headers=AUTH)
    assert gone.status_code == 200 and gone.get_json()["deleted"]["chunks"] == 1
    assert c.get(f"/api/memory/search?org={ORG}&q=約束", headers=AUTH).get_json()["hits"] == []


def test_a_person_below_the_level_is_refused_and_nothing_is_written():
    rt, c = client()
    AUTH = as_(rt, "u-suzuki", ORG)
    r = c.post(
        "/api/memory", json={"org": ORG, "kind": "value", "text": "誠実。", "by": "u-suzuki"}, headers=AUTH
    )
    assert r.status_code == 403 and r.get_json()["error"] == "level"
    assert c.get(f"/api/memory?org={ORG}", headers=AUTH).get_json()["items"] == []


def test_writes_need_an_operator_and_are_that_persons():
    rt, c = client()
    AUTH = as_(rt, "u-yamada", ORG)
    body = {"org": ORG, "kind": "knowledge", "text": "手順。", "by": "u-yamada"}
    assert c.post("/api/memory", json=body).status_code == 401
    # a body naming someone else (the CEO) is refused: the operator is u-yamada
    named = c.post("/api/memory", json={**body, "by": "u-kazu"}, headers=AUTH)
    assert named.status_code == 403 and named.get_json()["error"] == "not_the_operator"
    assert c.get(f"/api/memory?org={ORG}", headers=AUTH).get_json()["items"] == []
    # without a by the operator's own person writes
    added = c.post("/api/memory", json={**body, "by": ""}, headers=AUTH)
    assert added.status_code == 201 and added.get_json()["item"]["created_by"] == "u-yamada"
    assert c.post("/api/memory", json={**body, "kind": "diary"}, headers=AUTH).status_code == 400
    assert (
        c.post(
            "/api/memory/delete", json={"org": ORG, "id": "K-0000000000", "by": "u-yamada"}, headers=AUTH
        ).status_code
        == 404
    )


def test_the_page_has_the_memory_view():
    _, c = client()
    page = c.get("/").data.decode()
    assert 'data-view="memory"' in page and 'id="memory-table"' in page and 'id="memory-add-form"' in page
