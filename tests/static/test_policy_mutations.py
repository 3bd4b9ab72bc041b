"""Mutation tests: break one rule in a copy of the tree and show that its check reports it.

Each test first runs the check on the untouched copy (no violation), then applies one textual
mutation and runs the same check again.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from charter_static_checks import (
    check_alert_policies,
    check_cloudbuild,
    check_dockerfile,
    check_firestore,
    check_flags_document,
    check_no_hardcoded_names,
    check_public_access,
    check_publisher_grants,
    check_push_subscriptions,
    check_secret_env,
    check_service_accounts,
    check_terraform_fmt,
)

Check = Callable[[Path], list[str]]

PUBSUB = "terraform/modules/pubsub/main.tf"
RUN = "terraform/modules/run_services/main.tf"
IAM = "terraform/modules/iam/main.tf"
MONITORING = "terraform/modules/monitoring/main.tf"

DYNAMIC_DEAD_LETTER = """  dynamic "dead_letter_policy" {
    for_each = each.value.dead_letter ? [google_pubsub_topic.this[local.deadletter_key].id] : []

    content {
      dead_letter_topic     = dead_letter_policy.value
      max_delivery_attempts = local.retry.max_delivery_attempts
    }
  }
"""

SECRET_ENV = """      dynamic "env" {
        for_each = toset(lookup(var.secrets_by_target, each.key, []))
"""


def mutate(root: Path, relative: str, old: str, new: str) -> None:
    """Replace exactly one occurrence of ``old`` by ``new`` in ``root/relative``."""
    path = root / relative
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"mutation anchor not found once in {relative}: {old!r}"
    path.write_text(text.replace(old, new), encoding="utf-8")


def assert_detects(check: Check, root: Path, relative: str, old: str, new: str, expected: str) -> None:
    """GIVEN a compliant copy WHEN one rule is broken THEN ``check`` reports a violation naming it."""
    assert check(root) == [], "the untouched copy must comply"
    mutate(root, relative, old, new)
    violations = check(root)
    assert any(expected in violation for violation in violations), violations


def test_removed_dead_letter_policy_is_reported(repo_copy: Path) -> None:
    assert_detects(check_push_subscriptions, repo_copy, PUBSUB, DYNAMIC_DEAD_LETTER, "", "dead_letter_policy")


def test_static_dead_letter_policy_on_every_subscription_is_reported(repo_copy: Path) -> None:
    # The observer's own subscription on the dead-letter topic must not dead-letter into itself.
    static = """  dead_letter_policy {
    dead_letter_topic     = google_pubsub_topic.this[local.deadletter_key].id
    max_delivery_attempts = local.retry.max_delivery_attempts
  }
"""
    assert_detects(
        check_push_subscriptions, repo_copy, PUBSUB, DYNAMIC_DEAD_LETTER, static, "dead_letter=false"
    )


def test_push_without_oidc_token_is_reported(repo_copy: Path) -> None:
    oidc = """
    oidc_token {
      service_account_email = var.invoker_service_account_email
      audience              = var.service_urls[each.value.target]
    }
"""
    assert_detects(check_push_subscriptions, repo_copy, PUBSUB, oidc, "", "oidc_token")


def test_all_users_on_a_non_ingress_service_is_reported(repo_copy: Path) -> None:
    grant = """
resource "google_cloud_run_v2_service_iam_member" "admin_public" {
  project  = var.project_id
  location = var.region
  name     = google_cloud_run_v2_service.this["admin"].name
  role     = "roles/run.invoker"
  member   = "allUsers"
}
"""
    anchor = "# Invokers. Internal targets: only the Pub/Sub push invoker.\n"
    assert_detects(check_public_access, repo_copy, RUN, anchor, grant + anchor, "only ingress may be public")


def test_widening_the_unauthenticated_targets_is_reported(repo_copy: Path) -> None:
    old = 'unauthenticated_targets = toset(["ingress"])'
    new = 'unauthenticated_targets = toset(["ingress", "brain"])'
    assert_detects(check_public_access, repo_copy, RUN, old, new, "only ingress may be public")


def test_hard_coded_topic_name_is_reported(repo_copy: Path) -> None:
    old = "  name    = each.value\n"
    new = '  name    = each.key == "received" ? "turns.received" : each.value\n'
    assert_detects(check_no_hardcoded_names, repo_copy, PUBSUB, old, new, "hard-coded topic name")


def test_hard_coded_subscription_name_is_reported(repo_copy: Path) -> None:
    old = '  bigquery_subscription_name = "${local.topology.bigquery.topic}-bigquery-sub"'
    new = '  bigquery_subscription_name = "observer-events-sub"'
    assert_detects(check_no_hardcoded_names, repo_copy, PUBSUB, old, new, "observer-events-sub")


def test_publisher_grant_on_a_foreign_topic_is_reported(repo_copy: Path) -> None:
    old = '    brain        = ["proposed", "events"]'
    new = '    brain        = ["proposed", "events", "authorized"]'
    assert_detects(check_publisher_grants, repo_copy, IAM, old, new, "not its output topics")


def test_project_wide_publisher_grant_is_reported(repo_copy: Path) -> None:
    grant = """
resource "google_project_iam_member" "publisher_everywhere" {
  for_each = local.topology.targets

  project = var.project_id
  role    = "roles/pubsub.publisher"
  member  = google_service_account.target[each.key].member
}
"""
    anchor = 'resource "google_pubsub_topic_iam_member" "publisher" {'
    assert_detects(check_publisher_grants, repo_copy, IAM, anchor, grant + anchor, "outside the per-target")


def test_plain_secret_value_in_env_is_reported(repo_copy: Path) -> None:
    plain = """      env {
        name  = "ANTHROPIC_API_KEY"
        value = var.anthropic_api_key
      }

"""
    assert_detects(check_secret_env, repo_copy, RUN, SECRET_ENV, plain + SECRET_ENV, "plain value")


def test_secret_in_the_plain_env_map_is_reported(repo_copy: Path) -> None:
    old = "    CHARTER_ENV            = var.env\n"
    new = old + '    SLACK_BOT_TOKEN        = "xoxb-not-a-real-token"\n'
    assert_detects(check_secret_env, repo_copy, RUN, old, new, "SLACK_BOT_TOKEN")


def test_service_without_its_own_account_is_reported(repo_copy: Path) -> None:
    old = "    service_account                  = var.service_account_emails[each.key]\n"
    assert_detects(check_service_accounts, repo_copy, RUN, old, "", "own account")


def test_missing_ttl_collection_group_is_reported(repo_copy: Path) -> None:
    old = '"idempotency", "receipts", "sessions", "pending_actions"'
    new = '"idempotency", "receipts", "sessions"'
    assert_detects(
        check_firestore, repo_copy, "terraform/modules/firestore/main.tf", old, new, "pending_actions"
    )


def test_changed_seed_threshold_is_reported(repo_copy: Path) -> None:
    old = "      threshold          = 0.10\n"
    new = "      threshold          = 0.25\n"
    assert_detects(check_alert_policies, repo_copy, MONITORING, old, new, "block_rate")


def test_dockerfile_without_user_is_reported(repo_copy: Path) -> None:
    assert_detects(check_dockerfile, repo_copy, "Dockerfile", "USER 10001:10001\n", "", "no USER")


def test_dockerfile_with_unpinned_base_is_reported(repo_copy: Path) -> None:
    text = (repo_copy / "Dockerfile").read_text(encoding="utf-8")
    pinned = next(line for line in text.splitlines() if line.startswith("ARG PYTHON_IMAGE="))
    assert_detects(
        check_dockerfile, repo_copy, "Dockerfile", pinned, "ARG PYTHON_IMAGE=python:3.11-slim", "not pinned"
    )


def test_compiler_in_the_final_stage_is_reported(repo_copy: Path) -> None:
    old = "WORKDIR /app\n"
    new = "RUN apt-get update && apt-get install -y build-essential\n" + old
    assert_detects(check_dockerfile, repo_copy, "Dockerfile", old, new, "compiler")


def test_traffic_before_smoke_is_reported(repo_copy: Path) -> None:
    old = "    waitFor: [deploy-0pct]\n"
    assert_detects(
        check_cloudbuild,
        repo_copy,
        "cloudbuild.yaml",
        "  - id: smoke\n",
        "  - id: smoke-later\n",
        "missing step 'smoke'",
    )
    assert old in (repo_copy / "cloudbuild.yaml").read_text(encoding="utf-8")


def test_reordered_pipeline_is_reported(repo_copy: Path) -> None:
    # Swap the ids of build and push: push would come first.
    mutate(repo_copy, "cloudbuild.yaml", "  - id: build\n", "  - id: PLACEHOLDER\n")
    assert check_cloudbuild(repo_copy) != []
    mutate(repo_copy, "cloudbuild.yaml", "  - id: push\n", "  - id: build\n")
    mutate(repo_copy, "cloudbuild.yaml", "  - id: PLACEHOLDER\n", "  - id: push\n")
    assert any("out of order" in v for v in check_cloudbuild(repo_copy))


def test_unformatted_terraform_is_reported(repo_copy: Path) -> None:
    old = "  ack_deadline_seconds    = local.retry.ack_deadline_seconds\n"
    new = "  ack_deadline_seconds = local.retry.ack_deadline_seconds\n"
    assert_detects(check_terraform_fmt, repo_copy, PUBSUB, old, new, "pubsub")


def test_flag_document_without_hash_is_reported(repo_copy: Path) -> None:
    old = "    sha256        = { stringValue = sha256(local.flags_text) }\n"
    assert_detects(check_flags_document, repo_copy, "terraform/modules/flags/main.tf", old, "", "sha256")


# --- alert policies ----------------------------------------------------------------------------


def test_alert_policy_outside_the_map_is_reported(repo_copy: Path) -> None:
    policy = """
resource "google_monitoring_alert_policy" "extra" {
  project      = var.project_id
  display_name = "Charter: something else"
  combiner     = "OR"
}
"""
    anchor = "# The policies were one resource each"
    assert_detects(
        check_alert_policies, repo_copy, MONITORING, anchor, policy + anchor, "one google_monitoring"
    )


def test_threshold_written_in_the_resource_is_reported(repo_copy: Path) -> None:
    old = "        threshold_value    = each.value.threshold\n"
    new = "        threshold_value    = 0.1\n"
    assert_detects(check_alert_policies, repo_copy, MONITORING, old, new, "threshold_value")


def test_alert_dropped_from_the_map_is_reported(repo_copy: Path) -> None:
    text = (repo_copy / MONITORING).read_text(encoding="utf-8")
    start = text.index("    confirm_rate = {\n")
    end = text.index("    block_rate = {\n")
    assert_detects(check_alert_policies, repo_copy, MONITORING, text[start:end], "", "confirm_rate")


def test_missing_moved_block_is_reported(repo_copy: Path) -> None:
    old = """moved {
  from = google_monitoring_alert_policy.ingress_5xx
  to   = google_monitoring_alert_policy.this["ingress_5xx"]
}
"""
    assert_detects(check_alert_policies, repo_copy, MONITORING, old, "", "ingress_5xx")
