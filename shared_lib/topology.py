"""The one list of topics, subscriptions and targets (``topology.json``).

Code, the local stack and the Terraform policy tests all read the same file, so a name
exists in exactly one place.

>>> TOPOLOGY.topic("received")
'turns.received'
"""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

TOPOLOGY_FILE = Path(__file__).with_name("topology.json")


class Target(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["http", "cloudevent"]
    public: bool


class Subscription(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    topic: str
    target: str
    ordered: bool
    dead_letter: bool


class Retry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    max_delivery_attempts: int
    minimum_backoff_seconds: int
    maximum_backoff_seconds: int
    ack_deadline_seconds: int


class Topology(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    schema_version: int
    description: str
    topics: dict[str, str]
    targets: dict[str, Target]
    subscriptions: dict[str, Subscription]
    retry: Retry
    bigquery: dict[str, str]

    def topic(self, key: str) -> str:
        """The Pub/Sub topic id for a topic key (``"received"`` -> ``"turns.received"``)."""
        return self.topics[key]

    @cached_property
    def topic_keys(self) -> dict[str, str]:
        """Reverse map: topic id -> key."""
        return {v: k for k, v in self.topics.items()}

    def subscriptions_of(self, topic_key: str) -> dict[str, Subscription]:
        return {n: s for n, s in self.subscriptions.items() if s.topic == topic_key}

    def check(self) -> None:
        """Raise ``ValueError`` when a subscription names an unknown topic or target."""
        for name, sub in self.subscriptions.items():
            if sub.topic not in self.topics:
                raise ValueError(f"subscription {name}: unknown topic key {sub.topic!r}")
            if sub.target not in self.targets:
                raise ValueError(f"subscription {name}: unknown target {sub.target!r}")


def load_topology(path: Path = TOPOLOGY_FILE) -> Topology:
    topology = Topology.model_validate(json.loads(path.read_text(encoding="utf-8")))
    topology.check()
    return topology


TOPOLOGY = load_topology()
