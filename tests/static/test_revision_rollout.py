"""The revision rollout on the real tree, and each of its checks shown to catch a broken copy.

Smoke twins: every subscription a turn passes has a twin that pushes to the candidate's tag URL;
each target publishes to the twins of its own topics; the stable revision stays tagged after a
promotion; the pipeline smoke-tests every candidate and checks for a rollback after promotion.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from revision_checks import (
    REVISION_CHECKS,
    check_previous_revision_kept,
    check_revision_pipeline,
    check_smoke_endpoints,
    check_smoke_publishers,
    check_smoke_twins,
)
from test_policy_mutations import assert_detects

from shared_lib.flags import env_flags_file, load_flags_file
from shared_lib.flags.evaluation import evaluate
from shared_lib.rollout.smoke import SMOKE_ORG

PUBSUB_SMOKE = "terraform/modules/pubsub/smoke.tf"
PUBSUB_MAIN = "terraform/modules/pubsub/main.tf"
RUN_MAIN = "terraform/modules/run_services/main.tf"
RUN_OUTPUTS = "terraform/modules/run_services/outputs.tf"
CHARTER_MAIN = "terraform/modules/charter/main.tf"
IAM_MAIN = "terraform/modules/iam/main.tf"


@pytest.mark.parametrize("check", REVISION_CHECKS, ids=lambda check: check.__name__)
def test_tree_complies(check: Callable[[Path], list[str]], repo_root: Path) -> None:
    # GIVEN the repository WHEN a revision-rollout check reads it THEN it reports no violation
    assert check(repo_root) == []


def test_a_turn_topic_without_a_twin_is_reported(repo_copy: Path) -> None:
    # GIVEN topology.json WHEN the executed topic loses its smoke twin
    # THEN the topic and the responder's subscription on it are reported
    path = repo_copy / "shared_lib/delivery/topology.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert check_smoke_twins(repo_copy) == []
    data["smoke"]["topics"].remove("executed")
    path.write_text(json.dumps(data), encoding="utf-8")
    violations = check_smoke_twins(repo_copy)
    assert "topic 'executed' carries turns but has no smoke twin in topology.json" in violations
    assert "subscription 'responder-sub' has no smoke twin" in violations


def test_a_twin_that_loses_its_dead_letters_is_reported(repo_copy: Path) -> None:
    # GIVEN the twins' derivation WHEN it drops the dead-letter flag of every twin THEN each is reported
    old = """      topic = "${local.smoke.topic_prefix}${sub.topic}"
"""
    new = """      topic       = "${local.smoke.topic_prefix}${sub.topic}"
      dead_letter = false
