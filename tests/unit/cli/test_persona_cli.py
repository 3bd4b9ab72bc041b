"""``charter persona verify|diff|show`` (issue 19 acceptance): the shipped core verifies (exit 0),
a copy one byte different exits 1 with one line naming the file, its hash and the pinned one, a
missing file exits 2; diff shows the changed line; show gives the core, the extension, the merge."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from shared_lib.cli import main
from shared_lib.persona import load_persona
from shared_lib.persona_core import core_sha256

PERSONA = load_persona()


def one_byte_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "core.toml"
    shutil.copyfile(PERSONA.core_path(), copy)
    data = bytearray(copy.read_bytes())
    data[data.index(b"sentences_max = 6") + len(b"sentences_max = ")] = ord("7")
    copy.write_bytes(bytes(data))
    return copy


def test_verify_exits_0_on_the_shipped_core_and_prints_its_hash(capsys: pytest.CaptureFixture[str]):
    assert main(["persona", "verify"]) == 0
    assert PERSONA.core_sha256 in capsys.readouterr().out


def test_verify_of_a_copy_one_byte_different_exits_1_with_one_line(tmp_path, capsys):
    copy = one_byte_copy(tmp_path)
    assert main(["persona", "verify", "--core", str(copy)]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert str(copy) in err and core_sha256(copy) in err and f"the pinned {PERSONA.core_sha256}" in err


def test_verify_of_a_missing_file_exits_2(tmp_path, capsys):
    assert main(["persona", "verify", "--core", str(tmp_path / "nope.toml")]) == 2
    assert "nope.toml" in capsys.readouterr().err


def test_diff_shows_the_changed_line(tmp_path, capsys):
    assert main(["persona", "diff", "--core", str(PERSONA.core_path())]) == 0
    copy = one_byte_copy(tmp_path)
    assert main(["persona", "diff", "--core", str(copy)]) == 1
    out = capsys.readouterr().out
    assert "-sentences_max = 6" in out and "+sentences_max = 7" in out


def test_show_gives_the_core_the_extension_and_the_merged_view(tmp_path, capsys):
    from shared_lib.adapters.sqlite_store import SQLiteStore
    from shared_lib.state.persona_store import ext_path

    db = tmp_path / "charter.sqlite"
    SQLiteStore(db).set(
        ext_path("acme"), {"custom_rules": ["朝は天気に触れる"], "tone": {"first_person": "俺"}}
    )
    assert main(["persona", "show", "--org", "acme", "--json", "--store", str(db)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["core_sha256"] == out["pinned_sha256"] == PERSONA.core_sha256
    assert out["extension"] == {"custom_rules": ["朝は天気に触れる"]}  # a core key in the document is ignored
    assert out["merged"]["tone"]["first_person"] == "私" == out["core"]["tone"]["first_person"]
    # AND diff --org lists what the extension adds, on top
    assert main(["persona", "diff", "--org", "acme", "--store", str(db)]) == 0
    assert '+ custom_rules = ["朝は天気に触れる"]' in capsys.readouterr().out
