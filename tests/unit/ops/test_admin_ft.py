"""The dashboard's fine-tuning review (shared_lib/features/finetune/admin.py): list, show, accept, edit and
reject by an operator whose identity names a reviewer of level 6."""

from __future__ import annotations

from admin_fakes import as_
from admin_fakes import client as admin_client
from ops_fakes import make_runtime

from shared_lib.features.finetune.state.staging import candidate_path
from tests.unit.finetune import ft_fakes


def client():  # type: ignore[no-untyped-def]
    rt = make_runtime()
    for cid in ("t1", "t2", "t3"):
        ft_fakes.plant(rt.store, cid, status="pending")  # type: ignore[arg-type]
    return rt, admin_client(rt)


def test_the_ceo_reviews_candidates_from_the_dashboard():
    rt, c = client()
    AUTH = as_(rt, "u-kazu", ft_fakes.ORG)
    listed = c.get(f"/api/ft?org={ft_fakes.ORG}&status=pending", headers=AUTH).get_json()["candidates"]
    assert {x["id"] for x in listed} == {"t1", "t2", "t3"}
    assert c.get(f"/api/ft/t1?org={ft_fakes.ORG}", headers=AUTH).get_json()["candidate"]["id"] == "t1"
    body = {"org": ft_fakes.ORG, "by": "u-kazu"}
    # the reviewer's level is read from the organisation's directory: give the fakes' org its CEO
    rt.store.set(f"orgs/{ft_fakes.ORG}/users/u-kazu", {"name": "カズ", "level": 6})
    assert c.post("/api/ft/accept", json={**body, "id": "t1"}, headers=AUTH).status_code == 200
    assert (
        c.post("/api/ft/edit", json={**body, "id": "t2", "reply": "承知ウル🐺"}, headers=AUTH).status_code
        == 200
    )
    assert (
        c.post("/api/ft/reject", json={**body, "id": "t3", "reason": "違う"}, headers=AUTH).status_code == 200
    )
    statuses = {i: rt.store.get(candidate_path(ft_fakes.ORG, i))["status"] for i in ("t1", "t2", "t3")}
    assert statuses == {"t1": "accepted", "t2": "edited", "t3": "rejected"}


def test_reviews_need_an_operator_whose_person_has_the_level():
    rt, c = client()
    rt.store.set(f"orgs/{ft_fakes.ORG}/users/u-staff", {"name": "社員", "level": 2})
    rt.store.set(f"orgs/{ft_fakes.ORG}/users/u-kazu", {"name": "カズ", "level": 6})
    AUTH = as_(rt, "u-staff", ft_fakes.ORG)
    body = {"org": ft_fakes.ORG, "id": "t1", "by": "u-staff"}
    assert c.post("/api/ft/accept", json=body).status_code == 401
    # the staff member's credential naming the CEO in the body does not make it the CEO's review
    named = c.post("/api/ft/accept", json={**body, "by": "u-kazu"}, headers=AUTH)
    assert named.status_code == 403 and named.get_json()["error"] == "not_the_operator"
    refused = c.post("/api/ft/accept", json=body, headers=AUTH)
    assert refused.status_code == 403 and refused.get_json()["error"] == "level"
    # the bare operator in the body is not the credential's person either
    bare = c.post("/api/ft/accept", json={**body, "by": "operator"}, headers=AUTH)
    assert bare.status_code == 403 and bare.get_json()["error"] == "not_the_operator"
    # a credential whose person is no longer in the organisation's directory reviews nothing
    ghost = as_(rt, "u-left-the-company", ft_fakes.ORG)
    stranger = c.post("/api/ft/accept", json={"org": ft_fakes.ORG, "id": "t1"}, headers=ghost)
    assert stranger.status_code == 403 and stranger.get_json()["error"] == "unknown_person"
    blank = c.post("/api/ft/accept", json={**body, "by": "\u3000"}, headers=AUTH)
    assert blank.status_code in (400, 403)
    assert c.get(f"/api/ft/nope?org={ft_fakes.ORG}", headers=AUTH).status_code == 404
    assert rt.store.get(candidate_path(ft_fakes.ORG, "t1"))["status"] == "pending"


def test_the_page_has_the_jobs_and_fine_tuning_views_and_serves_their_script():
    _, c = client()
    page = c.get("/").data.decode()
    assert 'data-view="jobs"' in page and 'id="jobs-table"' in page and 'src="/assets/work.js"' in page
    assert 'data-view="ft"' in page and 'id="ft-table"' in page
    script = c.get("/assets/work.js")
    assert script.status_code == 200 and b"/api/ft/${action}" in script.data and b"/api/jobs" in script.data
