"""Operators' commands find the right store: the demo's, the local stack's, or none (exit 2).

The whole path as a person walks it: ``charter demo`` (what ``make demo`` runs) in a folder,
then ``charter turns list`` there, with nothing exported.
"""

from __future__ import annotations

import json
import os

import pytest

from infra.cli import main as charter
from shared_lib.errors import ConfigError
from shared_lib.wiring.composition import ENV_FILE, operator_runtime, write_env_file

SEED_FIELDS = (
    "user_id",
    "organization_id",
    "room_id",
    "input_message",
    "llm_model",
    "llm_reasoning",
    "llm_confidence",
    "guardian_action",
    "auth_result",
    "final_response",
    "total_duration_ms",
)


@pytest.fixture
def bare(monkeypatch, tmp_path):
    """A folder with nothing configured: no store, no emulator, no project exported."""
    for var in list(os.environ):
        if var.startswith(("CHARTER_", "FIRESTORE_", "PUBSUB_", "GOOGLE_")):
            monkeypatch.delenv(var)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_with_no_store_configured_an_operator_command_exits_2_with_one_line(bare, capsys):
    assert charter(["turns", "list"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no store configured" in err[0] and "charter local up" in err[0]
    assert charter(["shadow", "report"]) == 2
    assert charter(["cost"]) == 2


def test_the_demo_keeps_its_turns_for_the_operator_commands(bare, capsys):
    # GIVEN the embedded demo, as `make demo` runs it
    assert charter(["demo", "--json"]) == 0
    demo_turns = json.loads(capsys.readouterr().out)["turns"]
    assert (bare / ".charter" / "demo" / ENV_FILE).is_file()
    # WHEN the operator lists the turns, with nothing exported
    assert charter(["turns", "list", "--json", "--limit", "50"]) == 0
    rows = {r["turn_id"]: r for r in json.loads(capsys.readouterr().out)}
    # THEN every turn of the demo is there, with the seed §9.1.1 fields filled
    assert {t["turn_id"] for t in demo_turns} <= set(rows)
    llm_rows = [rows[t["turn_id"]] for t in demo_turns if t["arm"] == "llm"]
    assert llm_rows and all(all(r.get(f) not in (None, "") for f in SEED_FIELDS) for r in llm_rows)
    # AND a second demo starts from an empty store (no stale turns listed)
    assert charter(["demo", "--json"]) == 0
    second = json.loads(capsys.readouterr().out)["turns"]
    assert charter(["turns", "list", "--json", "--limit", "50"]) == 0
    listed = {r["turn_id"] for r in json.loads(capsys.readouterr().out)}
    assert listed == {t["turn_id"] for t in second}


def test_explicit_settings_win_over_what_the_demo_left(bare, monkeypatch, tmp_path):
    write_env_file(
        bare / ".charter" / "demo" / ENV_FILE,
        {"CHARTER_STORE": "sqlite", "CHARTER_STORE_PATH": str(tmp_path / "d.sqlite")},
    )
    assert operator_runtime().settings.store == "sqlite"
    other = tmp_path / "other.sqlite"
    assert operator_runtime(store=str(other)).settings.store_path == other
    monkeypatch.setenv("CHARTER_STORE", "memory")
    with pytest.raises(ConfigError, match="no store configured"):
        operator_runtime()  # an explicit memory store is never an operator's answer
