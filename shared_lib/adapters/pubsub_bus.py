"""Pub/Sub ``Bus`` (cloud and emulator: honours ``PUBSUB_EMULATOR_HOST``).

Publishing with an ordering key keeps one conversation's turns in order. After a failed
ordered publish the client pauses that key; we resume it so the next turn can go, and
raise so that the push handler answers 5xx and Pub/Sub redelivers the input.
"""

from __future__ import annotations

from google.cloud import pubsub_v1  # type: ignore[attr-defined]

from shared_lib import tracing
from shared_lib.delivery.topology import TOPOLOGY, Topology

# How long a publish may take before the caller is told it failed: the ingress answers 503 and the
# channel retries, a push handler answers 5xx and Pub/Sub redelivers. A publish takes tens of
# milliseconds (the client retries a transient error within it); a webhook sender stops waiting
# after a few seconds (Slack after 3), so waiting 30, as before, only held an ingress request slot
# through a Pub/Sub outage, long after the channel had given up and sent its retry.
PUBLISH_TIMEOUT = 10.0


class PubSubBus:
    def __init__(
        self,
        project: str,
        *,
        topology: Topology = TOPOLOGY,
        timeout: float = PUBLISH_TIMEOUT,
        publisher: pubsub_v1.PublisherClient | None = None,
    ) -> None:
        self.project = project
        self.topology = topology
        self.timeout = timeout
        self.publisher = publisher or pubsub_v1.PublisherClient(
            publisher_options=pubsub_v1.types.PublisherOptions(enable_message_ordering=True),
            batch_settings=pubsub_v1.types.BatchSettings(max_latency=0.001),
        )
        self._paths: dict[str, str] = {
            key: self.publisher.topic_path(project, name) for key, name in topology.topic_ids.items()
        }

    def topic_path(self, topic_key: str) -> str:
        return self._paths[topic_key]

    def publish(self, topic_key: str, data: bytes, attributes: dict[str, str], ordering_key: str = "") -> str:
        path = self._paths[topic_key]
        attributes = tracing.with_context(attributes)
        try:
            future = self.publisher.publish(path, data, ordering_key=ordering_key, **attributes)
            message_id: str = future.result(timeout=self.timeout)
            return message_id
        except Exception:
            if ordering_key:
                self.publisher.resume_publish(path, ordering_key)
            raise
