"""Compaction on the whole local stack (seed 001 §19), measured against the serving model's window
(the stack's fakes: 32 768 tokens, with what every request carries counted in): the background
memory target summarises a conversation past 70 % after its turn, and the reply never waits for
it — the fake LLM holds every summary call (a delay fault on calls whose system text asks for a
summary) while the reply arrives; the summary appears on the conversation afterwards. Past 95 %
the conversation is cut without an LLM, and every decision and commitment of the cut part is
found by the operator's `charter memory search` (§19.7), a decision reversed later not kept."""

from __future__ import annotations

import json
import math
import urllib.request
import uuid
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from infra.local_stack import FAKE_CONTEXT_WINDOW
from shared_lib.context.history import append_message, conversation_path
from shared_lib.layers.memory import carried_tokens
from shared_lib.persona.catalogue import load_persona
from shared_lib.wiring.features import tool_registry

ORG = "demo"
USER = "u-suzuki"
SLOW_SUMMARIES = {
    "name": "slow-summaries",
    "rules": [{"match": {"system_regex": "要約してください"}, "fault": {"kind": "delay", "seconds": 8}}],
}
CLEAR = {"name": "clear", "rules": []}
MODEL_ONLY = "来週は大阪の実家にいます🏠"


def scenario(stack, body: dict[str, Any]) -> None:
    req = urllib.request.Request(
        stack.url("fake_llm") + "/_admin/scenario",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status == 200


def carried() -> int:
    """What every request of the stack carries besides the history (its persona, its tools, the
    context's default budget), as the memory target counts it."""
    rt = SimpleNamespace(
        persona=load_persona(), registry=tool_registry(), settings=SimpleNamespace(context_token_budget=2000)
    )
    return carried_tokens(rt)


def replies(stack, room: str) -> list[dict[str, Any]]:
    return [s for s in stack.fake_channel_sent() if s.get("channel") == "http" and room in str(s.get("body"))]


@pytest.mark.e2e
def test_a_slow_summary_never_holds_the_reply_and_the_summary_appears_after(local_stack):
    # GIVEN a conversation already at 75 % of the serving model's window (messages of 500 tokens)
    room = f"room-{uuid.uuid4().hex[:8]}"
    key = f"{ORG}/{room}/{USER}"
    start = datetime.now(UTC) - timedelta(hours=1)
    count = math.ceil((0.75 * FAKE_CONTEXT_WINDOW - carried()) / 500)
    # (and first, a line no rule keeps, which the summary call lists as a fact: a plan of the week)
    append_message(
        local_stack.store,
        ORG,
        key,
        "seed-plan-0-in",
        role="user",
        text=MODEL_ONLY,
        at=start - timedelta(seconds=1),
        user_id=USER,
        room_id=room,
    )
    for i in range(count):
        append_message(
            local_stack.store,
            ORG,
            key,
            f"seed{i:03d}-0-in",
            role="user" if i % 2 == 0 else "assistant",
            text=("見積書の件" if i % 2 == 0 else "承知したウル") * 100,
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
        summaries = [p for p in local_stack.prompts() if "要約してください" in p]
        assert summaries and len(replies(local_stack, room)) == 1
        # AND the facts the summary call listed in the same answer are in memory, the summary free of them
        # (one call read the plan: the summary's, no call of its own for the facts)
        read_plan = [p for p in summaries if MODEL_ONLY in p]
        assert len(read_plan) == 1 and "<facts>" in read_plan[0] and "<facts>" not in doc["summary"]
        hits = memory_search(local_stack, "大阪の実家")
        assert any("大阪の実家" in h["text"] for h in hits), hits
    finally:
        scenario(local_stack, CLEAR)


# a week of a team's chat: decisions and commitments among the everyday lines (the marker finds each)
DECISIONS = [
    ("じゃあ来週から経費はクラウド精算で決定で", "クラウド精算"),
    ("締切は12/5（金）厳守でお願いします🙏", "締切は12/5"),
    ("議事録のフォーマットはNotionに統一することになりました", "議事録のフォーマット"),
    ("来月から在宅は週２で決まりや", "在宅は週２"),
    ("新しいロゴはB案でいきます！", "ロゴはB案"),
    ("展示会の出展、今回は見送りで", "展示会の出展"),
    ("やっぱ忘年会の焼肉はなしで、しゃぶしゃぶにしよう", "しゃぶしゃぶ"),
]
COMMITMENTS = [
    ("金曜までに見積り出しときます", "見積り"),
    ("了解です、請求書は明日の朝イチで送ります🙏", "請求書"),
    ("ほな、勉強会の資料は来週頭に出すわ", "勉強会の資料"),
]
REVERSED = "忘年会は焼肉でいきましょう"  # said first, then reversed (the later one wins)
EVERYDAY = "昨日のランチのカレー屋さん、めっちゃ美味しかったです😋 また行きたいですね〜 " * 8


def memory_search(stack, query: str) -> list[dict[str, Any]]:
    out = stack.charter("memory", "search", "--org", ORG, "--as", USER, "--kind", "fact", query, "--json")
    assert out.returncode == 0, out.stderr[-2000:]
    return list(json.loads(out.stdout)["hits"])


@pytest.mark.e2e
def test_past_95_percent_every_decision_and_commitment_of_the_cut_part_is_found_by_charter_memory_search(
    local_stack,
):
    # GIVEN a week of a team's chat longer than the serving model's whole window, its decisions and
    # commitments early
    room = f"room-{uuid.uuid4().hex[:8]}"
    key = f"{ORG}/{room}/{USER}"
    start = datetime.now(UTC) - timedelta(days=5)
    lines = [REVERSED, *(text for text, _ in DECISIONS + COMMITMENTS)]
    lines += [EVERYDAY] * math.ceil(FAKE_CONTEXT_WINDOW / len(EVERYDAY))
    for i, text in enumerate(lines):
        append_message(
            local_stack.store,
            ORG,
            key,
            f"week{i:04d}-0-in",
            role="user",
            text=text,
            at=start + timedelta(minutes=30 * i),
            user_id=USER,
            room_id=room,
        )
    # WHEN the person writes again
    resp = local_stack.send("http", "今日もよろしくお願いします〜", org=ORG, room=room, user=USER)
    assert resp.status == 200, resp.body
    # THEN the memory target cuts the conversation without an LLM
    doc = local_stack.wait_for(
        lambda: (d := local_stack.store.get(conversation_path(ORG, key)) or {}).get("compaction") and d,
        what="the conversation's compaction",
    )
    assert doc["compaction"]["level"] == "emergency" and doc["cuts"][-1]["count"] >= len(lines) - 10
    # AND every decision and commitment of the cut part is found by the operator's `charter memory search`
    for text, marker in DECISIONS + COMMITMENTS:
        hits = memory_search(local_stack, marker)
        assert any(marker in h["text"] and h["kind"] == "fact" for h in hits), (text, hits)
    # AND the decision reversed later is not kept: the later one is
    assert not [h for h in memory_search(local_stack, "忘年会 焼肉") if "焼肉でいきましょう" in h["text"]]
    # AND the everyday lines were not kept
    assert not [h for h in memory_search(local_stack, "カレー屋さん") if "カレー" in h["text"]]
