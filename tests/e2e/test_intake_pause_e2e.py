"""End to end on the local stack: the dashboard's Pause pauses intake. A webhook sent while paused
is acknowledged (200, a turn id), its turn is held and nobody is answered; Resume answers it,
exactly once, through the whole chain."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest

from infra.webhook_sender import build_request
from shared_lib.delivery import intake

pytestmark = pytest.mark.e2e


def control(stack: Any, action: str) -> dict[str, Any]:
    resp = httpx.post(
        f"{stack.admin_url}/api/controls/{action}",
        json={"reason": "LINE公式アカウントの障害対応（e2e）"},
        headers={"X-Charter-Admin-Token": stack.admin_token},
        timeout=60,
    )
    assert resp.status_code == 200, resp.text
    return dict(resp.json())


def sent_to(stack: Any, room: str) -> list[dict[str, Any]]:
    return [
        c
        for c in stack.fake_channel_sent()
        if c["channel"] == "http" and c["status"] < 300 and room in json.dumps(c["body"])
    ]


def held_ids(stack: Any) -> set[str]:
    return {str(doc["turn_id"]) for _, doc in stack.store.query(intake.HELD_COLLECTION)}


def pause_seen_by_the_ingress(stack: Any) -> bool:
    """A probe of another room is held: the ingress read the pause (it trusts a ``running`` read
    for one flags lifetime, so a message just after the press may still be served)."""
    resp = stack.send(
        "http", "テストです、無視してください🙇", org="demo", room="room-probe", user="u-suzuki"
    )
    assert resp.status == 200, resp.body
    return str(resp.body["turn_ids"][0]) in held_ids(stack)


def test_a_message_sent_while_paused_is_acknowledged_held_and_answered_once_on_resume(local_stack):
    room = f"room-{uuid.uuid4().hex[:8]}"
    # GIVEN an operator pressed Pause on the dashboard, and the ingress has seen it
    assert control(local_stack, "pause")["effective"] == "paused"
    try:
        local_stack.wait_for(lambda: pause_seen_by_the_ingress(local_stack), what="the ingress holding")
        # WHEN a person writes
        path, headers, body = build_request(
            "http",
            "お疲れさまです！来週の定例って何曜日でしたっけ？",
            org="demo",
            room=room,
            user="u-suzuki",
            event_id=uuid.uuid4().hex,
        )
        resp = httpx.post(local_stack.ingress_url + path, content=body, headers=headers, timeout=30)
        # THEN the webhook is acknowledged with the turn it made
        assert resp.status_code == 200, resp.text
        [turn_id] = resp.json()["turn_ids"]
        # AND the turn is held, not served: no layer claimed it, nobody was answered
        held = [
            doc for _, doc in local_stack.store.query(intake.HELD_COLLECTION) if doc["turn_id"] == turn_id
        ]
        assert len(held) == 1 and held[0]["sealed"] is True
        assert local_stack.claims("demo", turn_id) == () and sent_to(local_stack, room) == []
        assert local_stack.store.get(f"orgs/demo/observability/{turn_id}") is None
    finally:
        # WHEN the operator resumes
        resumed = control(local_stack, "resume")
    assert resumed["effective"] in ("running", "resuming") and resumed["released"] >= 1
    # THEN the held turn is answered through the chain, exactly once
    record = local_stack.record("demo", turn_id)
    replies = local_stack.wait_for(lambda: sent_to(local_stack, room), what="the held turn's reply")
    assert len(replies) == 1 and record["final_response"]
    assert not [
        doc for _, doc in local_stack.store.query(intake.HELD_COLLECTION) if doc["turn_id"] == turn_id
    ]
    # AND the next message is served at once, again one reply
    local_stack.send("http", "ありがとうございます🙏", org="demo", room=room, user="u-suzuki")
    local_stack.wait_for(lambda: len(sent_to(local_stack, room)) == 2, what="the next reply")
    assert len(sent_to(local_stack, room)) == 2
