"""Local-only mode on the whole local stack (seed 003 /local, /cloud): after ``/local`` no
request of the conversation reaches the (fake) cloud LLM, yet every message is answered;
``/cloud`` gives the LLM back. The routing decision is in the turn's record."""

from __future__ import annotations

import json
import uuid

import pytest

ORG = "demo"
USER = "u-suzuki"


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


def llm_saw(stack, marker: str) -> bool:
    """Whether any cloud LLM peer (both fakes: the first peer and its fallback) saw ``marker``."""
    return any(
        marker in json.dumps(r, ensure_ascii=False)
        for fake in ("fake_llm", "fake_llm_fallback")
        for r in stack.fake_llm_requests(fake)
    )


@pytest.mark.e2e
def test_local_keeps_the_conversation_away_from_the_cloud_llm_until_cloud(local_stack):
    room = f"room-{uuid.uuid4().hex[:8]}"
    # GIVEN a conversation switched to local-only
    switched = post(local_stack, "/local", room)
    assert "/cloud" in reply_to(local_stack, switched)
    # WHEN a question follows
    marker = uuid.uuid4().hex[:10]
    asked = post(local_stack, f"体調管理のコツを教えて（{marker}）", room)
    # THEN it is answered, by the legacy brain, and no request with it reached the LLM
    assert reply_to(local_stack, asked).strip()
    record = local_stack.record(ORG, asked)
    assert record["arm"] == "legacy" and record["route"]["local_only"] is True
    assert not llm_saw(local_stack, marker)
    # AND a coding request is refused with the way out, not run
    code = post(local_stack, "/code main.py のバグを直して", room)
    assert "/cloud" in reply_to(local_stack, code)
    assert local_stack.record(ORG, code)["route"]["refused"] == "code_needs_cloud"
    # WHEN the user lifts it
    post(local_stack, "/cloud", room)
    again = uuid.uuid4().hex[:10]
    back = post(local_stack, f"今日の予定の立て方を相談したい（{again}）", room)
    # THEN the LLM serves the conversation again
    assert reply_to(local_stack, back).strip()
    assert local_stack.wait_for(lambda: llm_saw(local_stack, again))
    assert local_stack.record(ORG, back)["route"]["local_only"] is False
