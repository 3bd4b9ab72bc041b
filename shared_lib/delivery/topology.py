"""The one list of topics, subscriptions and targets (``topology.json``).

Code, the local stack and the Terraform policy tests all read the same file, so a name
exists in exactly one place.

>>> TOPOLOGY.topic("received")
'turns.received'

Smoke turns travel the twins of the chain topics (``smoke`` in the file): ``route`` is the one
place that picks the twin, and every publisher of a turn's messages asks it.

>>> TOPOLOGY.route("received", smoke=True), TOPOLOGY.topic(TOPOLOGY.route("received", smoke=True))
('smoke.received', 'smoke.turns.received')
"""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from shared_lib.delivery.filters import compile_filter

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
    # Pub/Sub's filter on the message's attributes (``delivery.filters``): what it does not match
    # is never pushed. Empty: every message.
    filter: str = ""


class Retry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    max_delivery_attempts: int
    minimum_backoff_seconds: int
    maximum_backoff_seconds: int
    ack_deadline_seconds: int


class SmokeSet(BaseModel):
    """The smoke twins: which topic keys have one, and how twin names are derived."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    description: str
    topic_prefix: str
    subscription_prefix: str
    topics: list[str]


class Topology(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    schema_version: int
    description: str
    topics: dict[str, str]
    targets: dict[str, Target]
    subscriptions: dict[str, Subscription]
    smoke: SmokeSet
    retry: Retry
    bigquery: dict[str, str]

    def topic(self, key: str) -> str:
        """The Pub/Sub topic id for a topic key (``"received"`` -> ``"turns.received"``), twins included."""
        return self.topic_ids[key]

    @cached_property
    def smoke_topics(self) -> dict[str, str]:
        """Twin key -> twin topic id (``"smoke.received"`` -> ``"smoke.turns.received"``)."""
        prefix = self.smoke.topic_prefix
        return {prefix + key: prefix + self.topics[key] for key in self.smoke.topics}

    @cached_property
    def smoke_subscriptions(self) -> dict[str, Subscription]:
        """The twin of every subscription on a twinned topic: same target, ordering, dead letters."""
        return {
            self.smoke.subscription_prefix + name: sub.model_copy(
                update={"topic": self.smoke.topic_prefix + sub.topic}
            )
            for name, sub in self.subscriptions.items()
            if sub.topic in self.smoke.topics
        }

    @cached_property
    def all_subscriptions(self) -> dict[str, Subscription]:
        """The chain's subscriptions and their smoke twins."""
        return {**self.subscriptions, **self.smoke_subscriptions}

    @cached_property
    def topic_ids(self) -> dict[str, str]:
        """Every topic a bus may publish to: key -> topic id, the chain's and their smoke twins."""
        return {**self.topics, **self.smoke_topics}

    @cached_property
    def topic_keys(self) -> dict[str, str]:
        """Reverse map: topic id -> key."""
        return {v: k for k, v in self.topic_ids.items()}

    def route(self, key: str, *, smoke: bool) -> str:
        """The topic key a message of a turn goes to: the smoke twin of ``key`` for a smoke turn.

        A key without a twin (``deadletter``) is the same for every turn.
        """
        return self.smoke.topic_prefix + key if smoke and key in self.smoke.topics else key

    def subscriptions_of(self, topic_key: str) -> dict[str, Subscription]:
        return {n: s for n, s in self.subscriptions.items() if s.topic == topic_key}

    def check(self) -> None:
        """Raise ``ValueError`` when a subscription names an unknown topic or target."""
        for name, sub in self.subscriptions.items():
            if sub.topic not in self.topics:
                raise ValueError(f"subscription {name}: unknown topic key {sub.topic!r}")
            if sub.target not in self.targets:
                raise ValueError(f"subscription {name}: unknown target {sub.target!r}")
            compile_filter(sub.filter)  # a FilterError (a ValueError) names the subscription's filter
        unknown = [key for key in self.smoke.topics if key not in self.topics]
        if unknown:
            raise ValueError(f"smoke: unknown topic keys {unknown}")
        clashes = (set(self.smoke_topics) & set(self.topics)) | (
            set(self.smoke_subscriptions) & set(self.subscriptions)
        )
        if clashes:
            raise ValueError(f"smoke: twin names clash with chain names {sorted(clashes)}")


def load_topology(path: Path = TOPOLOGY_FILE) -> Topology:
    topology = Topology.model_validate(json.loads(path.read_text(encoding="utf-8")))
    topology.check()
    return topology


TOPOLOGY = load_topology()
