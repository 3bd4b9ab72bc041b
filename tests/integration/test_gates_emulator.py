"""``charter gate`` on the Firestore emulator, through the operator runtime exactly as the
pipeline runs it (``--store firestore --project P``): seeded evidence that passes exits 0,
evidence that fails exits 1 naming the check, no evidence exits 2 saying so, and no store
exits 2."""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from pathlib import Path

import pytest

# The evidence builders of the unit tests (the product's record and comparison models).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "rollout"))

from gate_fakes import seed_comparisons, seed_records
from rollout_fakes import write_flags

from shared_lib.cli import main
from shared_lib.flags import seed_flags
from shared_lib.ids import utc_now

pytestmark = pytest.mark.integration
HOUR_AGO = timedelta(hours=1)


@pytest.fixture
def cli_env(firestore_project, monkeypatch, tmp_path) -> str:
    """The emulator host is exported (``emulator_env``); nothing else names a store."""
    monkeypatch.setenv("CHARTER_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PUBSUB_EMULATOR_HOST", raising=False)
    return firestore_project


def gate(project: str, *argv: str) -> int:
    return main(["gate", *argv, "--store", "firestore", "--project", project])


def test_given_a_passing_canary_on_the_emulator_when_gated_then_exit_0(firestore_store, cli_env, capsys):
    # GIVEN a day of canary traffic in the environment's Firestore, the LLM arm within every bar
    seed_records(firestore_store, utc_now() - HOUR_AGO, 25, arm="llm", duration_ms=2500, cost_usd=0.03)
    seed_records(firestore_store, utc_now() - HOUR_AGO, 25, arm="legacy", duration_ms=300, cost_usd=0.0)
    # WHEN the canary gate reads it through the operator runtime
    code = gate(cli_env, "canary", "--since", "24h", "--json")
    # THEN it passes, counting exactly the seeded turns
    data = json.loads(capsys.readouterr().out)
    assert (code, data["outcome"]) == (0, "pass")
    assert (data["figures"]["llm"]["turns"], data["figures"]["legacy"]["turns"]) == (25, 25)


def test_given_a_failing_canary_on_the_emulator_when_gated_then_exit_1_naming_the_check(
    firestore_store, cli_env, capsys
):
    # GIVEN an LLM arm whose turns fail one time in five
    at = utc_now() - HOUR_AGO
    seed_records(firestore_store, at, 5, arm="llm", failed=True)
    seed_records(firestore_store, at, 20, arm="llm")
    seed_records(firestore_store, at, 25, arm="legacy")
    # WHEN gated THEN exit 1, naming the error rate with its figure and bar
    assert gate(cli_env, "canary") == 1
    out = capsys.readouterr().out
    assert "canary gate FAILED: error_rate 0.2 (required <= 0.05)" in out
    assert "[NO] error_rate: 0.2" in out


def test_given_shadow_comparisons_on_the_emulator_when_gated_then_pass_or_fail_by_agreement(
    firestore_store, cli_env, capsys
):
    # GIVEN 200 agreeing comparisons in one org and 200 in another where 1 in 10 disagrees
    at = utc_now() - HOUR_AGO
    seed_comparisons(firestore_store, at, 200, org="acme")
    seed_comparisons(firestore_store, at, 200, disagree=20, org="beta")
    # WHEN each org is gated THEN acme passes and beta fails on tool agreement
    assert gate(cli_env, "shadow", "--org", "acme") == 0
    assert "shadow gate passed" in capsys.readouterr().out
    assert gate(cli_env, "shadow", "--org", "beta") == 1
    assert "tool_agreement 0.9 (required >= 0.95)" in capsys.readouterr().out


def test_given_an_empty_environment_when_gated_then_exit_2_saying_there_is_no_data(
    firestore_store, cli_env, capsys
):
    # GIVEN comparisons only from before the window
    seed_comparisons(firestore_store, utc_now() - timedelta(days=2), 200)
    # WHEN the shadow gate looks at the last day THEN exit 2, saying why it cannot pass
    assert gate(cli_env, "shadow", "--since", "24h") == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("charter: error: no shadow comparisons since ")
        and "the gate cannot pass without data" in err
    )
    assert gate(cli_env, "canary") == 2
    assert "no llm-arm turns since" in capsys.readouterr().err


def test_given_no_store_when_gated_then_exit_2(monkeypatch, tmp_path, capsys):
    # GIVEN no store named anywhere (no --store, no settings, nothing left by the stack or demo)
    monkeypatch.setenv("CHARTER_HOME", str(tmp_path / "home"))
    for var in ("CHARTER_STORE", "CHARTER_STORE_PATH", "FIRESTORE_EMULATOR_HOST", "PUBSUB_EMULATOR_HOST"):
        monkeypatch.delenv(var, raising=False)  # an earlier test's emulator stays exported
    # WHEN a gate runs THEN exit 2 with one line
    assert main(["gate", "shadow"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no store configured" in err


def test_given_the_live_shadow_document_when_the_pipeline_gates_canary_10_then_the_shadow_gate_decides(
    firestore_store, cli_env, tmp_path, capsys
):
    # GIVEN stg live in shadow (as Terraform writes it) and canary 10 committed, with no evidence yet
    seed_flags(firestore_store, write_flags(tmp_path / "live.json", brain_mode="shadow", canary_percent=0))
    committed = write_flags(tmp_path / "stg.json", brain_mode="canary", canary_percent=10)
    # WHEN the pipeline's gate runs THEN the promotion waits for data (exit 2)
    assert gate(cli_env, "promotion", "--env", "stg", "--file", str(committed)) == 2
    assert "no shadow comparisons since" in capsys.readouterr().err
    # WHEN a week of agreeing comparisons is there THEN it passes
    seed_comparisons(firestore_store, utc_now() - HOUR_AGO, 200)
    assert gate(cli_env, "promotion", "--env", "stg", "--file", str(committed)) == 0
    assert "shadow -> canary-10 needs the shadow gate" in capsys.readouterr().out
