"""The health board: one record per peer in the store that every instance reads (cached a few
seconds), probes off the request path, one per interval across instances, failures at once."""

from __future__ import annotations

import threading
from collections.abc import Callable

from peer_fakes import Clock, FakePeer

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.peers.health import HealthBoard


class Spawner:
    """Records the probes a board starts instead of running them (run them with ``run``)."""

    def __init__(self) -> None:
        self.pending: list[Callable[[], None]] = []

    def __call__(self, work: Callable[[], None]) -> threading.Thread:
        self.pending.append(work)
        return threading.Thread(target=lambda: None)  # never started: not alive

    def run(self) -> int:
        n = len(self.pending)
        for work in self.pending:
            work()
        self.pending.clear()
        return n


def boards(n: int = 2, interval: float = 30):
    """``n`` boards (instances) over one store and one clock, sharing the peer "a"."""
    store, clock, peer = MemoryStore(), Clock(), FakePeer("a")
    spawners = [Spawner() for _ in range(n)]
    made = [HealthBoard(store, {"a": peer}, interval=interval, clock=clock, spawn=s) for s in spawners]
    return made, spawners, clock, peer, store


def test_a_peer_never_checked_is_presumed_healthy_and_its_first_look_starts_one_probe():
    (board,), (spawner,), _, peer, _ = boards(1)
    assert board.status("a") is None
    assert board.status("a") is None
    # THEN the request path did not probe; one background probe was started ("at start")
    assert peer.probes == 0 and spawner.run() == 1 and peer.probes == 1
    assert board.records()["a"].healthy


def test_a_failure_marked_on_one_instance_is_seen_by_another_after_its_cache_expires():
    (one, two), _, clock, _, _ = boards(2)
    assert two.status("a") is None  # read (and cached) before the failure
    one.mark_unhealthy("a", "llm_unavailable: APIStatusError status=529")
    assert two.status("a") is None  # still its cached copy
    clock.advance(two.cache_seconds)
    record = two.status("a")
    assert record is not None and not record.healthy and "529" in record.reason


def test_a_stale_record_starts_one_probe_across_instances_and_the_result_is_shared():
    (one, two), (s1, s2), clock, peer, _ = boards(2, interval=30)
    one.mark_unhealthy("a", "llm_unavailable")
    clock.advance(5)
    one.status("a"), two.status("a")  # first looks: both start a probe
    s1.run(), s2.run()
    # THEN only one instance probed within this interval (the lease)
    assert peer.probes == 1
    clock.advance(3)
    assert two.status("a").healthy and one.status("a").healthy  # type: ignore[union-attr]
    # WHEN the record grows older than the interval
    peer.healthy = False
    clock.advance(30)
    one.status("a")
    two.status("a")
    s1.run(), s2.run()
    # THEN one more probe ran, and its answer is what every instance reads
    assert peer.probes == 2
    clock.advance(3)
    assert not two.status("a").healthy  # type: ignore[union-attr]


def test_a_fresh_record_starts_no_probe_after_the_first_look():
    (board,), (spawner,), clock, peer, _ = boards(1, interval=30)
    board.status("a")
    spawner.run()
    clock.advance(10)
    board.status("a")
    assert spawner.pending == [] and peer.probes == 1


def test_one_probe_in_flight_per_process():
    store, clock, peer = MemoryStore(), Clock(), FakePeer("a")
    release = threading.Event()
    started: list[threading.Thread] = []

    def spawn(work):
        thread = threading.Thread(target=lambda: (release.wait(2), work()), daemon=True)
        thread.start()
        started.append(thread)
        return thread

    board = HealthBoard(store, {"a": peer}, interval=30, clock=clock, spawn=spawn)
    board.mark_unhealthy("a", "x")
    clock.advance(31)  # stale
    for _ in range(5):
        board.status("a")
        clock.advance(board.cache_seconds)
    assert len(started) == 1
    release.set()
    board.join(2)
    assert peer.probes == 1


def test_the_probe_writes_the_peer_health_document():
    (board,), _, _, _, store = boards(1)
    health = board.probe("a")
    doc = store.get("peer_health/a")
    assert (
        doc is not None and doc["healthy"] is True and doc["source"] == "probe" and doc["latency_ms"] == 12.0
    )
    assert health.healthy


def test_a_store_that_fails_leaves_the_last_known_health():
    (board,), _, clock, _, store = boards(1)
    board.mark_unhealthy("a", "down")
    clock.advance(board.cache_seconds)

    def broken(*args, **kwargs):
        raise OSError("store down")

    store.query = broken  # type: ignore[method-assign]
    record = board.records()["a"]
    assert not record.healthy and record.reason == "down"
