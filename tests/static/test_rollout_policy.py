"""The staged rollout, statically: each environment's flags file on the ladder in dev ≥ stg ≥ prod
order, each tfvars naming its own file, and a gate before every step that applies flags.

Each check runs on the real tree, then on copies broken one way each (the mutation tests).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from charter_static_checks import check_flags_document
from rollout_checks import ROLLOUT_CHECKS, check_env_flags, check_flags_wiring, check_promotion_gates
from test_policy_mutations import assert_detects, mutate

CLOUDBUILD = "cloudbuild.yaml"
GATE_STEP = """  - id: flags-gate
    name: ${_CLI_IMAGE}
    waitFor: [lint]
    script: |
      #!/usr/bin/env bash
      set -euo pipefail
      echo "terraform/flags/${_ENV}.json is at stage $(/workspace/.venv/bin/charter flags stage --env "${_ENV}")"
      /workspace/.venv/bin/charter gate promotion --env "${_ENV}" --store firestore --project "${PROJECT_ID}"
"""
GATE_COMMAND = (
    '/workspace/.venv/bin/charter gate promotion --env "${_ENV}" --store firestore --project "${PROJECT_ID}"'
)
CANARY_WAIT = "  - id: flags-canary\n    name: ${_TF_IMAGE}\n    waitFor: [flags-gate, test]\n"


def set_flags(root: Path, env: str, **changes: object) -> None:
    path = root / "terraform" / "flags" / f"{env}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**data, **changes}, indent=2), encoding="utf-8")


@pytest.mark.parametrize("check", ROLLOUT_CHECKS, ids=lambda check: check.__name__)
def test_the_tree_complies(check: Callable[[Path], list[str]], repo_root: Path) -> None:
    # GIVEN the repository WHEN a rollout check reads it THEN it reports no violation
    assert check(repo_root) == []


# --- (a) the flags files ---------------------------------------------------------------------


def test_prod_promoted_to_llm_past_stg_is_reported(repo_copy: Path) -> None:
    # GIVEN a compliant copy WHEN prod.json is set to llm (stg is at shadow)
    assert check_env_flags(repo_copy) == []
    set_flags(repo_copy, "prod", brain_mode="llm", canary_percent=0)
    # THEN the ladder check names prod passing stg
    assert any("prod is at llm, past stg" in v for v in check_env_flags(repo_copy)), check_env_flags(
        repo_copy
    )


def test_a_file_off_the_ladder_is_reported(repo_copy: Path) -> None:
    assert check_env_flags(repo_copy) == []
    set_flags(repo_copy, "stg", brain_mode="canary", canary_percent=25)
    assert any("stg is off the ladder" in v for v in check_env_flags(repo_copy))


def test_a_single_shared_flags_file_is_reported(repo_copy: Path) -> None:
    # GIVEN a compliant copy WHEN the old one-for-all flags.json comes back
    assert check_env_flags(repo_copy) == []
    (repo_copy / "terraform" / "flags" / "flags.json").write_text("{}", encoding="utf-8")
    # THEN it is reported as not an environment's file
    assert any("flags.json: not an environment's flags file" in v for v in check_env_flags(repo_copy))


def test_a_missing_environment_file_is_reported(repo_copy: Path) -> None:
    assert check_env_flags(repo_copy) == []
    (repo_copy / "terraform" / "flags" / "stg.json").unlink()
    assert any("stg: no flags file" in v for v in check_env_flags(repo_copy))


def test_prod_tfvars_naming_the_dev_file_is_reported(repo_copy: Path) -> None:
    assert_detects(
        check_flags_wiring,
        repo_copy,
        "terraform/envs/prod.tfvars",
        'flags_file = "../flags/prod.json"',
        'flags_file = "../flags/dev.json"',
        "prod.tfvars must set flags_file",
    )


def test_a_default_flags_file_in_the_module_is_reported(repo_copy: Path) -> None:
    # GIVEN a compliant copy WHEN the flags module falls back to one file for every environment
    assert_detects(
        check_flags_document,
        repo_copy,
        "terraform/modules/flags/main.tf",
        "  flags_file   = var.flags_file\n",
        '  flags_file   = coalesce(var.flags_file, "${path.module}/../../flags/dev.json")\n',
        "local.flags_file must be var.flags_file",
    )


# --- (b) the pipeline ------------------------------------------------------------------------


def test_removing_the_gate_step_is_reported(repo_copy: Path) -> None:
    # GIVEN a compliant copy WHEN the gate step is removed
    assert check_promotion_gates(repo_copy) == []
    mutate(repo_copy, CLOUDBUILD, GATE_STEP, "")
    violations = check_promotion_gates(repo_copy)
    # THEN the pipeline has no gate, and every terraform apply is reported ungated
    assert any("no gate step" in v for v in violations), violations
    ungated = {v.split(":")[0] for v in violations if "no passing gate step before it" in v}
    assert {"deploy-0pct", "traffic", "flags-shadow", "flags-canary"} <= ungated


def test_a_flags_apply_that_no_longer_waits_for_the_gate_is_reported(repo_copy: Path) -> None:
    new = CANARY_WAIT.replace("[flags-gate, test]", "[lint]")
    assert_detects(
        check_promotion_gates,
        repo_copy,
        CLOUDBUILD,
        CANARY_WAIT,
        new,
        "flags-canary: applies terraform/flags",
    )


def test_a_gate_that_does_not_read_the_environments_firestore_is_reported(repo_copy: Path) -> None:
    assert_detects(
        check_promotion_gates,
        repo_copy,
        CLOUDBUILD,
        GATE_COMMAND,
        '/workspace/.venv/bin/charter gate promotion --env "${_ENV}"',
        "must read the environment's store",
    )


def test_a_gate_skipped_in_some_stage_is_reported(repo_copy: Path) -> None:
    skip = 'if [ "${_ROLLOUT_STAGE}" = "deploy" ]; then exit 0; fi\n      ' + GATE_COMMAND
    assert_detects(
        check_promotion_gates, repo_copy, CLOUDBUILD, GATE_COMMAND, skip, "must run in every stage"
    )


def test_a_gate_whose_failure_is_ignored_is_reported(repo_copy: Path) -> None:
    assert_detects(
        check_promotion_gates,
        repo_copy,
        CLOUDBUILD,
        GATE_COMMAND,
        GATE_COMMAND + " || true",
        "must fail the build",
    )


def test_a_step_that_rewrites_the_flags_file_is_reported(repo_copy: Path) -> None:
    # GIVEN a compliant copy WHEN the canary stage edits the committed file before applying it
    old = """      grep -E '"(version|brain_mode|canary_percent)"' "../flags/${_ENV}.json"\n"""
    text = (repo_copy / CLOUDBUILD).read_text(encoding="utf-8")
    at = text.index("  - id: flags-canary")
    edited = """      sed -i 's/"shadow"/"llm"/' "../flags/${_ENV}.json"\n"""
    (repo_copy / CLOUDBUILD).write_text(text[:at] + text[at:].replace(old, edited, 1), encoding="utf-8")
    # THEN the step is reported as writing a flags file
    assert any("flags-canary: writes a flags file" in v for v in check_promotion_gates(repo_copy))


def test_an_apply_with_another_flags_file_is_reported(repo_copy: Path) -> None:
    old = '-var-file=/workspace/rollout.tfvars.json -var "candidate_percent=100"'
    new = old + ' -var "flags_file=../flags/dev.json"'
    assert_detects(check_promotion_gates, repo_copy, CLOUDBUILD, old, new, "traffic: replaces or rewrites")
