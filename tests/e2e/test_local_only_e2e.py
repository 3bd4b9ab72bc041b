"""Local-only mode on the whole local stack (seed 003 /local, /cloud): after ``/local`` no request
of the conversation reaches a cloud LLM (the stack's two cloud fakes: the Anthropic API and
Vertex), yet every message is answered: by the LLM arm on the stack's local peer (the fake
OpenAI-compatible server, ``local: true``), or by the legacy brain while that peer is down.
``/cloud`` gives the cloud back. The routing decision and the peers that served are in the turn's
record."""

from __future__ import annotations

import json
import urllib.request
import uuid
from typing import Any

import pytest

ORG = "demo"
USER = "u-suzuki"
CLOUD = ("fake_llm", "fake_llm_fallback")
DOWN = {"name": "down", "rules": [{"fault": {"kind": "status", "status": 503}}]}
CLEAR = {"name": "clear", "rules": []}


def post(stack, text: str, room: str) -> str:
    resp = stack.send("http", text, org=ORG, room=room, user=USER)
    assert resp.status == 200, resp.body
    return str(resp.body["turn_ids"][0])


def reply_to(stack, turn_id: str) -> str:
    def found() -> str | None:
        for s in stack.fake_channel_sent():
            body = s.get("body") or {}
            if isinstance(body, dict) and str(body.get("turn_id", "")).startswith(turn_id):
                return str(s.get("text", ""))
        return None

    return str(stack.wait_for(found))


def saw(stack, marker: str, fakes: tuple[str, ...]) -> bool:
    """Whether any of ``fakes`` received a request carrying ``marker``."""
    return any(
        marker in json.dumps(r, ensure_ascii=False) for fake in fakes for r in stack.fake_llm_requests(fake)
    )


def scenario(stack, fake: str, body: dict[str, Any]) -> None:
    req = urllib.request.Request(
        stack.url(fake) + "/_admin/scenario",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status == 200


def brain_reason(record: dict[str, Any]) -> str:
    return next(e["reason_code"] for e in record["trail"] if e["layer"] == "brain")


@pytest.mark.e2e
def test_local_keeps_the_conversation_on_the_local_model_until_cloud(local_stack):
    room = f"room-{uuid.uuid4().hex[:8]}"
    # GIVEN a conversation switched to local-only, full-width as people type it on a phone
    switched = post(local_stack, "／ｌｏｃａｌ", room)
    assert "/cloud" in reply_to(local_stack, switched)
    # WHEN a question follows
    marker = uuid.uuid4().hex[:10]
    asked = post(local_stack, f"給与の件で相談したいんだけど、体調管理のコツも教えて（{marker}）", room)
    # THEN the LLM arm answers it on the local model, and no cloud LLM received it
    assert reply_to(local_stack, asked).strip()
    record = local_stack.record(ORG, asked)
    assert record["arm"] == "llm" and record["route"]["local_only"] is True
    assert record["route"]["peers"] == ["local"], record["route"]
    assert saw(local_stack, marker, ("fake_openai",))
    assert not saw(local_stack, marker, CLOUD)
    # AND a coding request is refused with the way out, not run
    code = post(local_stack, "/code main.py のバグを直して", room)
    assert "/cloud" in reply_to(local_stack, code)
    assert local_stack.record(ORG, code)["route"]["refused"] == "code_needs_cloud"
    # WHEN the local model is down
    scenario(local_stack, "fake_openai", DOWN)
    try:
        down = uuid.uuid4().hex[:10]
        held = post(local_stack, f"明日の会議、何から話せばいいかな？（{down}）", room)
        # THEN the legacy brain answers, still with no cloud LLM call, and the record says why
        assert reply_to(local_stack, held).strip()
        record = local_stack.record(ORG, held)
        assert record["arm"] == "legacy" and record["route"]["local_only"] is True
        assert brain_reason(record).startswith("route.local_only.local_peer_"), brain_reason(record)
        assert not saw(local_stack, down, CLOUD)
    finally:
        scenario(local_stack, "fake_openai", CLEAR)
    # WHEN the user lifts it
    post(local_stack, "/cloud に戻して", room)
    again = uuid.uuid4().hex[:10]
    back = post(local_stack, f"今日の予定の立て方を相談したい（{again}）", room)
    # THEN a cloud LLM serves the conversation again
    assert reply_to(local_stack, back).strip()
    assert local_stack.wait_for(lambda: saw(local_stack, again, CLOUD))
    assert local_stack.record(ORG, back)["route"]["local_only"] is False
