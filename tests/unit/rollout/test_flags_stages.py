"""The promotion ladder and ``charter flags stage / promote / validate`` over the environments' files.

Commands that write run on a copy of ``terraform/flags`` (``--dir``), never on the repository.
"""

from __future__ import annotations

import json
import shutil
from datetime import date
from pathlib import Path

import pytest

from shared_lib.cli import main
from shared_lib.flags import ENVIRONMENTS, LADDER, FlagsDocument, RefusedStep, env_flags_file, load_flags_file
from shared_lib.flags.stages import FLAGS_DIR, bump_version, ladder_findings, moved_text, plan_move, stage_of

REPO_FLAGS = FLAGS_DIR


def doc(mode: str, percent: float = 0, **fields: object) -> FlagsDocument:
    return FlagsDocument.model_validate(
        {"version": "v", "brain_mode": mode, "canary_percent": percent, **fields}
    )


@pytest.fixture
def flags_dir(tmp_path: Path) -> Path:
    """A copy of the committed files, set to the stages a test names with ``at``."""
    target = tmp_path / "flags"
    shutil.copytree(REPO_FLAGS, target)
    return target


def at(directory: Path, env: str, stage: str) -> None:
    rung = next(s for s in LADDER if s.name == stage)
    path = directory / f"{env}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(brain_mode=rung.brain_mode, canary_percent=int(rung.canary_percent))
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


# --------------------------------------------------------------------------- the ladder as data


def test_the_ladder_is_legacy_shadow_canary_10_canary_50_llm_with_the_gate_each_step_needs():
    # GIVEN the ladder WHEN read THEN it is seed 000 §12.2 C-3…C-6 after legacy, with its gates
    assert [(s.name, s.brain_mode, s.canary_percent, s.gate) for s in LADDER] == [
        ("legacy", "legacy", 0, None),
        ("shadow", "shadow", 0, None),
        ("canary-10", "canary", 10, "shadow"),
        ("canary-50", "canary", 50, "canary"),
        ("llm", "llm", 0, "canary"),
    ]


@pytest.mark.parametrize(
    ("mode", "percent", "expected"),
    [
        ("legacy", 0, "legacy"),
        ("shadow", 0, "shadow"),
        ("canary", 10, "canary-10"),
        ("llm", 0, "llm"),
        ("canary", 25, None),
        ("shadow", 10, None),
        ("llm", 50, None),
    ],
)
def test_a_document_stands_on_the_stage_of_its_mode_and_percentage_or_off_the_ladder(mode, percent, expected):
    stage = stage_of(doc(mode, percent))
    assert (stage.name if stage else None) == expected


def test_the_committed_files_validate_and_stand_in_dev_stg_prod_order():
    # GIVEN the repository's three files WHEN read THEN each validates and the ladder holds
    docs = {env: load_flags_file(env_flags_file(env)) for env in ENVIRONMENTS}
    assert ladder_findings(docs) == []
    assert stage_of(docs["prod"]) is not None and stage_of(docs["prod"]).canary_percent == 0


def test_ladder_findings_name_an_environment_ahead_of_the_one_before_it():
    docs = {"dev": doc("canary", 10), "stg": doc("canary", 50), "prod": doc("shadow")}
    assert ladder_findings(docs) == ["stg is at canary-50, past dev (canary-10)"]


# --------------------------------------------------------------------------- planning a move


def test_the_default_move_is_one_stage_up():
    here, target = plan_move("prod", doc("shadow"), None, {"stg": doc("canary", 10)})
    assert (here.name, target.name) == ("shadow", "canary-10")


@pytest.mark.parametrize(
    ("env", "current", "to", "neighbours", "reason"),
    [
        ("stg", doc("shadow"), "canary-50", {"dev": doc("llm")}, "stg: shadow -> canary-50 skips canary-10"),
        ("prod", doc("shadow"), None, {"stg": doc("shadow")}, "prod -> canary-10 would pass stg (shadow)"),
        ("dev", doc("llm"), None, {}, "dev is already at llm, the last stage"),
        ("dev", doc("llm"), "llm", {}, "dev is already at llm"),
        ("stg", doc("canary", 30), None, {}, "stg is off the ladder (brain_mode canary, canary_percent 30)"),
        ("dev", doc("canary", 50), "shadow", {"stg": doc("canary", 10)}, "would leave stg (canary-10) ahead"),
        ("stg", doc("shadow"), None, {}, "no committed flags file for dev"),
    ],
)
def test_a_refused_move_says_why_in_one_line(env, current, to, neighbours, reason):
    with pytest.raises(RefusedStep) as refused:
        plan_move(env, current, to, neighbours)
    assert reason in str(refused.value) and "\n" not in str(refused.value)


def test_a_step_down_may_skip_stages_when_no_later_environment_is_left_ahead():
    here, target = plan_move("prod", doc("canary", 50), "shadow", {"stg": doc("canary", 50)})
    assert (here.name, target.name) == ("canary-50", "shadow")


