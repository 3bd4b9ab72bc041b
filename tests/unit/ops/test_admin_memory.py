"""The dashboard's memory view (shared_lib/admin/memory_api.py): list, add and delete with the
operator token AND a named person's level (seed 000), search as a person reads. The runtime
has the tests' n-gram embedder (tests/unit/memory/memory_fakes.py)."""

from __future__ import annotations

from ops_fakes import ORG, make_runtime

from shared_lib.admin.app import create_app
from shared_lib.admin.auth import TokenPolicy
from tests.unit.memory.memory_fakes import NgramEmbedder

TOKEN = "operator-token-0123456789"
AUTH = {"X-Charter-Admin-Token": TOKEN}


def client():
    rt = make_runtime(embedder=NgramEmbedder())
    app = create_app(rt, policy=TokenPolicy.from_env("test", {"CHARTER_ADMIN_TOKEN": TOKEN}))
    return rt, app.test_client()


def test_the_ceo_adds_a_teaching_found_by_search_and_listed_then_deleted():
    _, c = client()
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
    _, c = client()
    r = c.post(
        "/api/memory", json={"org": ORG, "kind": "value", "text": "誠実。", "by": "u-suzuki"}, headers=AUTH
    )
    assert r.status_code == 403 and r.get_json()["error"] == "level"
    assert c.get(f"/api/memory?org={ORG}", headers=AUTH).get_json()["items"] == []


def test_writes_need_the_token_and_a_named_person():
    _, c = client()
    body = {"org": ORG, "kind": "knowledge", "text": "手順。", "by": "u-yamada"}
    assert c.post("/api/memory", json=body).status_code in (401, 403)
    assert c.post("/api/memory", json={**body, "by": ""}, headers=AUTH).status_code == 400
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
