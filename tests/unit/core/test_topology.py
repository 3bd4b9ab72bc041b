"""topology.json is consistent and is what the runtime wires."""

from shared_lib.delivery.topology import TOPOLOGY
from shared_lib.wiring.composition import LAYERS


def test_every_subscription_names_a_known_topic_and_target():
    TOPOLOGY.check()
    assert set(TOPOLOGY.topics) >= {
        "received",
        "contextualized",
        "proposed",
        "guarded",
        "authorized",
        "executed",
        "completed",
        "events",
        "shadow",
        "deadletter",
    }


def test_each_layer_publishes_to_the_topic_the_next_layer_reads():
    chain = {sub.target: sub.topic for sub in TOPOLOGY.subscriptions.values()}
    for target, layer in LAYERS.items():
        if layer.output_topic is None:
            continue
        readers = [s.target for s in TOPOLOGY.subscriptions.values() if s.topic == layer.output_topic]
        assert readers, f"{target} publishes to {layer.output_topic} which nobody reads"
    assert chain["context"] == "received" and chain["responder"] == "executed"
