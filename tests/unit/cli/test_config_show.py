"""``charter config show [--json]``: every setting, where it comes from, secrets never shown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infra import cli
from shared_lib.settings import Settings

SECRET = "sk-ant-THIS-MUST-NOT-LEAK-0123456789"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("CHARTER_STORE", "CHARTER_STORE_PATH", "FIRESTORE_EMULATOR_HOST", "CHARTER_ENV"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CHARTER_HOME", str(tmp_path))
    return tmp_path


def test_secrets_in_the_environment_never_appear_and_json_parses(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    # GIVEN secrets in the environment (typed secrets and a token in a webhook URL) and a model
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    monkeypatch.setenv("CHARTER_SMTP_PASSWORD", SECRET + "-smtp")
    monkeypatch.setenv("CHARTER_ALERT_WEBHOOK_URL", f"https://hooks.example/{SECRET}")
    monkeypatch.setenv("CHARTER_MODEL", "claude-test-model")
    # WHEN the settings are shown, as a table and as JSON
    assert cli.main(["config", "show"]) == 0
    table = capsys.readouterr().out
    assert cli.main(["config", "show", "--json"]) == 0
    out = capsys.readouterr().out
    # THEN no secret is printed, either way
    assert SECRET not in table and SECRET not in out
    rows = {r["name"]: r for r in json.loads(out)["settings"]}
    # every field of the settings model is there, by its variable name
    assert len(rows) == len(Settings.model_fields)
    assert rows["ANTHROPIC_API_KEY"] == {
        "name": "ANTHROPIC_API_KEY",
        "field": "anthropic_api_key",
        "value": "set",
        "source": "environment",
    }
    assert rows["CHARTER_ALERT_WEBHOOK_URL"]["value"] == "set"
    assert rows["CHARTER_VAULT_KEY"]["value"] == "unset"  # a secret not given: unset, not None
    assert rows["CHARTER_MODEL"] == {
        "name": "CHARTER_MODEL",
        "field": "model",
        "value": "claude-test-model",
        "source": "environment",
    }
    assert rows["CHARTER_MAX_STEPS"]["source"] == "default"
    assert "None" not in table.split() and "True" not in table.split()


def test_what_the_demo_left_is_shown_as_coming_from_its_file(home: Path, capsys: pytest.CaptureFixture[str]):
    # GIVEN the settings file `charter demo` leaves in CHARTER_HOME
    env_file = home / "demo" / "charter.env"
    env_file.parent.mkdir()
    env_file.write_text(
        f"CHARTER_STORE=sqlite\nCHARTER_STORE_PATH={home / 'demo.sqlite'}\n", encoding="utf-8"
    )
    # WHEN shown
    assert cli.main(["config", "show", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    rows = {r["name"]: r for r in shown["settings"]}
    # THEN those values come from that file, the rest from defaults
    assert shown["settings_file"] == str(env_file)
    assert rows["CHARTER_STORE"] == {
        "name": "CHARTER_STORE",
        "field": "store",
        "value": "sqlite",
        "source": str(env_file),
    }
    assert rows["CHARTER_PROJECT"]["source"] == "default"


def test_settings_that_do_not_validate_are_one_line_and_exit_2(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    monkeypatch.setenv("CHARTER_MAX_STEPS", "99")
    assert cli.main(["config", "show"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("charter: error: invalid configuration: CHARTER_MAX_STEPS") and err.count("\n") == 1
