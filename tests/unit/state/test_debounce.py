"""The debounce buffer (seed 001 §7.3, ``state.debounce``) on the in-memory store with a fake
clock: a burst becomes one leader with every text and the rest absorbed into it, in any
delivery order, with redeliveries, and nothing is ever lost."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from clock_fakes import Clock

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.brain.vault import vault_cipher
from shared_lib.features.debounce import state as debounce
from shared_lib.settings import Settings
from shared_lib.turn.inbound import MAX_TEXT_CHARS

T0 = datetime(2026, 11, 25, 10, 0, tzinfo=UTC)
WINDOW = 2.0
CIPHER = vault_cipher("test", None)
assert CIPHER is not None
PATH = debounce.buffer_path("acme", "chatwork", "room-1", "u-1")


def add(store, n: int, at: datetime) -> bool:
    return debounce.append(
        store,
        PATH,
        entry_id=f"e{n}",
        turn_id=f"T{n}",
        message_id=f"m{n}",
        text=f"メッセージ{n}",
        now=at,
        cipher=CIPHER,
    )


def settle(store, clock, n: int) -> debounce.Settled:
    return debounce.settle(
        store, PATH, f"T{n}", window_seconds=WINDOW, clock=clock, sleep=clock.sleep, cipher=CIPHER
    )


def burst(store, count=5, gap=0.4):
    for n in range(1, count + 1):
        assert add(store, n, T0 + timedelta(seconds=gap * (n - 1)))


def answered(results: dict[int, debounce.Settled]) -> list[str]:
    """Every text the leaders carry, in order: what the person gets an answer to."""
    return [t for r in results.values() if r.role == "leader" for t in r.texts]


def test_given_a_burst_of_five_when_settled_in_order_then_one_leader_carries_five_texts_and_four_are_absorbed():
    store, clock = MemoryStore(), Clock(T0 + timedelta(seconds=1.7))
    burst(store)
    results = {n: settle(store, clock, n) for n in range(1, 6)}
    assert [results[n].role for n in range(1, 5)] == ["absorbed"] * 4
    assert [results[n].merged_into for n in range(1, 5)] == ["T2", "T3", "T4", "T5"]
    leader = results[5]
    assert leader.role == "leader"
    assert leader.texts == tuple(f"メッセージ{n}" for n in range(1, 6))
    assert leader.turn_ids == ("T1", "T2", "T3", "T4", "T5")
    assert leader.message_ids == ("m1", "m2", "m3", "m4", "m5")
    # the leader waited until its own message was a window old, and no longer
    assert clock.slept == [pytest.approx(1.9)]
    assert clock.now == T0 + timedelta(seconds=1.6 + WINDOW)


def test_given_a_lone_message_when_settled_then_it_leads_alone_after_at_most_the_window():
    store, clock = MemoryStore(), Clock(T0 + timedelta(seconds=0.3))
    assert add(store, 1, T0)
    result = settle(store, clock, 1)
    assert (result.role, result.texts, result.turn_ids) == ("leader", ("メッセージ1",), ("T1",))
    assert result.waited == pytest.approx(1.7) and result.waited <= WINDOW
    assert result.section() == {
        "role": "leader",
        "waited_ms": 1700.0,
        "window_ms": 2000.0,
        "turn_ids": ["T1"],
        "message_ids": ["m1"],
    }


def test_given_a_lone_message_settled_after_its_window_when_settled_then_it_does_not_wait():
    store, clock = MemoryStore(), Clock(T0 + timedelta(seconds=5))
    assert add(store, 1, T0)
    assert settle(store, clock, 1).role == "leader" and clock.slept == []


def test_given_a_claimed_batch_when_a_message_arrives_then_it_starts_a_new_batch():
    store, clock = MemoryStore(), Clock(T0 + timedelta(seconds=1))
    burst(store, count=2)
    assert settle(store, clock, 1).role == "absorbed"
    assert settle(store, clock, 2).turn_ids == ("T1", "T2")
    assert add(store, 3, clock())
    third = settle(store, clock, 3)
    assert (third.role, third.turn_ids, third.texts) == ("leader", ("T3",), ("メッセージ3",))


def test_given_a_message_older_than_a_claimed_one_but_buffered_after_the_claim_then_it_is_not_lost():
    # GIVEN T2 claimed its batch before T1's entry was written (two ingress instances)
    store, clock = MemoryStore(), Clock(T0 + timedelta(seconds=3))
    assert add(store, 2, T0 + timedelta(seconds=0.5))
    assert settle(store, clock, 2).turn_ids == ("T2",)
    assert add(store, 1, T0)
    # WHEN T1 settles THEN the claimed later message does not absorb it: it answers itself
    first = settle(store, clock, 1)
    assert (first.role, first.turn_ids) == ("leader", ("T1",))


def test_given_the_leader_redelivered_after_its_claim_then_it_gets_the_same_batch_without_waiting():
    store, clock = MemoryStore(), Clock(T0 + timedelta(seconds=1.7))
    burst(store, count=3)
    results = [settle(store, clock, n) for n in (1, 2, 3)]
    assert add(store, 4, clock())  # a new message after the claim does not join the old batch
    slept = list(clock.slept)
    again = settle(store, clock, 3)
    assert again.turn_ids == results[2].turn_ids == ("T1", "T2", "T3")
    assert again.texts == results[2].texts
    assert clock.slept == slept
    # an absorbed turn redelivered after the claim names the leader that took its text
    assert settle(store, clock, 1) == debounce.Settled("absorbed", merged_into="T3")


@pytest.mark.parametrize("order", [(5, 1, 2, 3, 4), (3, 2, 1, 5, 4), (2, 1, 4, 3, 5)])
def test_given_deliveries_out_of_order_then_every_text_is_answered_exactly_once_in_order(order):
    store, clock = MemoryStore(), Clock(T0 + timedelta(seconds=1.7))
    burst(store)
    results = {n: settle(store, clock, n) for n in order}
    leaders = [n for n, r in results.items() if r.role == "leader"]
    assert leaders == [5]
    assert answered(results) == [f"メッセージ{n}" for n in range(1, 6)]
    # every absorbed turn points at a later turn of the burst (it never answers itself)
    assert all(r.merged_into and r.merged_into > f"T{n}" for n, r in results.items() if r.role == "absorbed")


def test_given_the_first_turn_waiting_while_the_burst_arrives_then_it_is_absorbed_by_the_last():
    # GIVEN T1 is settled at once (nothing later yet) and the rest arrive while it waits
    store = MemoryStore()
    clock = Clock(T0)
    assert add(store, 1, T0)

    def arriving(seconds: float) -> None:
        for n in range(2, 6):
            add(store, n, T0 + timedelta(seconds=0.3 * (n - 1)))
        Clock.sleep(clock, seconds)

    first = debounce.settle(
        store, PATH, "T1", window_seconds=WINDOW, clock=clock, sleep=arriving, cipher=CIPHER
    )
    assert (first.role, first.merged_into) == ("absorbed", "T2")
    rest = {n: settle(store, clock, n) for n in range(2, 6)}
    assert answered({1: first, **rest}) == [f"メッセージ{n}" for n in range(1, 6)]


@pytest.mark.parametrize(
    ("late", "role"), [(timedelta(seconds=3), "absorbed"), (timedelta(minutes=20), "leader")]
)
def test_given_a_later_unclaimed_entry_then_it_absorbs_while_its_turn_may_come_and_not_once_stale(late, role):
    # GIVEN a later entry whose turn never came (its publish failed and the ingress died)
    store, clock = MemoryStore(), Clock(T0 + late)
    assert add(store, 1, T0)
    assert add(store, 9, T0 + timedelta(seconds=1))
    # THEN it absorbs T1 while its turn may still be on the way, and not once it is stale
    assert settle(store, clock, 1).role == role


def test_a_message_not_in_the_buffer_goes_alone():
    store, clock = MemoryStore(), Clock(T0)
    assert settle(store, clock, 7) == debounce.Settled("alone")
    assert clock.slept == []


def test_the_buffer_keeps_texts_encrypted_and_expires():
    store = MemoryStore()
    assert add(store, 1, T0)
    (doc,) = debounce.entries(store, PATH)
    assert "メッセージ1" not in json.dumps(doc, default=str, ensure_ascii=False)
    assert doc["expires_at"] == T0 + debounce.KEEP


def test_a_full_buffer_or_one_over_a_turns_text_refuses_and_the_message_goes_alone():
    store = MemoryStore()
    for n in range(debounce.MAX_ENTRIES):
        assert add(store, n, T0)
    assert not add(store, 99, T0)
    long = MemoryStore()
    assert debounce.append(
        long, PATH, entry_id="a", turn_id="A", message_id="a", text="あ" * 5000, now=T0, cipher=CIPHER
    )
    assert not debounce.append(
        long,
        PATH,
        entry_id="b",
        turn_id="B",
        message_id="b",
        text="い" * (MAX_TEXT_CHARS - 5000),
        now=T0,
        cipher=CIPHER,
    )


def test_a_retried_delivery_replaces_its_unclaimed_entry_and_never_rejoins_a_claimed_one():
    store, clock = MemoryStore(), Clock(T0 + timedelta(seconds=3))
    assert add(store, 1, T0)
    assert debounce.append(
        store, PATH, entry_id="e1", turn_id="T1b", message_id="m1", text="メッセージ1", now=T0, cipher=CIPHER
    )
    assert [e["turn_id"] for e in debounce.entries(store, PATH)] == ["T1b"]
    assert settle(store, clock, "1b").turn_ids == ("T1b",)
    assert not debounce.append(
        store, PATH, entry_id="e1", turn_id="T1c", message_id="m1", text="x", now=T0, cipher=CIPHER
    )


def test_windows_per_channel_are_capped_and_plain_http_is_not_debounced_by_default():
    windows = Settings.from_env({"CHARTER_ENV": "test"}).debounce_seconds
    assert debounce.window(windows, "http") == 0.0
    assert debounce.window(windows, "line") == 2.0
    assert debounce.window({"slack": 60.0}, "slack") == debounce.MAX_WINDOW_SECONDS


def test_a_burst_of_concurrent_webhooks_writes_one_document_each_and_still_makes_one_turn():
    # GIVEN five messages written at once by five ingress threads (no shared document)
    import threading

    store, clock = MemoryStore(), Clock(T0 + timedelta(seconds=3))
    barrier = threading.Barrier(5)

    def write(n: int) -> None:
        barrier.wait()
        add(store, n, T0 + timedelta(milliseconds=100 * n))

    threads = [threading.Thread(target=write, args=(n,)) for n in range(1, 6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(debounce.entries(store, PATH)) == 5
    # WHEN their turns settle in any order
    outcomes = [settle(store, clock, n) for n in (3, 5, 1, 4, 2)]
    # THEN the last message's turn leads all five; the four others are absorbed
    leaders = [o for o in outcomes if o.role == "leader"]
    assert len(leaders) == 1 and leaders[0].turn_ids == ("T1", "T2", "T3", "T4", "T5")
    assert sorted(o.role for o in outcomes).count("absorbed") == 4
