"""The Pub/Sub bus waits for a publish at most ``PUBLISH_TIMEOUT``, then gives up and resumes
the ordering key, so the ingress answers 503 while the channel still waits for its answer and its
retry is not lost (``shared_lib.layers.ingress``)."""

from __future__ import annotations

import concurrent.futures
from typing import Any

import pytest

from shared_lib.adapters.pubsub_bus import PUBLISH_TIMEOUT, PubSubBus


class _Stuck:
    """A publish future that never resolves: ``result`` waits as long as it is told, then times out."""

    def __init__(self, waits: list[float | None]) -> None:
        self.waits = waits

    def result(self, timeout: float | None = None) -> str:
        self.waits.append(timeout)
        raise concurrent.futures.TimeoutError()


class _Publisher:
    def __init__(self) -> None:
        self.waits: list[float | None] = []
        self.resumed: list[tuple[str, str]] = []

    def topic_path(self, project: str, name: str) -> str:
        return f"projects/{project}/topics/{name}"

    def publish(self, path: str, data: bytes, *, ordering_key: str = "", **attributes: Any) -> _Stuck:
        return _Stuck(self.waits)

    def resume_publish(self, path: str, ordering_key: str) -> None:
        self.resumed.append((path, ordering_key))


def test_a_publish_that_never_completes_gives_up_after_the_timeout_and_resumes_its_key() -> None:
    # GIVEN a bus whose publisher never confirms a publish (Pub/Sub unreachable)
    publisher = _Publisher()
    bus = PubSubBus("p", publisher=publisher)  # type: ignore[arg-type]
    # WHEN a turn is published with its conversation as ordering key
    with pytest.raises(concurrent.futures.TimeoutError):
        bus.publish("received", b"{}", {"turn_id": "t1"}, ordering_key="conv-1")
    # THEN it waited the bus's timeout, no longer than a webhook's sender is worth keeping waiting
    assert publisher.waits == [PUBLISH_TIMEOUT] and PUBLISH_TIMEOUT <= 10.0
    # AND the ordering key is resumed, so the retry of that conversation can be published
    assert publisher.resumed == [(bus.topic_path("received"), "conv-1")]


def test_the_timeout_is_the_buses_own_when_given() -> None:
    publisher = _Publisher()
    bus = PubSubBus("p", publisher=publisher, timeout=0.5)  # type: ignore[arg-type]
    with pytest.raises(concurrent.futures.TimeoutError):
        bus.publish("received", b"{}", {})
    assert publisher.waits == [0.5] and publisher.resumed == []
