"""``charter skills`` and ``charter tools --org``: a person's skill proposed from a file, tested,
refused or approved by level, listed with the built-ins once approved, gone after a rollback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from skill_fakes import NETWORK, ORG, spec

from shared_lib.adapters.inproc_bus import InProcessBus
from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.cli import main
from shared_lib.cli import tools as tools_cli
from shared_lib.features.skills import cli as skills_cli
from shared_lib.wiring.composition import build_runtime

V2 = "def run(input, view):\n    return {'sum': input['b'] + input['a']}\n"


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> MemoryStore:
    s = MemoryStore()
    s.set(f"orgs/{ORG}/users/ceo", {"name": "社長", "level": 6})
    s.set(f"orgs/{ORG}/users/staff", {"name": "社員", "level": 2})
    rt = build_runtime(store=s, llm=None, bus=InProcessBus(), notifiers=[])
    monkeypatch.setattr(skills_cli, "runtime_for", lambda _args: rt)
    monkeypatch.setattr(tools_cli, "runtime_for", lambda _args: rt)
    return s


def spec_file(tmp_path: Path, code: str, name: str = "spec.json") -> str:
    data = spec(code).model_dump(exclude={"author", "sha256"})
    path = tmp_path / name
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return str(path)


def out(capsys: pytest.CaptureFixture[str]) -> dict:
    return json.loads(capsys.readouterr().out)


def tool_names(capsys: pytest.CaptureFixture[str]) -> set[str]:
    assert main(["tools", "list", "--org", ORG, "--json"]) == 0
    return {row["name"] for row in json.loads(capsys.readouterr().out)}


def test_a_network_skill_fails_its_test_and_cannot_be_approved(store, tmp_path, capsys):
    assert (
        main(
            [
                "skills",
                "propose",
                "--org",
                ORG,
                "--file",
                spec_file(tmp_path, NETWORK),
                "--by",
                "staff",
                "--json",
            ]
        )
        == 0
    )
    assert out(capsys)["version"] == 1
    assert main(["skills", "test", "--org", ORG, "add_numbers", "--json"]) == 1
    assert out(capsys)["state"] == "failed"
    assert main(["skills", "approve", "--org", ORG, "add_numbers", "--version", "1", "--by", "ceo"]) == 1
    assert "skill_add_numbers" not in tool_names(capsys)


def test_approved_skill_is_a_tool_until_rolled_back(store, tmp_path, capsys):
    # GIVEN two versions of a person's skill, both tested
    for code, name in ((spec().implementation, "v1.json"), (V2, "v2.json")):
        assert main(["skills", "propose", "--org", ORG, "--file", spec_file(tmp_path, code, name)]) == 0
        assert main(["skills", "test", "--org", ORG, "add_numbers"]) == 0
    capsys.readouterr()
    # WHEN a level-2 person approves: refused; the CEO approves v1 then v2
    assert main(["skills", "approve", "--org", ORG, "add_numbers", "--version", "2", "--by", "staff"]) == 1
    assert "skill_add_numbers" not in tool_names(capsys)
    assert main(["skills", "approve", "--org", ORG, "add_numbers", "--version", "1", "--by", "ceo"]) == 0
    assert main(["skills", "approve", "--org", ORG, "add_numbers", "--version", "2", "--by", "ceo"]) == 0
    capsys.readouterr()
    # THEN it is listed with the built-ins and the checklist passes on it
    assert {"skill_add_numbers", "save_memory"} <= tool_names(capsys)
    assert main(["tools", "check", "--org", ORG, "--json"]) == 0
    assert out(capsys)["problems"] == []
    assert main(["skills", "list", "--org", ORG, "--json"]) == 0
    assert out(capsys)["skills"][0]["active_version"] == 2
    # WHEN rolled back: v1; again: nothing earlier, the skill is off; a third time: nothing active (exit 1)
    assert main(["skills", "rollback", "--org", ORG, "add_numbers", "--by", "ceo", "--json"]) == 0
    assert out(capsys)["active_version"] == 1
    assert main(["skills", "rollback", "--org", ORG, "add_numbers", "--by", "ceo", "--json"]) == 0
    assert out(capsys)["active_version"] is None
    assert "skill_add_numbers" not in tool_names(capsys)
    assert main(["skills", "rollback", "--org", ORG, "add_numbers", "--by", "ceo"]) == 1
    assert main(["skills", "show", "--org", ORG, "add_numbers", "--version", "2", "--json"]) == 0
    assert out(capsys)["state"] == "retired"


def test_a_spec_that_does_not_validate_is_bad_input(store, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"name": "x"}), encoding="utf-8")
    assert main(["skills", "propose", "--org", ORG, "--file", str(bad)]) == 2
    assert main(["skills", "show", "--org", ORG, "nothing"]) == 1


def test_a_skill_reading_salaries_is_shown_and_listed_at_level_six(store, tmp_path, capsys):
    # GIVEN a level-2 skill that declares it reads salaries, tested
    store.set(f"orgs/{ORG}/salaries/ceo", {"amount": 1})
    code = "def run(input, view):\n    return {'sum': input['a'] + input['b'] + len(view.query('salaries', [], 5)) - 1}\n"
    data = {**spec(code).model_dump(exclude={"author", "sha256"}), "reads": ["salaries"]}
    path = tmp_path / "salaries.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    assert main(["skills", "propose", "--org", ORG, "--file", str(path)]) == 0
    assert main(["skills", "test", "--org", ORG, "add_numbers"]) == 0
    capsys.readouterr()
    # WHEN shown and approved THEN what it reads and its level are printed
    assert main(["skills", "show", "--org", ORG, "add_numbers"]) == 0
    assert "level>=6  reads: salaries (level 6)" in capsys.readouterr().out
    assert main(["skills", "approve", "--org", ORG, "add_numbers", "--version", "1", "--by", "ceo"]) == 0
    assert "reads: salaries (level 6)" in capsys.readouterr().out
    # THEN the organisation's tool list has it at level 6, not its declared 2
    assert main(["tools", "list", "--org", ORG, "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["skill_add_numbers"]["min_level"] == 6


def test_a_proposal_holding_a_secret_exits_1_and_stores_nothing(store, tmp_path, capsys):
    code = "def run(input, view):\n    token = 'ghp_abcdefghijklmnopqrstuvwxyz0123456789'\n    return {'sum': input['a'] + input['b']}\n"
    assert main(["skills", "propose", "--org", ORG, "--file", spec_file(tmp_path, code)]) == 1
    assert "secret" in capsys.readouterr().err
    assert main(["skills", "list", "--org", ORG, "--json"]) == 0
    assert out(capsys)["skills"] == []


def test_approving_a_draft_tests_it_first_and_only_a_passing_one_is_enabled(store, tmp_path, capsys):
    # GIVEN two drafts never tested: a network skill and a good one
    assert main(["skills", "propose", "--org", ORG, "--file", spec_file(tmp_path, NETWORK)]) == 0
    bad = skills_cli.skill_store.get_version(store, ORG, "add_numbers", 1)
    assert (bad["state"], bad["test"]) == ("draft", None)
    # WHEN a level-2 person tries to approve THEN it is refused before any code of it runs
    assert main(["skills", "approve", "--org", ORG, "add_numbers", "--version", "1", "--by", "staff"]) == 1
    assert skills_cli.skill_store.get_version(store, ORG, "add_numbers", 1)["test"] is None
    # WHEN the CEO approves the network draft THEN its test runs first, fails, and it is not enabled
    assert main(["skills", "approve", "--org", ORG, "add_numbers", "--version", "1", "--by", "ceo"]) == 1
    assert "failed its sandbox test" in capsys.readouterr().err
    assert skills_cli.skill_store.get_version(store, ORG, "add_numbers", 1)["state"] == "failed"
    assert "skill_add_numbers" not in tool_names(capsys)
    # WHEN the CEO approves the good draft THEN it is tested, passes and is active
    assert main(["skills", "propose", "--org", ORG, "--file", spec_file(tmp_path, V2, "v2.json")]) == 0
    assert main(["skills", "approve", "--org", ORG, "add_numbers", "--version", "2", "--by", "ceo"]) == 0
    capsys.readouterr()
    assert skills_cli.skill_store.get_version(store, ORG, "add_numbers", 2)["state"] == "approved"
    assert "skill_add_numbers" in tool_names(capsys)
