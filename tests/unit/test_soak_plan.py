"""What the soak sends (``infra.soak.plan``): seeded, tagged per turn, faults the fake
Anthropic server understands and that cannot outlive their turn."""

from __future__ import annotations

import json
import re

from infra.fake_llm import Scenario
from infra.soak.plan import FAULT_KINDS, plan, scenario


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
