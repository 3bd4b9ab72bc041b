"""Skills on the Firestore emulator: a version proposed, tested in the sandbox (whose view reads
the organisation through the parent), approved by level 6, active, rolled back; the same code is
one version; a store write from the sandbox leaves no document and fails the version."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from shared_lib.features.skills import store as skills
from shared_lib.features.skills.store_examples import run_version_test
from tests.unit.skills.skill_fakes import CONFIG, ORG, STORE_WRITE, spec

pytestmark = pytest.mark.integration
NOW = datetime(2026, 11, 25, 9, 0, tzinfo=UTC)
READS = (
    "def run(input, view):\n"
    "    task = view.get('tasks', 't1') or {}\n"
    "    found = view.query('tasks', [['title', '==', task.get('title')]], 5)\n"
    "    return {'sum': input['a'] + input['b'] + len(found) - 1}\n"
)


def test_a_skill_version_lives_and_rolls_back_on_firestore(firestore_store):
    store = firestore_store
    store.set(f"orgs/{ORG}/users/ceo", {"name": "社長", "level": 6})
    store.set(f"orgs/{ORG}/tasks/t1", {"title": "見積書"})
    # GIVEN two versions, the second reading the organisation through the sandbox's view
    assert skills.propose(store, ORG, spec(), by="model", now=NOW) == (1, True)
    assert skills.propose(store, ORG, spec(), by="model", now=NOW) == (1, False)
    assert skills.propose(store, ORG, spec(READS, reads=["tasks"]), by="model", now=NOW) == (2, True)
    for version in (1, 2):
        _, state, report = run_version_test(store, ORG, "add_numbers", version, CONFIG, NOW)
        assert state == "tested", report
        skills.approve(store, ORG, "add_numbers", version, by="ceo", now=NOW)
    assert [a.version for a in skills.active_skills(store, ORG)] == [2]
    # WHEN rolled back THEN the first is active again
    assert skills.rollback(store, ORG, "add_numbers", by="ceo", now=NOW) == 1
    assert skills.get_version(store, ORG, "add_numbers", 2)["state"] == "retired"


def test_a_store_write_from_the_sandbox_fails_and_writes_nothing(firestore_store):
    store = firestore_store
    version, _ = skills.propose(store, ORG, spec(STORE_WRITE), by="model", now=NOW)
    _, state, report = run_version_test(store, ORG, "add_numbers", version, CONFIG, NOW)
    assert (state, report["error_kinds"]) == ("failed", ["store_write"])
    assert store.get(f"orgs/{ORG}/tasks/t9") is None