"""
    assert_detects(check_smoke_twins, repo_copy, PUBSUB_MAIN, old, new, "smoke twin of 'brain-sub' is")


def test_a_twin_pushing_to_the_serving_revision_is_reported(repo_copy: Path) -> None:
    # GIVEN the smoke subscriptions WHEN they push to the service URL (the serving revisions)
    old = "    push_endpoint = var.candidate_urls[each.value.target]\n"
    new = "    push_endpoint = var.service_urls[each.value.target]\n"
    assert_detects(
        check_smoke_endpoints, repo_copy, PUBSUB_SMOKE, old, new, "push_endpoint is not var.candidate_urls"
    )


def test_candidate_urls_wired_to_the_service_urls_are_reported(repo_copy: Path) -> None:
    old = "  candidate_urls                = module.run_services.candidate_tag_urls\n"
    new = "  candidate_urls                = module.run_services.service_urls\n"
    assert_detects(check_smoke_endpoints, repo_copy, CHARTER_MAIN, old, new, "must pass candidate_urls")


def test_a_tag_url_not_made_from_the_candidate_tag_is_reported(repo_copy: Path) -> None:
    old = '"https://${var.candidate_tag}---${trimprefix(service.uri, "https://")}"'
    new = '"https://${var.stable_tag}---${trimprefix(service.uri, "https://")}"'
    assert_detects(check_smoke_endpoints, repo_copy, RUN_OUTPUTS, old, new, "candidate_tag_urls is not")


def test_a_target_that_cannot_publish_to_its_twins_is_reported(repo_copy: Path) -> None:
    # GIVEN the publisher grants WHEN the twins are left out THEN every missing grant is named
    old = "for topic in concat(topics, local.smoke_publishes[target])"
    new = "for topic in topics"
    assert_detects(
        check_smoke_publishers, repo_copy, IAM_MAIN, old, new, "iam: brain/smoke.proposed is missing"
    )


def test_a_grant_on_a_twin_beyond_the_policy_is_reported(repo_copy: Path) -> None:
    # GIVEN the smoke publishers WHEN every target may publish to every twin THEN the extras are named
    old = """      for topic in topics : "${local.topology.smoke.topic_prefix}${topic}" if contains(local.topology.smoke.topics, topic)"""
    new = (
        '''      for topic in local.topology.smoke.topics : "${local.topology.smoke.topic_prefix}${topic}"'''
    )
    assert_detects(
        check_smoke_publishers,
        repo_copy,
        IAM_MAIN,
        old,
        new,
        "publisher_grants has observer/smoke.received beyond",
    )


def test_dropping_the_previous_revision_at_promotion_is_reported(repo_copy: Path) -> None:
    # GIVEN the traffic blocks WHEN the stable revision's block ends with the promotion again
    old = '    for_each = local.candidate && var.stable_tag != "" && var.stable_tag != var.candidate_tag ? [1] : []\n'
    new = "    for_each = local.candidate && var.candidate_percent < 100 ? [1] : []\n"
    assert_detects(check_previous_revision_kept, repo_copy, RUN_MAIN, old, new, "ends with the promotion")


def test_a_smoke_step_that_only_pings_the_ingress_is_reported(repo_copy: Path) -> None:
    old = "/workspace/.venv/bin/python -m infra.smoke_runner"
    new = "/workspace/.venv/bin/python -m infra.webhook_sender"
    assert_detects(
        check_revision_pipeline, repo_copy, "cloudbuild.yaml", old, new, "smoke must run infra.smoke_runner"
    )


def test_a_rollback_step_whose_exit_fails_the_build_before_the_sync_is_reported(repo_copy: Path) -> None:
    old = "    allowExitCodes: [1]\n"
    assert_detects(
        check_revision_pipeline, repo_copy, "cloudbuild.yaml", old, "", "rollback must allow exit 1"
    )


def test_a_missing_rollback_step_is_reported(repo_copy: Path) -> None:
    assert_detects(
        check_revision_pipeline,
        repo_copy,
        "cloudbuild.yaml",
        "  - id: rollback\n",
        "  - id: later\n",
        "missing step 'rollback'",
    )


def test_a_sync_that_does_not_fail_the_build_is_reported(repo_copy: Path) -> None:
    old = '      echo "rolled back to the previous revisions (see above); failing the build" >&2\n      exit 1\n'
    assert_detects(check_revision_pipeline, repo_copy, "cloudbuild.yaml", old, "", "rollback-sync must apply")


def test_a_traffic_shift_that_does_not_wait_for_the_recall_gate_is_reported(repo_copy: Path) -> None:
    # GIVEN the pipeline WHEN the traffic shift waits only for the smoke step again
    old = "    name: ${_TF_IMAGE}\n    waitFor: [recall-gate]\n"
    new = "    name: ${_TF_IMAGE}\n    waitFor: [smoke]\n"
    assert_detects(
        check_revision_pipeline, repo_copy, "cloudbuild.yaml", old, new, "traffic must wait for recall-gate"
    )


def test_a_missing_recall_gate_is_reported(repo_copy: Path) -> None:
    assert_detects(
        check_revision_pipeline,
        repo_copy,
        "cloudbuild.yaml",
        "  - id: recall-gate\n",
        "  - id: recall-later\n",
        "missing step 'recall-gate'",
    )


def test_a_recall_gate_that_asks_the_stable_revisions_is_reported(repo_copy: Path) -> None:
    # GIVEN the recall gate WHEN it asks the service URL (the stable revisions) instead of the tag URL
    old = 'candidate="$(python3 -c \'import json; print(json.load(open("/workspace/candidate_urls.json"))'
    new = 'candidate="$(python3 -c \'import json; print(json.load(open("/workspace/service_urls.json"))'
    assert_detects(
        check_revision_pipeline, repo_copy, "cloudbuild.yaml", old, new, "ask the candidate's tag URL"
    )


def test_a_recall_gate_whose_failure_is_allowed_is_reported(repo_copy: Path) -> None:
    old = "  - id: recall-gate\n    name: ${_CLI_IMAGE}\n"
    new = "  - id: recall-gate\n    name: ${_CLI_IMAGE}\n    allowExitCodes: [1]\n"
    assert_detects(check_revision_pipeline, repo_copy, "cloudbuild.yaml", old, new, "must fail the build")


@pytest.mark.parametrize("env", ["dev", "stg", "prod"])
def test_every_environment_serves_the_smoke_tenant_the_llm_brain_so_the_recall_gate_judges_it(
    env: str,
) -> None:
    # GIVEN an environment's committed flags WHEN the smoke tenant's brain is evaluated
    doc = load_flags_file(env_flags_file(env))
    served = evaluate(doc, SMOKE_ORG, "smoke-user")
    # THEN it is the LLM brain, whatever the environment's own mode: a legacy-served smoke turn
    # would leave the recall gate nothing to judge (NOT_APPLICABLE) and every deploy unproven
    assert served.arm == "llm", (env, doc.brain_mode, doc.org_modes)
