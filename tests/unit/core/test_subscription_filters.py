"""Subscription filters (``delivery.filters``): Pub/Sub's filter language as the topology uses it,
the embedded bus applying it, and a topology whose filter cannot be read refused at load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shared_lib.adapters.inproc_bus import InProcessBus
from shared_lib.delivery.filters import FilterError, compile_filter
from shared_lib.delivery.topology import TOPOLOGY, TOPOLOGY_FILE, load_topology
from shared_lib.layers.observer import STREAMED_KINDS


def matches(text: str, attrs: dict[str, str]) -> bool:
    pred = compile_filter(text)
    assert pred is not None
    return pred(attrs)


@pytest.mark.parametrize(
    ("text", "attrs", "expected"),
    [
        ('attributes.kind = "event"', {"kind": "event"}, True),
        ('attributes.kind = "event"', {"kind": "Event"}, False),  # values compare exactly
        ('attributes.kind = "event"', {}, False),  # absent is not equal
        ('NOT attributes.kind = "event"', {}, True),  # NOT matches a message without the key
        ('NOT attributes.kind = "event"', {"kind": "alert"}, True),
        ('-attributes.kind = "event"', {"kind": "event"}, False),  # "-" is NOT
        ("attributes:kind", {"kind": ""}, True),
        ("attributes:kind", {"kinds": "x"}, False),
        ('hasPrefix(attributes.turn_id, "01J")', {"turn_id": "01JABC"}, True),
        ('hasPrefix(attributes.turn_id, "01J")', {}, False),
        ('attributes.a = "1" AND attributes.b = "2"', {"a": "1", "b": "2"}, True),
        ('attributes.a = "1" AND attributes.b = "2"', {"a": "1"}, False),
        ('attributes.a = "1" OR attributes.b = "2"', {"b": "2"}, True),
        ('(attributes.a = "1" OR attributes.b = "2") AND NOT attributes:c', {"a": "1", "c": "x"}, False),
        ('attributes.note = "say \\"hi\\""', {"note": 'say "hi"'}, True),
        ('attributes.org_id = "株式会社テスト"', {"org_id": "株式会社テスト"}, True),
        ('attributes.smoke-flag = "1"', {"smoke-flag": "1"}, True),
    ],
)
def test_a_filter_matches_as_pubsub_reads_it(text: str, attrs: dict[str, str], expected: bool) -> None:
    assert matches(text, attrs) is expected


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('attributes.kind != "event"', "use NOT"),
        ('attributes.a = "1" AND attributes.b = "2" OR attributes.c = "3"', "parentheses"),
        ("attributes.kind = event", "cannot read"),
        ("attributes.kind = attributes.other", "quoted value"),
        ('attributes.kind = "event" attributes.x = "1"', "unexpected"),
        ('attributes.kind = "event"  )', "unexpected"),
        ('(attributes.kind = "event"', "expected )"),
        ('data = "x"', "cannot read"),
        ('hasPrefix(turn_id, "x")', "cannot read"),
        ("NOT", "expected more"),
    ],
)
def test_a_filter_outside_the_grammar_is_refused_with_its_text(text: str, why: str) -> None:
    with pytest.raises(FilterError) as caught:
        compile_filter(text)
    assert why in str(caught.value) and text.strip() in str(caught.value)


def test_a_filter_longer_than_pubsub_takes_is_refused() -> None:
    # 256 bytes in UTF-8: a Japanese value counts three bytes a character
    fits = 'attributes.org = "' + "株" * 79 + '"'
    assert len(fits.encode()) == 256 and matches(fits, {"org": "株" * 79})
    with pytest.raises(FilterError, match="257 bytes"):
        compile_filter('attributes.org = "' + "株" * 79 + 'x"')


def test_no_filter_is_every_message() -> None:
    assert compile_filter("") is None and compile_filter("   ") is None


def test_the_observer_filter_keeps_exactly_its_own_records_from_it() -> None:
    # GIVEN the observer's subscription on turns.events
    sub = TOPOLOGY.subscriptions["observer-events-sub"]
    # THEN the records it streams itself (for BigQuery) are never pushed back to it
    for kind in STREAMED_KINDS:
        assert not matches(sub.filter, {"kind": "event", "event_kind": kind})
    # AND every other event still is (alerts, notable events, one without a kind)
    for attrs in ({"kind": "event", "event_kind": "alert"}, {"kind": "event", "event_kind": "x"}, {}):
        assert matches(sub.filter, attrs)
    # AND the smoke twin carries the same filter
    assert TOPOLOGY.smoke_subscriptions["smoke-observer-events-sub"].filter == sub.filter


def test_the_shadow_brain_filter_keeps_only_turns_marked_as_wanting_no_candidate_from_it() -> None:
    sub = TOPOLOGY.subscriptions["brain-shadow-sub"]
    assert not matches(sub.filter, {"candidate": "0", "step": "0"})
    assert matches(sub.filter, {"candidate": "1"})
    assert matches(sub.filter, {"step": "0"})  # from a publisher that does not mark it yet


def test_a_topology_whose_filter_cannot_be_read_is_refused_at_load(tmp_path: Path) -> None:
    raw = json.loads(TOPOLOGY_FILE.read_text(encoding="utf-8"))
    raw["subscriptions"]["brain-shadow-sub"]["filter"] = 'attributes.candidate != "0"'
    path = tmp_path / "topology.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(ValueError, match="use NOT"):
        load_topology(path)


def test_the_embedded_bus_pushes_a_filtered_subscription_only_what_matches() -> None:
    # GIVEN two subscriptions on one topic, one filtered
    bus = InProcessBus()
    every: list[dict[str, str]] = []
    filtered: list[dict[str, str]] = []
    bus.subscribe("events", lambda d, a: every.append(a), name="all")
    bus.subscribe(
        "events", lambda d, a: filtered.append(a), name="some", filter_expr='NOT attributes.event_kind = "x"'
    )
    # WHEN three messages are published
    for kind in ("x", "alert", "x"):
        bus.publish("events", b"{}", {"event_kind": kind})
    # THEN the unfiltered one got all three, the filtered one the one it matches
    assert [a["event_kind"] for a in every] == ["x", "alert", "x"]
    assert [a["event_kind"] for a in filtered] == ["alert"]
    # AND the bus still records every publish once
    assert len(bus.published) == 3


def test_a_bad_filter_is_refused_when_subscribing_not_when_a_message_comes() -> None:
    with pytest.raises(FilterError):
        InProcessBus().subscribe("events", lambda d, a: None, filter_expr="attributes.k != 1")
