"""The Context Builder and conversation memory on the Firestore emulator."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from shared_lib.context import ContextBuilder, ContextConfig, ContextInput
from shared_lib.context.history import append_message, recent_messages
from shared_lib.layers.ingress import accept
from shared_lib.tools.task_backend import StoreTaskBackend
from shared_lib.turn.inbound import InboundMessage
from shared_lib.wiring.composition import build_runtime, wire_inprocess
from tests.unit.context.context_fakes import NOW, ORG, OTHER_ORG, ROOM, USER, FaultyStore, seed_org

pytestmark = pytest.mark.integration


@pytest.fixture
def fs(firestore_store):
    seed_org(firestore_store)
    seed_org(firestore_store, OTHER_ORG, marker="GLOBEX")
    return firestore_store


def build(store, org=ORG, text="経費精算のルールを教えて"):
    return ContextBuilder(ContextConfig(token_budget=5000)).build(
        ContextInput(
            store=store,
            tasks=StoreTaskBackend(store),
            org_id=org,
            user_id=USER,
            room_id=ROOM,
            conversation_key=f"{org}/{ROOM}/{USER}",
            text=text,
            now=NOW,
        )
    )


def test_given_firestore_then_every_source_is_read_concurrently_and_only_the_orgs_own(fs):
    built = build(fs)
    assert built.degraded == [] and all(r.status == "ok" for r in built.records.values())
    assert [m["text"] for m in built.values["recent_messages"]] == [f"過去の発言{i}" for i in range(2, 12)]
    assert [t["body"] for t in built.values["tasks"]] == ["見積書を作成"]
    assert [k["knowledge_id"] for k in built.values["knowledge"]] == ["k1"]
    assert "GLOBEX" not in built.rendered
    assert "GLOBEX" in build(fs, OTHER_ORG).rendered


@pytest.mark.parametrize("source", ["teachings", "recent_messages", "tasks"])
def test_given_a_failing_source_on_firestore_then_the_context_degrades(fs, source):
    built = build(FaultyStore(fs, source))
    assert built.degraded == [source] and "取得できなかった情報" in built.rendered


def test_given_messages_written_at_the_same_instant_then_firestore_orders_them_by_turn(firestore_store):
    for turn in ("01A", "01B", "01C"):
        for suffix, role in (("in", "user"), ("out", "assistant")):
            append_message(
                firestore_store,
                ORG,
                "acme/r/u",
                f"{turn}-0-{suffix}",
                role=role,
                text=f"{turn}{suffix}",
                at=NOW,
                user_id="u",
            )
    append_message(
        firestore_store,
        ORG,
        "acme/r/u",
        "01D-0-in",
        role="user",
        text="later",
        at=NOW + timedelta(seconds=1),
        user_id="u",
    )
    assert [m["text"] for m in recent_messages(firestore_store, ORG, "acme/r/u", 4)] == [
        "01Bout",
        "01Cin",
        "01Cout",
        "later",
    ]


def test_given_the_pipeline_on_firestore_then_each_turn_is_remembered_for_the_next(fs):
    rt = build_runtime(
        {"CHARTER_ENV": "test", "CHARTER_LLM": "none", "CHARTER_CHANNELS": "recording"}, store=fs
    )
    wire_inprocess(rt)
    for n, text in enumerate(("こんにちは", "今日は暑いね")):
        accept(
            rt,
            InboundMessage(
                channel="http",
                org_id=ORG,
                room_id=ROOM,
                user_id=USER,
                text=text,
                message_id=f"m{n}",
                event_id=f"e{n}",
                received_at=datetime.now(UTC),
            ),
        )
    history = recent_messages(fs, ORG, f"{ORG}/{ROOM}/{USER}", 4)
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
    assert [m["text"] for m in history[::2]] == ["こんにちは", "今日は暑いね"]
    assert len(rt.channels["http"].sent) == 2
