"""Skill versions (seed 001 §23.2, §23.5): a proposal is a draft; only a level-6 approval of a
version whose sandbox test passed on its hash enables it; a rollback goes back one approved
version; what the registry exposes is the active approved versions only."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from skill_fakes import CONFIG, EVASION, GOOD, NETWORK, ORG, STORE_WRITE, spec

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.features.skills import store as skills
from shared_lib.features.skills.state.spec import SkillSpec
from shared_lib.features.skills.store_examples import run_version_test

NOW = datetime(2026, 11, 25, 9, 0, tzinfo=UTC)
V2 = "def run(input, view):\n    return {'sum': int(input['a']) + int(input['b'])}\n"


@pytest.fixture
def store() -> MemoryStore:
    s = MemoryStore()
    s.set(f"orgs/{ORG}/users/boss", {"name": "社長", "level": 6})
    s.set(f"orgs/{ORG}/users/lead", {"name": "部長", "level": 5})
    return s


def proposed_and_tested(store: MemoryStore, code: str = GOOD) -> tuple[int, str]:
    version, _ = skills.propose(store, ORG, spec(code), by="model", now=NOW)
    _, state, _ = run_version_test(store, ORG, "add_numbers", version, CONFIG, NOW)
    return version, state


def test_given_the_same_code_twice_then_it_is_one_version_and_new_code_is_the_next(store):
    assert skills.propose(store, ORG, spec(), by="model", now=NOW) == (1, True)
    assert skills.propose(store, ORG, spec(), by="u1", now=NOW) == (1, False)
    assert skills.propose(store, ORG, spec(V2), by="model", now=NOW) == (2, True)
    assert skills.get_version(store, ORG, "add_numbers")["state"] == "draft"
    assert skills.active_skills(store, ORG) == []


@pytest.mark.parametrize(
    ("code", "kind"), [(NETWORK, "import"), (EVASION, "import"), (STORE_WRITE, "store_write")]
)
def test_given_code_the_sandbox_refuses_then_the_version_fails_and_cannot_be_approved(store, code, kind):
    # WHEN the proposal is tested
    version, state = proposed_and_tested(store, code)
    # THEN it failed with the refusal's kind
    doc = skills.get_version(store, ORG, "add_numbers", version)
    assert (state, doc["state"], doc["test"]["passed"], doc["test"]["error_kinds"]) == (
        "failed",
        "failed",
        False,
        [kind],
    )
    # AND the top level cannot approve it: it is never enabled
    with pytest.raises(skills.SkillError) as refused:
        skills.approve(store, ORG, "add_numbers", version, by="boss", now=NOW)
    assert refused.value.code == "not_tested"
    assert skills.active_skills(store, ORG) == []


def test_given_a_wrong_example_then_the_version_fails(store):
    bad = spec(examples=[{"input": {"a": 1, "b": 2}, "output": {"sum": 4}}])
    version, _ = skills.propose(store, ORG, bad, by="model", now=NOW)
    _, state, report = run_version_test(store, ORG, "add_numbers", version, CONFIG, NOW)
    assert (state, report["examples"][0]["output"]) == ("failed", {"sum": 3})


def test_given_a_draft_never_tested_or_an_approver_below_six_then_approval_is_refused(store):
    version, _ = skills.propose(store, ORG, spec(), by="model", now=NOW)
    with pytest.raises(skills.SkillError) as untested:
        skills.approve(store, ORG, "add_numbers", version, by="boss", now=NOW)
    run_version_test(store, ORG, "add_numbers", version, CONFIG, NOW)
    with pytest.raises(skills.SkillError) as low:
        skills.approve(store, ORG, "add_numbers", version, by="lead", now=NOW)
    with pytest.raises(skills.SkillError) as stranger:
        skills.approve(store, ORG, "add_numbers", version, by="nobody", now=NOW)
    assert (untested.value.code, low.value.code, stranger.value.code) == (
        "not_tested",
        "level",
        "unknown_person",
    )


def test_given_two_approved_versions_when_rolled_back_then_the_previous_is_active(store):
    v1, _ = proposed_and_tested(store)
    skills.approve(store, ORG, "add_numbers", v1, by="boss", now=NOW)
    v2, state = proposed_and_tested(store, V2)
    assert state == "tested"
    skills.approve(store, ORG, "add_numbers", v2, by="boss", now=NOW)
    assert [(a.spec.name, a.version) for a in skills.active_skills(store, ORG)] == [("add_numbers", 2)]
    skill = skills.get_skill(store, ORG, "add_numbers")
    assert skill["approvals"][-1]["by"] == "boss"
    # WHEN rolled back THEN v1 is active again and v2 retired
    assert skills.rollback(store, ORG, "add_numbers", by="boss", now=NOW) == 1
    assert [a.version for a in skills.active_skills(store, ORG)] == [1]
    assert skills.get_version(store, ORG, "add_numbers", 2)["state"] == "retired"


def test_given_a_spec_then_users_read_japanese_and_the_name_cannot_shadow_a_tool():
    assert spec().tool_name == "skill_add_numbers"
    with pytest.raises(ValueError, match="Japanese"):
        spec(display_name="Add numbers")
    with pytest.raises(ValueError, match="label"):
        spec(parameter_display={"a": "一つ目の数"})
    with pytest.raises(ValueError, match="examples"):
        spec(examples=[{"input": {"a": "1"}, "output": 1}])
    with pytest.raises(ValueError):
        spec(examples=[])
    with pytest.raises(ValueError, match="bytes"):
        spec("#" * 20_001 + "\ndef run(input, view):\n    return 1\n")
    with pytest.raises(ValueError, match="sha256"):
        SkillSpec.model_validate({**spec().model_dump(), "sha256": "0" * 64})


@pytest.mark.parametrize(
    "changes",
    [
        {
            "implementation": "def run(input, view):\n    return {'sum': input['a'] + input['b'], 'to': 'taro@example.com'}\n"
        },
        {"examples": [{"input": {"a": 1, "b": 2}, "output": {"sum": 3, "tel": "090-1234-5678"}}]},
        {
            "kind": "prompt",
            "implementation": "$a と $b を足して 090-1234-5678 に電話するウル",
            "examples": [
                {"input": {"a": 1, "b": 2}, "output": "1 と 2 を足して 090-1234-5678 に電話するウル"}
            ],
        },
    ],
)
def test_given_a_secret_or_personal_value_in_code_template_or_examples_then_nothing_is_stored(store, changes):
    with pytest.raises(skills.SkillError) as refused:
        skills.propose(store, ORG, spec(**changes), by="model", now=NOW)
    assert refused.value.code == "secret"
    assert store.get(skills.skill_path(ORG, "add_numbers")) is None
    assert store.get(skills.version_path(ORG, "add_numbers", 1)) is None


def test_given_one_approved_version_when_rolled_back_then_the_skill_is_off(store):
    # GIVEN a single approved version
    v1, _ = proposed_and_tested(store)
    skills.approve(store, ORG, "add_numbers", v1, by="boss", now=NOW)
    # WHEN rolled back THEN no version is active, it is retired, and it is no longer a tool
    assert skills.rollback(store, ORG, "add_numbers", by="boss", now=NOW) is None
    assert skills.active_skills(store, ORG) == []
    assert skills.get_version(store, ORG, "add_numbers", v1)["state"] == "retired"
    assert skills.get_skill(store, ORG, "add_numbers")["rollbacks"][-1]["to"] is None
    # AND with nothing active, another rollback is refused
    with pytest.raises(skills.SkillError) as nothing:
        skills.rollback(store, ORG, "add_numbers", by="boss", now=NOW)
    assert nothing.value.code == "no_previous"
