"""The context layer in the in-process pipeline: each source failing in turn still gives a
turn with a degraded-context record and a sensible reply; conversation memory is kept."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from context_fakes import ORG, OTHER_ORG, ROOM, USER, FaultyStore, seed_org

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.context.history import recent_messages
from shared_lib.context.sources import default_sources
from shared_lib.layers.ingress import accept
from shared_lib.turn.envelope import Turn
from shared_lib.turn.inbound import InboundMessage
from shared_lib.wiring.composition import build_runtime, wire_inprocess

ENV = {"CHARTER_ENV": "test", "CHARTER_LLM": "none", "CHARTER_CHANNELS": "recording"}


def runtime(fail_source=None, *, everywhere=False):
    inner = MemoryStore()
    seed_org(inner)
    seed_org(inner, OTHER_ORG, marker="GLOBEX")
    rt = build_runtime(ENV, store=FaultyStore(inner, fail_source, everywhere=everywhere))
    wire_inprocess(rt)
    return rt


def say(rt, text, event_id="e1", org=ORG):
    return accept(
        rt,
        InboundMessage(
            channel="http",
            org_id=org,
            room_id=ROOM,
            user_id=USER,
            text=text,
            message_id=event_id,
            event_id=event_id,
            received_at=datetime.now(UTC),
        ),
    )


def final_turn(rt, turn_id):
    """The turn as the responder finished it (the envelope on ``turns.completed``)."""
    data, attrs = next(
        (d, a) for topic, d, a, _ in rt.bus.published if topic == "completed" and a.get("turn_id") == turn_id
    )
    return Turn.from_message(data, attrs, rt.store)


def sent(rt):
    return [r.text for r in rt.channels["http"].sent]


@pytest.mark.parametrize("source", [s.name for s in default_sources()])
def test_given_one_source_failing_when_a_turn_runs_then_it_is_degraded_recorded_and_answered(source):
    # GIVEN the store behind one context source is down
    rt = runtime(source)
    # WHEN the user says something
    turn_id = say(rt, "こんにちは、経費精算のルールを教えて")
    # THEN the turn is recorded with a degraded context naming that source
    record = rt.store.get(f"orgs/{ORG}/observability/{turn_id}")
    assert source in record["context_degraded"]
    turn = final_turn(rt, turn_id)
    assert source in turn.context.degraded
    errors = [e for e in turn.errors if e.code == "memory_access_error"]
    assert source in {e.details["source"] for e in errors}
    assert all(e.fallback == "proceed_without_memory" and e.layer == "context" for e in errors)
    # AND the user still gets one ordinary reply
    assert len(sent(rt)) == 1 and sent(rt)[0].strip()
    assert record["response_kind"] == "reply"
    context_trail = next(e for e in record["trail"] if e["layer"] == "context")
    assert context_trail["outcome"] == "degraded" and f"{source}:failed" in context_trail["detail"]


def test_given_every_source_failing_then_a_db_connection_error_is_recorded_and_the_user_still_gets_a_reply():
    rt = runtime("session", everywhere=True)
    turn_id = say(rt, "こんにちは")
    record = rt.store.get(f"orgs/{ORG}/observability/{turn_id}")
    assert "db_connection_error" in {e["code"] for e in record["errors"]}
    assert len(sent(rt)) == 1


def test_given_a_healthy_store_then_the_context_is_complete_and_recorded():
    rt = runtime()
    turn_id = say(rt, "こんにちは")
    record = rt.store.get(f"orgs/{ORG}/observability/{turn_id}")
    assert record["context_degraded"] == [] and "【CEO教え（最優先で従う）】" in record["context_summary"]


def test_given_a_turn_then_its_message_and_reply_are_remembered_and_the_next_turn_sees_them():
    rt = runtime()
    say(rt, "こんにちは", "e1")
    history = recent_messages(rt.store, ORG, f"{ORG}/{ROOM}/{USER}", 10)
    assert [(m["role"], m["text"]) for m in history[-2:]] == [
        ("user", "こんにちは"),
        ("assistant", sent(rt)[0]),
    ]
    turn_id = say(rt, "今日は暑いね", "e2")
    record = rt.store.get(f"orgs/{ORG}/observability/{turn_id}")
    assert "- user: こんにちは" in record["context_summary"]
    assert final_turn(rt, turn_id).context.recent_messages[-2]["text"] == "こんにちは"
    other = recent_messages(rt.store, OTHER_ORG, f"{OTHER_ORG}/{ROOM}/{USER}", 20)
    assert all("GLOBEX" in m["text"] for m in other)  # organisation B's history is its own


def test_the_next_turn_reads_the_agent_state_the_last_one_left():
    # GIVEN a turn whose tool ran (the legacy arm: the code's transition alone moves the step)
    rt = runtime()
    first = final_turn(rt, say(rt, "私のタスク一覧を見せて", event_id="e1"))
    assert first.context.agent_state == {}  # a new conversation has no state yet
    assert [(t.from_step, t.to_step, t.by) for t in first.agent.transition] == [
        ("PLANNING", "EXECUTION", "code")
    ]
    # WHEN the next message arrives
    second = final_turn(rt, say(rt, "ありがとう", event_id="e2"))
    # THEN its context carries the state the first turn wrote, in the prompt's keys
    assert second.context.agent_state["step"] == "EXECUTION"
    assert second.context.agent_state == first.agent.state
