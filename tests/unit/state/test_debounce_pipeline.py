"""The debounce through the in-process pipeline (ingress → context → … → observer): five
messages of one person in one room within two seconds become one turn with all five texts and
one reply; the four others are recorded as merged into a later turn; plain HTTP is not
debounced by default."""

from __future__ import annotations

import dataclasses
import itertools
from datetime import UTC, datetime, timedelta

from clock_fakes import Clock

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.demo_data import DEMO_ORG, DEMO_ROOM, DEMO_USER, seed_demo_directory
from shared_lib.features.debounce import state as debounce
from shared_lib.layers.ingress import accept
from shared_lib.turn.envelope import Turn
from shared_lib.turn.inbound import InboundMessage
from shared_lib.wiring.composition import build_runtime, wire_inprocess

T0 = datetime(2026, 11, 25, 10, 0, tzinfo=UTC)
ENV = {
    "CHARTER_ENV": "test",
    "CHARTER_LLM": "none",
    "CHARTER_CHANNELS": "recording",
    "CHARTER_FLAGS_TTL": "0",
}
TEXTS = ["お疲れさまです", "明日の会議なんですが", "10時からに", "変更になりました", "よろしくお願いします"]


class GuardSeen:
    """The rollback guard's port as the observer calls it: which records it was shown."""

    def __init__(self) -> None:
        self.turn_ids: list[str] = []

    def observe(self, rt, record, comparison=None):
        self.turn_ids.append(record["turn_id"])
        return []


def runtime(env: dict[str, str]):
    clock, store = Clock(T0), MemoryStore()
    seed_demo_directory(store)
    rt = build_runtime(env, store=store, clock=clock, sleep=clock.sleep, rollback_guard=GuardSeen())
    return rt, clock


def message(n: int, text: str) -> InboundMessage:
    return InboundMessage(
        channel="http",
        org_id=DEMO_ORG,
        room_id=DEMO_ROOM,
        user_id=DEMO_USER,
        text=text,
        message_id=f"m{n}",
        event_id=f"e{n}",
        received_at=T0,
    )


def received_then_served(rt, clock, texts: list[str], gap: float) -> list[str]:
    """The ingress accepts every message first (the bus holds them: nothing consumes yet),
    then the chain consumes them in order, as ordered delivery does after a burst."""
    turn_ids = []
    for n, text in enumerate(texts):
        turn_ids.append(accept(rt, message(n, text)))
        clock.now += timedelta(seconds=gap)
    held = [(t, d, a, k) for t, d, a, k in rt.bus.published if t == "received"]
    wire_inprocess(rt)
    for topic, data, attrs, key in held:
        rt.bus.publish(topic, data, attrs, key)
    return turn_ids


def record(rt, turn_id: str) -> dict:
    return rt.store.get(f"orgs/{DEMO_ORG}/observability/{turn_id}")


def test_given_five_messages_within_two_seconds_then_one_turn_carries_all_five_texts_and_one_reply_is_sent():
    rt, clock = runtime({**ENV, "CHARTER_DEBOUNCE": '{"http": 2.0}'})
    turn_ids = received_then_served(rt, clock, TEXTS, gap=0.4)
    # THEN one reply, to the last turn, whose input is the five texts in order
    assert len(rt.channels["http"].sent) == 1
    completed = {
        a["turn_id"]: Turn.from_message(d, a, rt.store) for t, d, a, _ in rt.bus.published if t == "completed"
    }
    leader = completed[turn_ids[-1]]
    assert leader.inbound.text == "\n".join(TEXTS)
    assert leader.context.debounce["turn_ids"] == turn_ids
    assert leader.context.debounce["message_ids"] == [f"m{n}" for n in range(5)]
    assert record(rt, turn_ids[-1])["response_kind"] != "merged"
    # the four others ended at the context layer, each recorded as merged into the next
    for earlier, later in itertools.pairwise(turn_ids):
        rec = record(rt, earlier)
        assert rec["response_kind"] == "merged"
        assert completed[earlier].context.debounce == {
            "role": "absorbed",
            "merged_into": later,
            "waited_ms": 0.0,
        }
        assert [row["layer"] for row in rec["trail"]] == ["context"]
    # only the turn that served the person counts for the rollback guard
    assert rt.rollback_guard.turn_ids == [turn_ids[-1]]
    # the buffer keeps the batch claimed by the leader (a redelivery finds it)
    buffer = debounce.entries(rt.store, debounce.buffer_path(DEMO_ORG, "http", DEMO_ROOM, DEMO_USER))
    assert [e["batch"] for e in buffer] == [turn_ids[-1]] * 5
    # the debounce added at most the window after the last message
    assert sum(clock.slept) <= 2.0


def test_given_plain_http_with_the_default_windows_then_every_message_is_its_own_turn():
    rt, clock = runtime(ENV)
    turn_ids = received_then_served(rt, clock, TEXTS[:2], gap=0.4)
    assert len(rt.channels["http"].sent) == 2
    assert all(record(rt, t)["response_kind"] != "merged" for t in turn_ids)
    assert debounce.entries(rt.store, debounce.buffer_path(DEMO_ORG, "http", DEMO_ROOM, DEMO_USER)) == []
    assert clock.slept == []


def test_given_the_debounce_room_lends_no_buffer_then_the_ingress_holds_nothing_and_each_message_is_a_turn():
    # GIVEN a window on plain HTTP, but a runtime whose hooks lend no inbound buffer (the room
    # unregistered): the ingress knows the debounce only through the runtime
    rt, clock = runtime({**ENV, "CHARTER_DEBOUNCE": '{"http": 2.0}'})
    rt.hooks = dataclasses.replace(rt.hooks, inbound_buffer=None)
    # WHEN two messages arrive 0.4 s apart
    received_then_served(
        rt, clock, ["了解です！", "あ、やっぱり11時からでお願いしますｍ（＿ ＿）ｍ"], gap=0.4
    )
    # THEN nothing was held in the buffer, and each message was answered as its own turn
    assert debounce.entries(rt.store, debounce.buffer_path(DEMO_ORG, "http", DEMO_ROOM, DEMO_USER)) == []
    assert len(rt.channels["http"].sent) == 2


def test_given_a_pending_confirmation_then_the_ingress_writes_a_yes_as_a_barrier_and_other_words_as_usual():
    from shared_lib.state.session import set_pending

    rt, clock = runtime({**ENV, "CHARTER_DEBOUNCE": '{"http": 2.0}'})
    path = debounce.buffer_path(DEMO_ORG, "http", DEMO_ROOM, DEMO_USER)
    # GIVEN no question pending: 「はい」 is a message like any other
    accept(rt, message(0, "はい"))
    # AND then the charter asks, and the person answers in their own words
    set_pending(rt.store, DEMO_ORG, message(0, "").conversation_key, {"approval_id": "J-ABC123"}, clock())
    for n, text in enumerate(["ＯＫ👍", "いいえ", "はい、あと田中さんにも共有して"], start=1):
        accept(rt, message(n, text))
    prompt = {e["message_id"]: bool(e.get("prompt")) for e in debounce.entries(rt.store, path)}
    # THEN only a whole yes or no to the pending question is kept apart from the burst
    assert prompt == {"m0": False, "m1": True, "m2": True, "m3": False}