@pytest.mark.parametrize(
    ("version", "today", "expected"),
    [
        ("2026-11-24.1", date(2026, 11, 24), "2026-11-24.2"),
        ("2026-11-24.9", date(2026, 11, 25), "2026-11-25.1"),
        ("release-7", date(2026, 11, 24), "2026-11-24.1"),
    ],
)
def test_the_version_counts_up_within_a_day_and_restarts_on_a_new_one(version, today, expected):
    assert bump_version(version, today) == expected


def test_moving_a_committed_file_changes_exactly_version_mode_and_percentage():
    # GIVEN the committed prod file WHEN moved to canary-10
    text = env_flags_file("prod").read_text(encoding="utf-8")
    new = moved_text(text, LADDER[2], date(2030, 1, 2))
    # THEN only those three lines differ, and the rest of the file is kept as it was
    committed = json.loads(text)["version"]
    changed = [(a, b) for a, b in zip(text.splitlines(), new.splitlines(), strict=True) if a != b]
    assert changed == [
        (f'  "version": "{committed}",', '  "version": "2030-01-02.1",'),
        ('  "brain_mode": "shadow",', '  "brain_mode": "canary",'),
        ('  "canary_percent": 0,', '  "canary_percent": 10,'),
    ]


# --------------------------------------------------------------------------- the commands


def test_flags_stage_prints_the_stage_of_an_environments_file(flags_dir, capsys):
    at(flags_dir, "stg", "canary-10")
    assert main(["flags", "stage", "--env", "stg", "--dir", str(flags_dir)]) == 0
    assert capsys.readouterr().out == "canary-10\n"


def test_flags_stage_of_a_file_off_the_ladder_is_a_finding(flags_dir, capsys):
    path = flags_dir / "stg.json"
    path.write_text(path.read_text().replace('"canary_percent": 0', '"canary_percent": 25'))
    path.write_text(path.read_text().replace('"brain_mode": "shadow"', '"brain_mode": "canary"'))
    assert main(["flags", "stage", "--env", "stg", "--dir", str(flags_dir)]) == 1
    assert "off the ladder" in capsys.readouterr().err


def test_flags_promote_rewrites_the_file_to_the_next_stage_prints_the_diff_and_keeps_the_rest(
    flags_dir, capsys
):
    # GIVEN dev at llm and stg at shadow
    before = load_flags_file(flags_dir / "stg.json")
    # WHEN stg is promoted
    assert main(["flags", "promote", "--env", "stg", "--dir", str(flags_dir)]) == 0
    out = capsys.readouterr().out
    # THEN the file is at canary 10 with a new version, the diff says so, the rest is unchanged
    after = load_flags_file(flags_dir / "stg.json")
    assert stage_of(after).name == "canary-10" and after.version != before.version
    assert '-  "brain_mode": "shadow",' in out and '+  "canary_percent": 10,' in out
    assert "stg: shadow -> canary-10 written" in out and "the shadow gate" in out
    assert after.model_dump(exclude={"version", "brain_mode", "canary_percent"}) == before.model_dump(
        exclude={"version", "brain_mode", "canary_percent"}
    )


def test_flags_promote_dry_run_prints_the_diff_and_writes_nothing(flags_dir, capsys):
    text = (flags_dir / "stg.json").read_text(encoding="utf-8")
    assert (
        main(["flags", "promote", "--env", "stg", "--to", "canary-10", "--dry-run", "--dir", str(flags_dir)])
        == 0
    )
    assert '+  "brain_mode": "canary",' in capsys.readouterr().out
    assert (flags_dir / "stg.json").read_text(encoding="utf-8") == text


def test_flags_promote_past_the_environment_before_is_refused_with_exit_2_and_one_line(flags_dir, capsys):
    # GIVEN stg at shadow WHEN prod is promoted
    text = (flags_dir / "prod.json").read_text(encoding="utf-8")
    assert main(["flags", "promote", "--env", "prod", "--dir", str(flags_dir)]) == 2
    # THEN one line says why, and the file is untouched
    captured = capsys.readouterr()
    assert (
        captured.err
        == "charter: error: refused: prod -> canary-10 would pass stg (shadow): promote stg first\n"
    )
    assert captured.out == ""
    assert (flags_dir / "prod.json").read_text(encoding="utf-8") == text


def test_flags_promote_skipping_a_stage_is_refused(flags_dir, capsys):
    assert main(["flags", "promote", "--env", "stg", "--to", "llm", "--dir", str(flags_dir)]) == 2
    assert "skips canary-10, canary-50" in capsys.readouterr().err


def test_flags_validate_without_a_file_checks_every_environment_and_the_ladder(flags_dir, capsys):
    # GIVEN the committed files WHEN validated with no argument THEN all three pass
    assert main(["flags", "validate"]) == 0
    out = capsys.readouterr().out
    assert all(f"{env}.json: ok" in out for env in ENVIRONMENTS) and "stage shadow" in out
    # GIVEN prod ahead of stg (in a copy) WHEN validated THEN the ladder finding exits 1
    at(flags_dir, "prod", "canary-10")
    assert main(["flags", "validate", "--dir", str(flags_dir)]) == 1
    assert "ladder: prod is at canary-10, past stg (shadow)" in capsys.readouterr().err
