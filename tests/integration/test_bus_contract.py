"""One contract, every Bus adapter: the in-process bus and Pub/Sub on the emulator."""

from __future__ import annotations

import queue
import uuid
from collections.abc import Callable, Iterator

import pytest

from shared_lib.adapters.inproc_bus import InProcessBus
from shared_lib.delivery.topology import TOPOLOGY

Received = tuple[bytes, dict[str, str]]


@pytest.fixture(params=["inproc", "pubsub"])
def bus_and_receiver(
    request: pytest.FixtureRequest,
) -> Iterator[tuple[object, Callable[[int], list[Received]]]]:
    if request.param == "inproc":
        bus = InProcessBus()
        got: list[Received] = []
        bus.subscribe("proposed", lambda d, a: got.append((d, a)))
        yield bus, lambda n: got[:n]
        return
    request.getfixturevalue("emulator_env")
    from google.cloud import pubsub_v1

    from shared_lib.adapters.pubsub_bus import PubSubBus

    project = f"bus-{uuid.uuid4().hex[:8]}"
    pub, sub = pubsub_v1.PublisherClient(), pubsub_v1.SubscriberClient()
    for topic in TOPOLOGY.topics.values():
        pub.create_topic(name=pub.topic_path(project, topic))
    sub_path = sub.subscription_path(project, "contract")
    sub.create_subscription(
        request={
            "name": sub_path,
            "topic": pub.topic_path(project, TOPOLOGY.topic("proposed")),
            "enable_message_ordering": True,
        }
    )
    inbox: queue.Queue[Received] = queue.Queue()

    def on_message(message):  # type: ignore[no-untyped-def]
        inbox.put((message.data, dict(message.attributes)))
        message.ack()

    future = sub.subscribe(sub_path, on_message)

    def receive(n: int) -> list[Received]:
        return [inbox.get(timeout=30) for _ in range(n)]

    try:
        yield PubSubBus(project), receive
    finally:
        future.cancel()


def test_a_published_message_arrives_with_its_attributes(bus_and_receiver):
    bus, receive = bus_and_receiver
    bus.publish("proposed", b'{"x": 1}', {"turn_id": "T1", "layer": "brain"}, ordering_key="acme/r/u")
    [(data, attrs)] = receive(1)
    assert data == b'{"x": 1}' and attrs["turn_id"] == "T1" and attrs["layer"] == "brain"


def test_one_ordering_key_keeps_its_order(bus_and_receiver):
    bus, receive = bus_and_receiver
    for i in range(20):
        bus.publish("proposed", str(i).encode(), {"i": str(i)}, ordering_key="acme/room/user")
    assert [int(d) for d, _ in receive(20)] == list(range(20))


def test_unknown_topics_are_refused(bus_and_receiver):
    bus, _ = bus_and_receiver
    with pytest.raises((ValueError, KeyError)):
        bus.publish("nope", b"", {}, ordering_key="")
