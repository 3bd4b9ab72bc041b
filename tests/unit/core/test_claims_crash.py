"""Layer claims that survive crashes (``shared_lib.delivery.idempotency``): a short lease renewed by a
heartbeat, a held claim waited for instead of refused, and only the holder may release or
complete. Time is a fake clock that the fake sleep moves forward: nothing here waits."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.delivery import heartbeat as heartbeat_module
from shared_lib.delivery.heartbeat import Heartbeat, _Beater
from shared_lib.delivery.idempotency import Claims, ClaimState, claim_wait, layer_claims

PATH = "orgs/acme/idempotency/T1-brain-0"
LEASE = timedelta(seconds=10)
T0 = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)


class FakeTime:
    """One fake time for the clock, the monotonic clock and sleep (sleep moves it on)."""

    def __init__(self) -> None:
        self.now = T0
        self.sleeps: list[float] = []
        self.on_sleep: list[object] = []

    def clock(self) -> datetime:
        return self.now

    def monotonic(self) -> float:
        return (self.now - T0).total_seconds()

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += timedelta(seconds=seconds)
        for hook in self.on_sleep:
            hook()  # type: ignore[operator]


def claims() -> Claims:
    return layer_claims(MemoryStore())


def await_claim(c: Claims, t: FakeTime) -> object:
    return c.await_claim(
        PATH, clock=t.clock, lease=LEASE, wait=claim_wait(LEASE), sleep=t.sleep, monotonic=t.monotonic
    )


def test_a_dead_workers_claim_is_taken_over_by_the_waiting_redelivery():
    # GIVEN a worker that claimed the step and was killed (no heartbeat renews its lease)
    c, t = claims(), FakeTime()
    dead = c.claim(PATH, now=t.clock(), lease=LEASE)
    # WHEN the redelivery arrives a second later
    t.now += timedelta(seconds=1)
    got = await_claim(c, t)
    # THEN it waited (never answering "busy") until the lease lapsed, then took the claim over
    assert got.state is ClaimState.ACQUIRED and got.took_over and got.attempts == 2  # type: ignore[attr-defined]
    assert got.holder != dead.holder  # type: ignore[attr-defined]
    assert t.now >= T0 + LEASE and sum(t.sleeps) <= claim_wait(LEASE).total_seconds()


def test_a_waiting_redelivery_sees_the_live_holder_complete_and_is_a_duplicate():
    # GIVEN a live worker holding the claim, which completes while the redelivery waits
    c, t = claims(), FakeTime()
    live = c.claim(PATH, now=t.clock(), lease=LEASE)
    t.on_sleep.append(lambda: c.complete(PATH, now=t.clock(), result={"outcome": "ok"}, holder=live.holder))
    # WHEN the redelivery claims
    got = await_claim(c, t)
    # THEN it finds the step completed (its push is acknowledged as a duplicate)
    assert got.state is ClaimState.COMPLETED and got.result == {"outcome": "ok"}  # type: ignore[attr-defined]


def test_renewal_keeps_a_live_workers_claim_past_its_first_lease():
    # GIVEN a live worker whose heartbeat renews the lease on every poll of the waiting redelivery
    c, t = claims(), FakeTime()
    live = c.claim(PATH, now=t.clock(), lease=LEASE)
    beat = Heartbeat(c, PATH, holder=live.holder, lease=LEASE, clock=t.clock)
    t.on_sleep.append(beat.beat)
    # WHEN a redelivery waits for it
    got = await_claim(c, t)
    # THEN it never took the live worker's claim: after the whole wait (beyond the first lease) it is BUSY
    assert got.state is ClaimState.BUSY  # type: ignore[attr-defined]
    assert t.now > T0 + LEASE and not beat.lost and beat.beats > 0
    stored = c.store.get(PATH)
    assert stored is not None and stored["holder"] == live.holder and stored["attempts"] == 1


def test_a_lease_longer_than_the_wait_is_answered_busy_at_once():
    # GIVEN a claim whose lease runs far beyond the wait (a record of a release with 60 s leases)
    c, t = claims(), FakeTime()
    c.claim(PATH, now=t.clock(), lease=timedelta(minutes=5))
    # WHEN a redelivery claims THEN it does not sit out a wait that cannot end in a takeover
    assert await_claim(c, t).state is ClaimState.BUSY  # type: ignore[attr-defined]
    assert t.sleeps == []


def test_a_stale_holder_can_neither_release_nor_complete_the_new_holders_claim():
    # GIVEN a worker that stalled past its lease and whose claim another delivery took over
    c, t = claims(), FakeTime()
    stale = c.claim(PATH, now=t.clock(), lease=LEASE)
    t.now += LEASE + timedelta(seconds=1)
    current = c.claim(PATH, now=t.clock(), lease=LEASE)
    assert current.state is ClaimState.ACQUIRED
    # WHEN the stale worker fails (release) or finishes (complete) with its token
    c.release(PATH, holder=stale.holder)
    completed = c.complete(PATH, now=t.clock(), result={"outcome": "stale"}, holder=stale.holder)
    # THEN the current holder's claim is untouched
    assert completed is False
    stored = c.store.get(PATH)
    assert stored is not None and stored["status"] == "in_progress" and stored["holder"] == current.holder
    # AND the current holder completes it
    assert c.complete(PATH, now=t.clock(), result={"outcome": "ok"}, holder=current.holder) is True
    assert c.claim(PATH, now=t.clock(), lease=LEASE).result == {"outcome": "ok"}
    # AND a completed claim is not overwritten by a late holder either
    assert c.complete(PATH, now=t.clock(), result={"outcome": "late"}, holder=current.holder) is False


def test_a_heartbeat_whose_claim_was_taken_over_stops_and_says_so():
    c, t = claims(), FakeTime()
    held = c.claim(PATH, now=t.clock(), lease=LEASE)
    beat = Heartbeat(c, PATH, holder=held.holder, lease=LEASE, clock=t.clock)
    t.now += LEASE * 2  # the worker stalled: no beat for two leases
    c.claim(PATH, now=t.clock(), lease=LEASE)  # taken over
    assert beat.beat() is False and beat.lost
    assert beat.beat() is False  # and it does not try again


def test_the_heartbeat_thread_renews_while_the_block_runs():
    # GIVEN a claim and a heartbeat with a short interval (the clock moves on at every renewal)
    c, t = claims(), FakeTime()
    held = c.claim(PATH, now=t.clock(), lease=LEASE)
    renewed = threading.Event()

    def clock() -> datetime:
        t.now += timedelta(seconds=4)
        if t.now > T0 + LEASE:
            renewed.set()
        return t.now

    # WHEN the block runs until two renewals happened
    with Heartbeat(c, PATH, holder=held.holder, lease=LEASE, clock=clock, interval=0.01) as beat:
        assert renewed.wait(timeout=30)
    # THEN the lease runs from the last renewal, past the first lease, and the claim is still ours
    stored = c.store.get(PATH)
    assert stored is not None and stored["lease_until"] > T0 + LEASE and stored["holder"] == held.holder
    assert beat.beats >= 2 and not beat.lost


def _idle_beater(idle: float, monkeypatch: object) -> tuple[_Beater, list[str]]:
    """A beater of its own whose thread went idle (nothing held), its wake-up calls counted."""
    monkeypatch.setattr(heartbeat_module, "IDLE_WAKE", idle)  # type: ignore[attr-defined]
    beater, calls = _Beater(), []
    notify = beater._cond.notify_all

    def counted() -> None:
        calls.append("notify")
        notify()

    beater._cond.notify_all = counted  # type: ignore[method-assign]
    first = Heartbeat(claims(), PATH, holder="h", lease=LEASE, clock=FakeTime().clock, interval=600)
    beater.add(first)
    beater.remove(first, wait=1)
    pause, give_up = threading.Event(), time.monotonic() + 30
    while beater._wakes_at == 0.0 or beater._due:  # until the thread has gone to sleep on its own
        assert time.monotonic() < give_up, "the heartbeat thread never went idle"
        pause.wait(0.001)
    calls.clear()
    return beater, calls


def test_a_claim_due_after_the_idle_threads_own_wake_up_does_not_wake_it(monkeypatch):
    # GIVEN the heartbeat thread idle, waking by itself within 60 s
    beater, calls = _idle_beater(60, monkeypatch)
    c, t = claims(), FakeTime()
    held = c.claim(PATH, now=t.clock(), lease=LEASE)
    # WHEN a stage's claim, due in 600 s, is held and let go (a greeting's stage)
    beat = Heartbeat(c, PATH, holder=held.holder, lease=LEASE, clock=t.clock, interval=600)
    beater.add(beat)
    beater.remove(beat, wait=1)
    # THEN nothing woke the thread: no thread switch a stage
    assert calls == [] and beat.beats == 0


def test_a_claim_due_before_the_idle_threads_wake_up_wakes_it_and_is_renewed(monkeypatch):
    # GIVEN the heartbeat thread idle for the next hour
    beater, calls = _idle_beater(3600, monkeypatch)
    c, t = claims(), FakeTime()
    held = c.claim(PATH, now=t.clock(), lease=LEASE)
    renewed = threading.Event()

    def clock() -> datetime:
        t.now += timedelta(seconds=4)
        renewed.set()
        return t.now

    # WHEN a claim due in 10 ms is held
    beat = Heartbeat(c, PATH, holder=held.holder, lease=LEASE, clock=clock, interval=0.01)
    beater.add(beat)
    try:
        # THEN the thread is woken for it and renews it long before its own hour is up
        assert renewed.wait(timeout=30)
    finally:
        beater.remove(beat, wait=5)
    assert calls and beat.beats >= 1 and not beat.lost
