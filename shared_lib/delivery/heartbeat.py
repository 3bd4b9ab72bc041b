"""A held claim's heartbeat: its lease renewed while the stage works (``layers.base``).

Every claimed stage holds its claim for a lease (``CHARTER_LEASE_SECONDS``) and renews it every
third of that while it runs, so a stage slower than one lease is not taken over by a
redelivery; a worker that dies stops renewing, and the lease runs out for the next claimant.
The renewals of every held claim of a process run on one thread (``_Beater``).
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from shared_lib.delivery.idempotency import Claims
from shared_lib.observability.logs import log_event


class Heartbeat:
    """Renews a held claim every ``lease / 3`` while the block runs (on the process's one
    heartbeat thread, ``_Beater``).

    ``lost`` turns true when a renewal finds the claim no longer ours (taken over after a
    stall longer than the lease); the work goes on, its result is a harmless duplicate.

    >>> from datetime import UTC, datetime
    >>> from shared_lib.adapters.memory_store import MemoryStore
    >>> from shared_lib.delivery.idempotency import layer_claims
    >>> claims, now = layer_claims(MemoryStore()), datetime(2026, 1, 1, tzinfo=UTC)
    >>> held = claims.claim("orgs/a/idempotency/t1", now=now, lease=timedelta(seconds=9))
    >>> beat = Heartbeat(claims, "orgs/a/idempotency/t1", holder=held.holder, lease=timedelta(seconds=9),
    ...                  clock=lambda: now + timedelta(seconds=5))
    >>> beat.beat(), claims.store.get("orgs/a/idempotency/t1")["lease_until"] == now + timedelta(seconds=14)
    (True, True)
    """

    def __init__(
        self,
        claims: Claims,
        path: str,
        *,
        holder: str,
        lease: timedelta,
        clock: Callable[[], datetime],
        interval: float | None = None,
        held_until: datetime | None = None,
    ) -> None:
        self.claims, self.path, self.holder, self.lease, self.clock = claims, path, holder, lease, clock
        self.interval = interval if interval is not None else max(lease.total_seconds() / 3, 0.05)
        self.lost = False
        # the lease this holder last wrote (at the claim, then at each renewal); None once lost
        self.held_until: datetime | None = held_until
        self.beats = 0
        self._stop = threading.Event()

    def beat(self) -> bool:
        """Renew once; ``False`` once the claim is no longer this holder's."""
        if self.lost:
            return False
        now = self.clock()
        try:
            held = self.claims.renew(self.path, now=now, lease=self.lease, holder=self.holder)
        except Exception as exc:  # a store hiccup: the next beat tries again, within the lease
            log_event("claim_renew_failed", layer="claims", severity="WARNING", error=type(exc).__name__)
            return True
        self.beats += 1
        if held:
            self.held_until = now + self.lease
        else:
            self.lost, self.held_until = True, None
            log_event("claim_lost", layer="claims", severity="WARNING", path=self.path)
        return held

    def __enter__(self) -> Heartbeat:
        _BEATER.add(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        _BEATER.remove(self, wait=self.interval + 5)


IDLE_WAKE = 1.0  # seconds an idle heartbeat thread sleeps before it looks again


class _Beater:
    """The process's one heartbeat thread: it renews every held claim when its interval is due.

    A claimed stage used to start a thread of its own for its heartbeat (four a greeting); the
    start cost more than the stage's work on the in-process path. Renewals now run one after
    another on one daemon thread, started on the first claim (after any fork): a renewal is one
    write, due every ``lease / 3`` (20 s for the default lease), so one slow renewal delays the
    others by its own time, well within their leases. ``remove`` returns once no renewal of
    that heartbeat runs (none starts after it), as the joined thread did.
    """

    def __init__(self) -> None:
        self._due: list[tuple[float, int, Heartbeat]] = []
        self._order = itertools.count()
        self._cond = threading.Condition()
        self._beating: Heartbeat | None = None
        self._thread: threading.Thread | None = None
        # when the thread wakes next by itself; an earlier renewal has to wake it
        self._wakes_at = 0.0

    def add(self, beat: Heartbeat) -> None:
        due = time.monotonic() + beat.interval
        with self._cond:
            heapq.heappush(self._due, (due, next(self._order), beat))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="claim heartbeats", daemon=True)
                self._thread.start()
            elif due < self._wakes_at:
                self._cond.notify_all()

    def remove(self, beat: Heartbeat, *, wait: float) -> None:
        deadline = time.monotonic() + wait
        with self._cond:
            self._due = [d for d in self._due if d[2] is not beat]
            heapq.heapify(self._due)
            while self._beating is beat and (left := deadline - time.monotonic()) > 0:
                self._cond.wait(left)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._due or self._due[0][0] > time.monotonic():
                    # with nothing held it still wakes every IDLE_WAKE seconds, so a claim added
                    # meanwhile and due later than that needs no wake-up call (a thread switch
                    # a claimed stage, saved on the in-process path)
                    self._wakes_at = self._due[0][0] if self._due else time.monotonic() + IDLE_WAKE
                    self._cond.wait(max(self._wakes_at - time.monotonic(), 0.0))
                self._wakes_at = 0.0
                _, _, beat = heapq.heappop(self._due)
                if beat._stop.is_set():
                    continue
                self._beating = beat
            held = False
            try:
                held = beat.beat()
            except Exception as exc:  # never the thread's end: the other claims still need it
                log_event("claim_renew_failed", layer="claims", severity="WARNING", error=type(exc).__name__)
                held = True
            finally:
                with self._cond:
                    self._beating = None
                    if held and not beat._stop.is_set():
                        heapq.heappush(self._due, (time.monotonic() + beat.interval, next(self._order), beat))
                    self._cond.notify_all()


_BEATER = _Beater()
