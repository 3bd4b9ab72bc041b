"""Compaction on the Firestore emulator (seed 001 §19): each level triggered through the memory
jobs, two concurrent compactions under the version check, and a turn whose reply is sent while
the background summary of its conversation is still running."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from infra.fake_llm.port import InProcessScriptedLLM
from shared_lib.admin.app import create_app
from shared_lib.admin.identity import Gate
from shared_lib.context.compaction import Compactor, compact
from shared_lib.context.history import append_message, conversation_path, history_path, recent_messages
from shared_lib.context.memory_config import CompactionConfig
from shared_lib.layers.ingress import accept
from shared_lib.ports import LLMRequest, LLMResponse
from shared_lib.turn.inbound import InboundMessage
from shared_lib.wiring.composition import build_runtime, wire_inprocess

pytestmark = pytest.mark.integration

ORG, ROOM, USER = "acme", "room-1", "u1"
KEY = f"{ORG}/{ROOM}/{USER}"
ENV = {"CHARTER_ENV": "test", "CHARTER_CHANNELS": "recording"}


def env(tmp_path) -> dict[str, str]:
    """The house with the operators' override: a history budget of 1000 tokens, not the window."""
    path = tmp_path / "memory.json"
    path.write_text('{"compaction": {"history_token_budget": 1000}}', encoding="utf-8")
    return {**ENV, "CHARTER_MEMORY_CONFIG": str(path)}


def grow(store, n: int, *, start: int = 0, chars: int = 50, at: datetime | None = None) -> None:
    """``n`` messages of ``chars`` tokens each (Japanese: one token a character)."""
    at = at or datetime.now(UTC) - timedelta(hours=1)
    for i in range(start, start + n):
        append_message(
            store,
            ORG,
            KEY,
            f"t{i:03d}-0-{'in' if i % 2 == 0 else 'out'}",
            role="user" if i % 2 == 0 else "assistant",
            text=("見積の件" if i % 2 == 0 else "承知した") * (chars // 4) + "あ" * (chars % 4),
            at=at + timedelta(seconds=i),
            user_id=USER,
            room_id=ROOM,
        )


def test_past_70_85_and_95_percent_the_memory_job_runs_each_level(firestore_store, tmp_path):
    # GIVEN the house on Firestore with the scripted model, in process; the history budget is
    # fixed at 1000 tokens by the operators' override
    clock = [datetime.now(UTC)]
    llm = InProcessScriptedLLM()
    rt = build_runtime(env(tmp_path), store=firestore_store, llm=llm, clock=lambda: clock[0])
    wire_inprocess(rt)
    admin = create_app(rt, gate=Gate(store=rt.store, local=True)).test_client()

    def run_sweep() -> dict:
        clock[0] += timedelta(minutes=1)  # one scheduler tick a minute: a new job id
        assert admin.post("/tasks/memory/compact").status_code == 200
        return rt.store.get(conversation_path(ORG, KEY)) or {}

    # WHEN the conversation reaches 72 % (18 x 40 tokens) THEN a light merge: one level-2 chunk
    grow(rt.store, 18, chars=40)
    doc = run_sweep()
    assert doc["compaction"]["level"] == "light" and len(doc["summary_levels"]["level2"]) == 1
    assert "ユーザーの話" in doc["summary"] and doc["summary_levels"]["level3"] == ""
    assert len(recent_messages(rt.store, ORG, KEY, 50)) == 10
    # WHEN it grows past 85 % THEN aggressive: the chunk folds into level 3, a new chunk is made
    used = 10 * 40 + len(doc["summary"])
    more = (860 - used) // 40 + 1
    grow(rt.store, more, start=18, chars=40)
    doc = run_sweep()
    assert doc["compaction"]["level"] == "aggressive"
    assert doc["summary_levels"]["level3"] and len(doc["summary_levels"]["level2"]) == 1
    assert doc["summary"].startswith("これまでの要点: ")
    # WHEN one burst of long messages takes it past 95 % THEN the emergency cut, without the LLM
    calls = llm.calls
    grow(rt.store, 12, start=18 + more, chars=90)
    doc = run_sweep()
    assert doc["compaction"]["level"] == "emergency" and llm.calls == calls
    assert doc["cuts"][-1]["count"] > 0 and len(recent_messages(rt.store, ORG, KEY, 50)) == 10
    # AND nothing was deleted: every message is stored, with its retention
    assert len(rt.store.query(history_path(ORG, KEY))) == 18 + more + 12


class GatedLLM:
    """Summary calls wait at a barrier, so two compactions both read before either writes."""

    def __init__(self, barrier: threading.Barrier, text: str) -> None:
        self.barrier, self.text = barrier, text

    def complete(self, request: LLMRequest) -> LLMResponse:
        self.barrier.wait(timeout=20)
        return LLMResponse(content=[{"type": "text", "text": self.text}], stop_reason="end_turn", model="m")


def test_two_concurrent_compactions_on_firestore_write_once(firestore_store):
    # GIVEN a conversation at 72 %, and two compactions whose summaries return together
    grow(firestore_store, 18, chars=40)
    barrier = threading.Barrier(2)
    results = {}

    def run(name: str) -> None:
        c = Compactor(CompactionConfig(), 1000, GatedLLM(barrier, f"{name}の要約"), "m")
        results[name] = compact(firestore_store, ORG, KEY, c, now=datetime.now(UTC))

    threads = [threading.Thread(target=run, args=(n,)) for n in ("A", "B")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    # THEN exactly one wrote; the other saw the version move; the stored state is the winner's
    assert sorted(r.reason for r in results.values()) == ["conflict", "written"]
    winner = next(n for n, r in results.items() if r.written)
    doc = firestore_store.get(conversation_path(ORG, KEY))
    assert doc["summary"] == f"{winner}の要約" and doc["compaction_version"] == 1


class SlowSummaries(InProcessScriptedLLM):
    """The scripted model, whose summary calls hold until released."""

    def __init__(self) -> None:
        super().__init__()
        self.started, self.release = threading.Event(), threading.Event()

    def complete(self, request: LLMRequest) -> LLMResponse:
        if request.purpose == "summary":
            self.started.set()
            assert self.release.wait(30)
        return super().complete(request)


def test_the_reply_is_sent_while_the_background_summary_still_runs(firestore_store, tmp_path):
    # GIVEN a conversation at 70 % and summaries that hold until released
    grow(firestore_store, 14, chars=50)
    llm = SlowSummaries()
    rt = build_runtime(env(tmp_path), store=firestore_store, llm=llm)
    wire_inprocess(rt)
    message = InboundMessage(
        channel="http",
        org_id=ORG,
        room_id=ROOM,
        user_id=USER,
        text="こんにちは",
        message_id="m1",
        event_id="e1",
        received_at=datetime.now(UTC),
    )
    # WHEN a turn arrives
    worker = threading.Thread(target=accept, args=(rt, message))
    worker.start()
    # THEN the reply is sent while the conversation's summary call is still held
    assert llm.started.wait(30), "the completed turn never reached the memory target"
    assert len(rt.channels["http"].sent) == 1
    assert not (firestore_store.get(conversation_path(ORG, KEY)) or {}).get("summary")
    # AND once the summary returns, it is on the conversation for the next turn's context
    llm.release.set()
    worker.join(30)
    doc = firestore_store.get(conversation_path(ORG, KEY))
    # (the turn's two messages take it past 70 %; a long reply could take it past 85 %)
    assert doc["compaction"]["level"] in ("light", "aggressive") and "ユーザーの話" in doc["summary"]
