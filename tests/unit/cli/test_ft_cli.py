"""``charter ft``: review and export through the command line on a store of its own (the
exit-code rows use the demo's store, where nothing is reviewed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shared_lib.adapters.inproc_bus import InProcessBus
from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.cli import main
from shared_lib.features.finetune import cli as ft_cli
from shared_lib.features.finetune.state.export import card_path
from shared_lib.features.finetune.state.formats import parse_line
from shared_lib.wiring.composition import build_runtime
from tests.unit.finetune.ft_fakes import ORG, opted_in_store, plant, tool_proposal


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> MemoryStore:
    s = opted_in_store()
    s.set(f"orgs/{ORG}/users/ceo", {"name": "社長", "level": 6})
    s.set(f"orgs/{ORG}/users/staff", {"name": "社員", "level": 2})
    for cid in ("t1", "t2", "t3"):
        plant(s, cid, status="pending")
    rt = build_runtime(store=s, llm=None, bus=InProcessBus(), notifiers=[])
    monkeypatch.setattr(ft_cli, "runtime_for", lambda _args: rt)
    return s


def test_list_review_and_export_a_dataset(store, tmp_path: Path, capsys):  # type: ignore[no-untyped-def]
    assert main(["ft", "list", "--org", ORG, "--status", "pending", "--json"]) == 0
    assert {c["id"] for c in json.loads(capsys.readouterr().out)["candidates"]} == {"t1", "t2", "t3"}
    assert main(["ft", "accept", "--org", ORG, "--by", "ceo", "t1"]) == 0
    assert main(["ft", "edit", "--org", ORG, "--by", "ceo", "--reply", "承知したウル🐺", "t2"]) == 0
    proposal = tmp_path / "p.json"
    proposal.write_text(json.dumps(tool_proposal("no_such_tool")), encoding="utf-8")
    assert (
        main(["ft", "edit", "--org", ORG, "--by", "ceo", "--file", str(proposal), "t3"]) == 2
    )  # re-validated
    assert main(["ft", "reject", "--org", ORG, "--by", "ceo", "--reason", "口調が違う", "t3"]) == 0
    assert main(["ft", "show", "--org", ORG, "t3"]) == 0
    assert "口調が違う" in capsys.readouterr().out
    out = tmp_path / "ds.jsonl"
    assert main(["ft", "export", "--org", ORG, "--format", "anthropic", "--out", str(out)]) == 0
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 and all(parse_line("anthropic", line) for line in lines)
    card = json.loads(card_path(out).read_text(encoding="utf-8"))
    assert card["skipped"]["rejected"] == 1 and card["counts"]["status"] == {"accepted": 1, "edited": 1}


def test_a_reviewer_below_level_six_is_a_finding_and_changes_nothing(store, capsys):  # type: ignore[no-untyped-def]
    assert main(["ft", "accept", "--org", ORG, "--by", "staff", "t1"]) == 1
    assert "level 6" in capsys.readouterr().err
    assert store.get(f"orgs/{ORG}/ft_candidates/t1")["status"] == "pending"


def test_a_failed_masking_check_exits_1_and_writes_no_file(store, tmp_path: Path, capsys):  # type: ignore[no-untyped-def]
    plant(store, "leak", raw=True, user_text="鍵は sk-ant-" + "b" * 30)
    out = tmp_path / "ds.jsonl"
    assert main(["ft", "export", "--org", ORG, "--format", "openai", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "masking check failed" in err and "leak" in err and "sk-ant" not in err
    assert not out.exists() and not card_path(out).exists()


def test_staging_is_turned_on_and_off_by_a_level_six_person_and_shown(store, capsys):  # type: ignore[no-untyped-def]
    assert main(["ft", "staging", "--org", ORG]) == 0
    assert capsys.readouterr().out.strip().endswith(": on")
    assert main(["ft", "staging", "--org", ORG, "off", "--by", "staff"]) == 1  # level 2
    assert "needs level 6" in capsys.readouterr().err
    assert main(["ft", "staging", "--org", ORG, "off", "--by", "ceo"]) == 0
    assert capsys.readouterr().out.strip().endswith(": off")
    assert store.get(f"orgs/{ORG}/settings/company")["ft_staging"] is False
    assert main(["ft", "staging", "--org", ORG, "on"]) == 0  # the operator
    assert capsys.readouterr().out.strip().endswith(": on")


def test_every_review_names_a_level_six_person_of_the_directory(store, capsys):  # type: ignore[no-untyped-def]
    # WHEN a review names nobody THEN it is a usage error, and nothing changes
    for argv in (
        ["accept", "t1"],
        ["reject", "--reason", "口調が違う", "t1"],
        ["edit", "--reply", "了解ウル", "t1"],
    ):
        with pytest.raises(SystemExit) as usage:
            main(["ft", argv[0], "--org", ORG, *argv[1:]])
        assert usage.value.code == 2
    # AND a name that is not a person of the organisation is a finding
    assert main(["ft", "accept", "--org", ORG, "--by", "operator", "t1"]) == 1
    assert "not in the directory" in capsys.readouterr().err
    assert store.get(f"orgs/{ORG}/ft_candidates/t1")["status"] == "pending"
    # AND the review records the person who made it
    assert main(["ft", "accept", "--org", ORG, "--by", "ceo", "t1"]) == 0
    assert store.get(f"orgs/{ORG}/ft_candidates/t1")["review"]["by"] == "ceo"


def test_an_export_after_the_organisation_turned_staging_off_exits_1_and_writes_nothing(
    store, tmp_path, capsys
):  # type: ignore[no-untyped-def]
    # GIVEN an accepted example, then the organisation turned staging off
    assert main(["ft", "accept", "--org", ORG, "--by", "ceo", "t1"]) == 0
    assert main(["ft", "staging", "--org", ORG, "off", "--by", "ceo"]) == 0
    capsys.readouterr()
    # WHEN it is exported THEN it refuses with a clear message and writes nothing
    out = tmp_path / "ds.jsonl"
    assert main(["ft", "export", "--org", ORG, "--format", "openai", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "staging off" in err and "nothing written" in err
    assert list(tmp_path.iterdir()) == []
