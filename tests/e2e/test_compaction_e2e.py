"""Compaction on the whole local stack (seed 001 §19): the background memory target summarises a
conversation past 70 % after its turn, and the reply never waits for it — the fake LLM holds every
summary call (a delay fault on calls whose system text asks for a summary) while the reply
arrives; the summary appears on the conversation afterwards."""

from __future__ import annotations

import json
import urllib.request
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared_lib.context.history import append_message, conversation_path

ORG = "demo"
USER = "u-suzuki"
SLOW_SUMMARIES = {
    "name": "slow-summaries",
    "rules": [{"match": {"system_regex": "要約してください"}, "fault": {"kind": "delay", "seconds": 8}}],
}
CLEAR = {"name": "clear", "rules": []}


def scenario(stack, body: dict[str, Any]) -> None:
    req = urllib.request.Request(
        stack.url("fake_llm") + "/_admin/scenario",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status == 200


def replies(stack, room: str) -> list[dict[str, Any]]:
    return [s for s in stack.fake_channel_sent() if s.get("channel") == "http" and room in str(s.get("body"))]


@pytest.mark.e2e
def test_a_slow_summary_never_holds_the_reply_and_the_summary_appears_after(local_stack):
    # GIVEN a conversation already at 70 % of its history budget (14 messages of 50 tokens)
    room = f"room-{uuid.uuid4().hex[:8]}"
    key = f"{ORG}/{room}/{USER}"
    start = datetime.now(UTC) - timedelta(hours=1)
    for i in range(14):
        append_message(
            local_stack.store,
            ORG,
            key,
            f"seed{i:03d}-0-in",
            role="user" if i % 2 == 0 else "assistant",
            text=("見積書の件" if i % 2 == 0 else "承知したウル") * 10,
            at=start + timedelta(seconds=i),
            user_id=USER,
            room_id=room,
        )
    # AND the fake LLM holds every summary call for 8 seconds
    scenario(local_stack, SLOW_SUMMARIES)
    try:
        # WHEN the person writes
        resp = local_stack.send("http", "今日は暑いね〜", org=ORG, room=room, user=USER)
        assert resp.status == 200, resp.body
        # THEN the reply arrives while the conversation has no summary yet
        local_stack.wait_for(lambda: replies(local_stack, room))
        assert not (local_stack.store.get(conversation_path(ORG, key)) or {}).get("summary")
        # AND afterwards the background summary appears: a real shortening of the messages
        doc = local_stack.wait_for(
            lambda: (d := local_stack.store.get(conversation_path(ORG, key)) or {}).get("summary") and d,
        )
        assert doc["compaction"]["level"] in ("light", "aggressive") and "見積書の件" in doc["summary"]
        summaries = [
            r
            for r in local_stack.fake_llm_requests()
            if "要約してください" in json.dumps(r, ensure_ascii=False)
        ]
        assert summaries and len(replies(local_stack, room)) == 1
    finally:
        scenario(local_stack, CLEAR)
