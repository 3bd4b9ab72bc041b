"""The peers' health, shared by every instance through the store (seed 001 §6.3).

``HealthBoard`` keeps each peer's last ``PeerHealth`` in ``peer_health/{peer}`` and a copy in
the process for ``cache_seconds`` (one query of the collection refreshes every peer), so every
instance agrees on which peer is down. A peer with no record is presumed healthy.

* **Probes.** When a peer's record is older than the interval (``CHARTER_PEER_HEALTH_SECONDS``),
  and at this process's first look at a peer ("at start"), ONE refresh runs in a background
  daemon thread: single-flight per process and peer, and a lease document per interval
  (``peer_probe_leases/{peer}-{slot}``, created once: ``Store.create``), so one instance
  probes a peer per interval. It calls ``peer.health()`` (one cheap call, never raises) and
  writes the result. The request path never waits for a probe.
* **Failures.** ``mark_unhealthy`` writes an unhealthy record at once (the router calls it when
  a call fails with ``llm_unavailable`` or ``rate_limit`` after the peer's retries): every
  instance skips the peer from its next cache refresh until a probe says it recovered.

Writing or reading health never fails a call: a store error is logged and the peer is judged
by what the process last knew.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from shared_lib import collections
from shared_lib.ids import new_ulid, utc_now
from shared_lib.observability.logs import log_event
from shared_lib.ports import LLMPeer, PeerHealth, Store

HEALTH = "peer_health"
LEASES = "peer_probe_leases"


def _spawn(work: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=work, name="peer-health-probe", daemon=True)
    thread.start()
    return thread


class HealthBoard:
    """See the module docstring. One per process (the router's); the state lives in the store."""

    def __init__(
        self,
        store: Store,
        peers: Mapping[str, LLMPeer] | None = None,
        *,
        interval: float = 30.0,
        cache_seconds: float | None = None,
        clock: Callable[[], datetime] = utc_now,
        spawn: Callable[[Callable[[], None]], threading.Thread] = _spawn,
    ) -> None:
        self.store = store
        self.peers = dict(peers or {})
        self.interval = interval
        # a few seconds, never longer than half the interval (a recovery is seen within one interval)
        self.cache_seconds = cache_seconds if cache_seconds is not None else min(3.0, interval / 2)
        self.clock = clock
        self._spawn = spawn
        self._holder = new_ulid()  # this process, in the lease documents
        self._lock = threading.Lock()
        self._cache: dict[str, PeerHealth] = {}
        self._read_at: datetime | None = None
        self._seen: set[str] = set()
        self._probing: set[str] = set()
        self._threads: list[threading.Thread] = []

    # -- the request path --------------------------------------------------------------
    def status(self, name: str) -> PeerHealth | None:
        """The peer's last health (``None``: never checked, presumed healthy); may start a probe."""
        record = self.records().get(name)
        self._probe_if_due(name, record)
        return record

    def records(self) -> dict[str, PeerHealth]:
        """Every peer's last health, from the process's copy or (when it is older) the store."""
        now = self.clock()
        with self._lock:
            fresh = self._read_at is not None and now - self._read_at < timedelta(seconds=self.cache_seconds)
            if fresh:
                return dict(self._cache)
        try:
            rows = self.store.query(HEALTH)
        except Exception as exc:  # judge by what we last knew
            log_event("peer_health_read_failed", layer="llm", severity="WARNING", error=type(exc).__name__)
            rows = None
        with self._lock:
            if rows is not None:
                self._cache = {name: health for name, doc in rows if (health := _health(doc)) is not None}
            self._read_at = now
            return dict(self._cache)

    def mark_unhealthy(self, name: str, reason: str) -> None:
        """A call to ``name`` failed after its retries: every instance skips it until a probe heals it."""
        self._write(name, PeerHealth(healthy=False, checked_at=self.clock(), reason=reason), source="call")
        log_event("llm_peer_unhealthy", layer="llm", severity="WARNING", peer=name, reason=reason)

    # -- probes ------------------------------------------------------------------------
    def probe(self, name: str) -> PeerHealth:
        """Probe ``name`` now (``charter peers list --probe``) and record the result."""
        health = self.peers[name].health()
        self._write(name, health, source="probe")
        log_event(
            "llm_peer_health",
            layer="llm",
            severity="INFO" if health.healthy else "WARNING",
            peer=name,
            healthy=health.healthy,
            latency_ms=round(health.latency_ms, 1),
            reason=health.reason,
        )
        return health

    def join(self, timeout: float | None = None) -> None:
        """Wait for the probes under way (tests, a command about to exit)."""
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout)

    def _probe_if_due(self, name: str, record: PeerHealth | None) -> None:
        if name not in self.peers:
            return
        now = self.clock()
        with self._lock:
            first = name not in self._seen
            self._seen.add(name)
            stale = record is None or now - record.checked_at >= timedelta(seconds=self.interval)
            if not (first or stale) or name in self._probing:
                return
            self._probing.add(name)  # single-flight: until this refresh ends
            self._threads = [t for t in self._threads if t.is_alive()]
        self._threads.append(self._spawn(lambda: self._refresh(name)))

    def _refresh(self, name: str) -> None:
        try:
            if self._take_lease(name):
                self.probe(name)
        except Exception as exc:  # a daemon thread: log, never die loudly
            log_event(
                "llm_peer_probe_failed", layer="llm", severity="WARNING", peer=name, error=type(exc).__name__
            )
        finally:
            with self._lock:
                self._probing.discard(name)

    def _take_lease(self, name: str) -> bool:
        """This interval's probe of ``name`` is ours (one create: another instance got it, or we did)."""
        now = self.clock()
        slot = int(now.timestamp() // self.interval)
        doc = {"peer": name, "holder": self._holder, "at": now, "expires_at": now + timedelta(days=1)}
        return self.store.create(collections.path(LEASES, id=f"{name}-{slot}"), doc)

    def _write(self, name: str, health: PeerHealth, *, source: str) -> None:
        with self._lock:
            self._cache[name] = health
        doc: dict[str, Any] = {**health.model_dump(mode="python"), "peer": name, "source": source}
        try:
            self.store.set(collections.path(HEALTH, peer=name), doc)
        except Exception as exc:  # this process still knows; others learn at the next probe
            log_event("peer_health_write_failed", layer="llm", severity="WARNING", error=type(exc).__name__)


def _health(doc: Mapping[str, Any]) -> PeerHealth | None:
    """The record as a ``PeerHealth``; ``None`` for a document that is not one (presumed healthy)."""
    try:
        return PeerHealth.model_validate({k: doc[k] for k in PeerHealth.model_fields if k in doc})
    except ValueError:
        return None
