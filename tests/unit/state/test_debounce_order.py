"""The debounce buffer's order and its one exception (``features.debounce.state``): texts are
joined in the order they were typed, whatever order the webhooks came in, and an answer to a
pending confirmation is never gathered: it answers at once, absorbs nothing, is absorbed by
nothing, and splits the burst in two. The window follows the sender's rhythm, recorded by the
batch's claim."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from clock_fakes import Clock

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.brain.vault import vault_cipher
from shared_lib.features.debounce import state as debounce
from shared_lib.features.debounce import state_pace

T0 = datetime(2026, 11, 23, 13, 40, tzinfo=UTC)  # a Monday, 22:40 in Tokyo
WINDOW = 2.0
CIPHER = vault_cipher("test", None)
assert CIPHER is not None
PATH = debounce.buffer_path("acme", "slack", "C0123", "U042")
PACE = state_pace.pace_path("acme", debounce.buffer_key("slack", "C0123", "U042"))


def add(store, n: int, text: str, *, sent: float, arrived: float, prompt: bool = False) -> None:
    assert debounce.append(
        store,
        PATH,
        entry_id=f"e{n}",
        turn_id=f"T{n}",
        message_id=f"m{n}",
        text=text,
        now=T0 + timedelta(seconds=arrived),
        cipher=CIPHER,
        sent=T0 + timedelta(seconds=sent),
        prompt=prompt,
    )


def settle(store, clock, n: int, window=WINDOW) -> debounce.Settled:
    return debounce.settle(
        store, PATH, f"T{n}", window_seconds=window, clock=clock, sleep=clock.sleep, cipher=CIPHER, pace=PACE
    )


def test_given_webhooks_delivered_out_of_order_then_the_texts_are_joined_in_typing_order():
    # GIVEN a Monday-night burst typed in this order, delivered 3-1-2 (a provider's retries)
    store, clock = MemoryStore(), Clock(T0 + timedelta(seconds=2))
    add(store, 3, "よろしくお願いします🙏", sent=1.2, arrived=1.3)
    add(store, 1, "田中さんに明日までに", sent=0.0, arrived=1.5)
    add(store, 2, "見積書作成のタスクをお願い", sent=0.6, arrived=1.6)
    # WHEN their turns settle in the order they arrived
    results = {n: settle(store, clock, n) for n in (3, 1, 2)}
    # THEN the last typed leads, and its text reads as typed
    assert results[3].role == "leader"
    assert results[3].texts == (
        "田中さんに明日までに",
        "見積書作成のタスクをお願い",
        "よろしくお願いします🙏",
    )
    assert results[3].turn_ids == ("T1", "T2", "T3")
    assert (results[1].role, results[2].role) == ("absorbed", "absorbed")


def test_given_two_lines_sent_in_the_same_second_then_arrival_breaks_the_tie():
    store, clock = MemoryStore(), Clock(T0 + timedelta(seconds=4))
    add(store, 1, "あ、あと", sent=0.0, arrived=0.2)
    add(store, 2, "資料もｵﾈｶﾞｲしますー", sent=0.0, arrived=0.4)
    results = {n: settle(store, clock, n) for n in (1, 2)}
    assert results[2].texts == ("あ、あと", "資料もｵﾈｶﾞｲしますー")


def test_given_a_yes_to_a_pending_confirmation_then_it_is_answered_at_once_and_never_joined():
    # GIVEN 「はい」 to the question, then at once 「あ、あと田中さんにも共有で」
    store, clock = MemoryStore(), Clock(T0 + timedelta(seconds=0.5))
    add(store, 1, "はい", sent=0.0, arrived=0.1, prompt=True)
    add(store, 2, "あ、あと田中さんにも共有で", sent=0.4, arrived=0.5)
    # WHEN the answer's turn settles THEN it goes on at once, alone, its text untouched
    answer = settle(store, clock, 1, window=lambda: 5.0)
    assert answer == debounce.Settled("answer", turn_ids=("T1",), message_ids=("m1",))
    assert clock.slept == []
    # and the message after it is a batch of its own
    after = settle(store, clock, 2)
    assert (after.role, after.texts) == ("leader", ("あ、あと田中さんにも共有で",))
    # the answer's text was never kept
    kept = {e["id"]: e for e in debounce.entries(store, PATH)}
    assert kept["e1"]["text"] is None and kept["e1"]["prompt"] is True


def test_a_yes_absorbs_nothing_before_it_and_splits_the_burst():
    # GIVEN 「ちょっと待って」 typed before 「いいえ」, and a new request after it
    store, clock = MemoryStore(), Clock(T0 + timedelta(seconds=0.3))
    add(store, 1, "ちょっと待って", sent=0.0, arrived=0.1)
    add(store, 2, "いいえ", sent=0.2, arrived=0.2, prompt=True)
    add(store, 3, "やっぱり佐藤さん宛てで作って", sent=0.3, arrived=0.3)
    # WHEN the turns settle in the order they arrived
    first = settle(store, clock, 1)
    answer = settle(store, clock, 2)
    last = settle(store, clock, 3)
    # THEN three answers: the message before the no, the no, the request after it
    assert (first.role, first.texts) == ("leader", ("ちょっと待って",))
    assert answer.role == "answer"
    assert (last.role, last.texts) == ("leader", ("やっぱり佐藤さん宛てで作って",))


def test_a_message_absorbed_before_the_barrier_was_written_is_never_lost():
    # GIVEN T1 absorbed into T3 while the answer typed between them was not yet buffered
    store, clock = MemoryStore(), Clock(T0 + timedelta(seconds=0.5))
    add(store, 1, "見積の件", sent=0.0, arrived=0.1)
    add(store, 3, "来週でおねがい", sent=0.4, arrived=0.3)
    assert settle(store, clock, 1).role == "absorbed"
    add(store, 2, "はい", sent=0.2, arrived=0.45, prompt=True)
    # WHEN T3 leads THEN it still carries T1's words (arrived before it: its turn came first)
    last = settle(store, clock, 3)
    assert last.texts == ("見積の件", "来週でおねがい")


def test_the_leaders_claim_records_the_batch_in_the_senders_pace():
    store, clock = MemoryStore(), Clock(T0 + timedelta(seconds=1))
    add(store, 1, "田中さんに明日までに", sent=0.0, arrived=0.1)
    add(store, 2, "見積書作成のタスクをお願い", sent=0.8, arrived=0.9)
    for n in (1, 2):
        settle(store, clock, n)
    assert state_pace.times_of(store.get(PACE)) == [T0, T0 + timedelta(seconds=0.8)]
    # a redelivered leader records nothing twice
    settle(store, clock, 2)
    assert len(state_pace.times_of(store.get(PACE))) == 2


def test_a_window_given_as_the_senders_rhythm_is_read_once_and_reported():
    store, clock = MemoryStore(), Clock(T0 + timedelta(seconds=0.2))
    add(store, 1, "明日の会議、10時～に変更になりました", sent=0.0, arrived=0.1)
    reads: list[int] = []

    def rhythm() -> float:
        reads.append(1)
        return 4.5

    led = settle(store, clock, 1, window=rhythm)
    assert reads == [1] and led.window == 4.5
    assert led.section()["window_ms"] == 4500.0
    assert clock.now == T0 + timedelta(seconds=4.6)
