"""In-process ``Bus``: the embedded peer of Pub/Sub.

Subscribers are plain callables ``(data, attributes) -> None`` registered per topic key.
Delivery is synchronous and breadth-first through one queue, so a chain of layers runs
as a loop, not as recursion. Like Pub/Sub, a subscriber that raises is retried up to
``max_delivery_attempts`` and then the message goes to the dead-letter topic, and a
subscription's filter (``delivery.filters``) keeps what it does not match from its subscriber.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from shared_lib import tracing
from shared_lib.delivery.filters import Predicate, compile_filter
from shared_lib.delivery.topology import TOPOLOGY, Topology

log = logging.getLogger(__name__)
Subscriber = Callable[[bytes, dict[str, str]], object]


@dataclass
class _Pending:
    topic_key: str
    data: bytes
    attributes: dict[str, str]
    ordering_key: str
    subscriber: Subscriber
    subscription: str
    dead_letter: bool
    attempts: int = 0


@dataclass
class InProcessBus:
    topology: Topology = TOPOLOGY
    max_delivery_attempts: int = TOPOLOGY.retry.max_delivery_attempts
    published: list[tuple[str, bytes, dict[str, str], str]] = field(default_factory=list)
    _subs: dict[str, list[tuple[str, Subscriber, bool, Predicate | None]]] = field(default_factory=dict)
    _queue: deque[_Pending] = field(default_factory=deque)
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _draining: bool = False
    _counter: int = 0

    def subscribe(
        self,
        topic_key: str,
        subscriber: Subscriber,
        *,
        name: str = "",
        dead_letter: bool = True,
        filter_expr: str = "",
    ) -> None:
        if topic_key not in self.topology.topic_ids:
            raise ValueError(f"unknown topic key {topic_key!r}")
        matches = compile_filter(filter_expr)
        self._subs.setdefault(topic_key, []).append(
            (name or f"{topic_key}-sub", subscriber, dead_letter, matches)
        )

    def publish(self, topic_key: str, data: bytes, attributes: dict[str, str], ordering_key: str = "") -> str:
        if topic_key not in self.topology.topic_ids:
            raise ValueError(f"unknown topic key {topic_key!r}")
        attributes = tracing.with_context(attributes)
        with self._lock:
            self._counter += 1
            self.published.append((topic_key, data, dict(attributes), ordering_key))
            for name, sub, dlq, matches in self._subs.get(topic_key, []):
                if matches is None or matches(attributes):
                    self._queue.append(
                        _Pending(topic_key, data, dict(attributes), ordering_key, sub, name, dlq)
                    )
            message_id = str(self._counter)
            if self._draining:
                return message_id
            self._draining = True
        try:
            self._drain()
        finally:
            with self._lock:
                self._draining = False
        return message_id

    def _drain(self) -> None:
        while True:
            with self._lock:
                if not self._queue:
                    return
                item = self._queue.popleft()
            self._deliver(item)

    def _deliver(self, item: _Pending) -> None:
        while True:
            item.attempts += 1
            attrs = dict(item.attributes, delivery_attempt=str(item.attempts))
            try:
                item.subscriber(item.data, attrs)
                return
            except Exception as exc:  # a subscriber failure is a nack, as on Pub/Sub
                log.warning("delivery %s attempt %d failed: %s", item.subscription, item.attempts, exc)
                if item.attempts >= self.max_delivery_attempts:
                    if item.dead_letter:
                        dl_attrs = dict(
                            item.attributes,
                            CloudPubSubDeadLetterSourceSubscription=item.subscription,
                            CloudPubSubDeadLetterSourceDeliveryCount=str(item.attempts),
                        )
                        self.publish("deadletter", item.data, dl_attrs, "")
                    return
