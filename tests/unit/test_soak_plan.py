"""What the soak sends (``infra.soak.plan``): seeded, tagged per turn, faults the fake LLMs
understand and that cannot outlive their turn, outages of every peer that must degrade."""

from __future__ import annotations

import json
import re

from infra.fake_llm import Scenario
from infra.soak.plan import FAULT_KINDS, PEERS, plan, scenario


def test_the_same_seed_plans_the_same_turns_and_rates_are_honoured_roughly():
    first = plan(400, llm_fault_rate=0.1, redelivery_rate=0.2, seed=5)
    again = plan(400, llm_fault_rate=0.1, redelivery_rate=0.2, seed=5)
    assert [(t.kind, t.fault, t.redeliver) for t in first] == [(t.kind, t.fault, t.redeliver) for t in again]
    faulted = [t for t in first if t.fault]
    assert 20 <= len(faulted) <= 60 and 50 <= sum(t.redeliver for t in first) <= 110
    assert {t.fault for t in faulted} == set(FAULT_KINDS)


def test_every_turn_has_its_own_tag_and_event_and_a_faulted_turn_its_own_room():
    turns = plan(200, llm_fault_rate=0.2, redelivery_rate=0.0, seed=1, conversations=10)
    assert len({t.tag for t in turns}) == len({t.event_id for t in turns}) == 200
    shared_rooms = {t.room for t in turns if not t.fault}
    assert len(shared_rooms) == 10
    for t in turns:
        assert t.tag in t.text
        if t.fault:
            assert t.marker in t.text and t.kind in ("smalltalk", "task")
            assert sum(1 for u in turns if u.room == t.room) == 1


def test_the_scenario_parses_and_each_bounded_rule_matches_only_its_own_turn():
    turns = plan(300, llm_fault_rate=0.3, redelivery_rate=0.0, seed=2)
    parsed = Scenario.from_text(scenario(turns))
    faulted = [t for t in turns if t.fault]
    assert len(parsed.rules) == len(faulted)
    for rule in parsed.rules:
        assert rule.fault is not None and rule.fault.times is not None  # bounded: never a permanent fault
    rules = json.loads(scenario(turns))["rules"]
    texts = [t.text for t in turns]
    for rule in rules:
        hits = [text for text in texts if re.search(rule["match"]["last_user_regex"], text)]
        assert len(hits) == 1, rule["name"]


def test_an_outage_hits_every_peer_and_must_degrade_while_other_faults_hit_the_first_peer_only():
    # GIVEN a plan with as many faulted turns as there are fault kinds, at least
    turns = plan(120, llm_fault_rate=0.25, redelivery_rate=0.0, seed=7)
    faulted = [t for t in turns if t.fault]
    assert {t.fault for t in faulted} == set(FAULT_KINDS)  # the rotation deals every kind
    # WHEN each peer's scenario is made
    per_peer = {peer: json.loads(scenario(turns, peer))["rules"] for peer in PEERS}
    # THEN an outage's rule is in every peer's scenario, any other fault's only in the first's
    for t in faulted:
        holders = [
            peer
            for peer, rules in per_peer.items()
            if any(t.marker in r["match"]["last_user_regex"] for r in rules)
        ]
        assert holders == (list(PEERS) if t.fault == "outage" else [PEERS[0]]), t
    # AND only an outage must end in the degraded reply, and such a turn expects no effect
    assert {t.fault for t in turns if t.must_degrade} == {"outage"}
    assert all(t.effect is None for t in turns if t.must_degrade)
    assert [t.effect for t in faulted if not t.must_degrade and t.kind == "task"] == [
        "task" for t in faulted if not t.must_degrade and t.kind == "task"
    ]


def test_poisoned_turns_fail_one_layer_in_a_room_of_their_own_and_leave_the_rest_of_the_plan_alone():
    plain = plan(200, llm_fault_rate=0.1, redelivery_rate=0.1, seed=4, conversations=12)
    poisoned = plan(200, llm_fault_rate=0.1, redelivery_rate=0.1, seed=4, conversations=12, poison_rate=0.05)
    marked = [t for t in poisoned if t.poison]
    assert 3 <= len(marked) <= 25 and not any(t.poison for t in plain)
    for t in marked:
        assert t.text.startswith(f"[[fail:{t.poison}]] ") and t.effect is None and t.fault is None
        assert sum(1 for u in poisoned if u.room == t.room) == 1
    keep = lambda ts: [(t.fault, t.redeliver) for t in ts]  # noqa: E731
    assert keep(plain) == keep(poisoned)
