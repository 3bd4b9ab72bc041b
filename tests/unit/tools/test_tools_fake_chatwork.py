"""The fake ChatWork task API over HTTP: what ChatWork checks, what it records, its admin API."""

from __future__ import annotations

import httpx
import pytest

from infra.fake_chatwork import FakeChatWorkServer
from infra.fake_chatwork.server import DEFAULT_TOKEN


@pytest.fixture
def fake():
    with FakeChatWorkServer() as server:
        yield server


@pytest.fixture
def http(fake):
    with httpx.Client(base_url=fake.url, headers={"X-ChatWorkToken": DEFAULT_TOKEN}) as client:
        yield client


def test_given_the_task_api_then_create_list_and_complete_behave_like_chatwork(http, fake):
    assert http.get("/v2/rooms/7/tasks").status_code == 204
    created = http.post(
        "/v2/rooms/7/tasks",
        data={"body": "見積書", "to_ids": "12,13", "limit": "1769612400", "limit_type": "date"},
    )
    assert created.json() == {"task_ids": [1, 2]}
    listed = http.get("/v2/rooms/7/tasks", params={"account_id": "13", "status": "open"}).json()
    assert [(t["task_id"], t["account"]["account_id"], t["limit_type"]) for t in listed] == [(2, 13, "date")]
    assert http.put("/v2/rooms/7/tasks/2/status", data={"body": "done"}).json() == {"task_id": 2}
    assert http.get("/v2/rooms/7/tasks/2").json()["status"] == "done"
    assert [c["method"] for c in http.get("/_admin/calls").json()] == ["GET", "POST", "GET", "PUT", "GET"]


@pytest.mark.parametrize(
    ("method", "path", "data", "status"),
    [
        ("POST", "/v2/rooms/7/tasks", {"body": "", "to_ids": "1"}, 400),
        ("POST", "/v2/rooms/7/tasks", {"body": "x", "to_ids": "tanaka"}, 400),
        ("POST", "/v2/rooms/7/tasks", {"body": "x", "to_ids": "1", "limit_type": "soon"}, 400),
        ("PUT", "/v2/rooms/7/tasks/99/status", {"body": "done"}, 404),
        ("PUT", "/v2/rooms/7/tasks/99/status", {"body": "finished"}, 400),
        ("GET", "/v2/rooms/7/messages", None, 404),
    ],
)
def test_given_a_request_chatwork_would_refuse_then_the_fake_refuses_it(http, method, path, data, status):
    assert http.request(method, path, data=data).status_code == status


def test_given_no_token_then_401(fake):
    assert httpx.get(f"{fake.url}/v2/rooms/7/tasks").status_code == 401


def test_given_faults_through_the_admin_api_then_they_apply_then_reset_clears_everything(http, fake):
    http.post("/_admin/faults", json={"status": 429, "times": 1, "retry_after": 5})
    limited = http.get("/v2/rooms/7/tasks")
    assert limited.status_code == 429 and limited.headers["x-ratelimit-remaining"] == "0"
    http.post("/_admin/tasks", json={"room_id": "7", "body": "seeded", "account_id": 3})
    assert [t["body"] for t in http.get("/v2/rooms/7/tasks").json()] == ["seeded"]
    http.post("/_admin/reset")
    assert http.get("/_admin/calls").json() == [] and http.get("/v2/rooms/7/tasks").status_code == 204


def test_given_a_prefixed_path_then_the_fake_still_answers(http):
    assert http.get("/chatwork/v2/rooms/7/tasks").status_code == 204
