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
    check_env_files,
    check_env_root,
    check_firestore,
    check_flags_document,
    check_no_hardcoded_names,
    check_public_access,
    check_publisher_grants,
    check_push_subscriptions,
    check_secret_access,
    check_secret_env,
    check_service_accounts,
    check_service_env,
    check_terraform_fmt,
    check_threads,
    check_timeout_nesting,
)

Check = Callable[[Path], list[str]]

PUBSUB = "terraform/modules/pubsub/main.tf"
RUN = "terraform/modules/run_services/main.tf"
IAM = "terraform/modules/iam/main.tf"
FIRESTORE = "terraform/modules/firestore/main.tf"
FIRESTORE_TTL = "terraform/modules/firestore/collections.tf"
COLLECTIONS = "shared_lib/config/collections.json"
MONITORING = "terraform/modules/monitoring/main.tf"
SECRETS = "terraform/modules/secrets/main.tf"
ROOT_MAIN = "terraform/envs/main.tf"
ROOT_VARIABLES = "terraform/envs/variables.tf"

DYNAMIC_DEAD_LETTER = """  dynamic "dead_letter_policy" {
    for_each = each.value.dead_letter ? [google_pubsub_topic.this[local.deadletter_key].id] : []

    content {
      dead_letter_topic     = dead_letter_policy.value
      max_delivery_attempts = local.retry.max_delivery_attempts
    }
  }
"""

SECRET_ENV = """      dynamic "env" {
        for_each = local.service_secrets[each.key]
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


def test_push_without_the_topology_filter_is_reported(repo_copy: Path) -> None:
    # brain-shadow-sub and observer-events-sub have a filter: a subscription that drops it pushes
    # every turn to the shadow brain and the observer's own records back to it
    assert_detects(
        check_push_subscriptions,
        repo_copy,
        PUBSUB,
        "  filter = try(each.value.filter, null)\n",
        "",
        "filter does not come from topology.json",
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
    # The TTL policies are a for_each over the catalogue: dropping the group's TTL field there
    # drops its policy, and the four groups that always expire are still required.
    old = '"owner": "shared_lib.state.session",\n      "ttl_field": "expires_at",\n      "description": "No current'
    new = '"owner": "shared_lib.state.session",\n      "ttl_field": null,\n      "description": "No current'
    assert_detects(check_firestore, repo_copy, COLLECTIONS, old, new, "pending_actions")


def test_ttl_policy_left_out_of_terraform_is_reported(repo_copy: Path) -> None:
    old = "    if c.ttl_field != null\n"
    new = '    if c.ttl_field != null && c.name != "vaults"\n'
    assert_detects(check_firestore, repo_copy, FIRESTORE_TTL, old, new, "vaults")


def test_ttl_policy_on_another_field_than_the_catalogues_is_reported(repo_copy: Path) -> None:
    old = "  field      = each.value\n"
    new = '  field      = "expire_time"\n'
    assert_detects(check_firestore, repo_copy, FIRESTORE, old, new, "the catalogue says 'expires_at'")


def test_a_collection_group_with_conflicting_ttl_fields_is_reported(repo_copy: Path) -> None:
    # rollout_guard_events shares the group "events" with no other TTL collection; give the
    # organisation events another TTL field: one TTL policy per group cannot serve both.
    old = '"path": "orgs/{org}/events/{id}",\n      "owner": "shared_lib.layers.observer",\n      "ttl_field": null'
    new = '"path": "orgs/{org}/events/{id}",\n      "owner": "shared_lib.layers.observer",\n      "ttl_field": "purge_at"'
    assert_detects(check_firestore, repo_copy, COLLECTIONS, old, new, "terraform console")


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


def test_an_image_that_compiles_its_source_at_each_cold_start_is_reported(repo_copy: Path) -> None:
    text = (repo_copy / "Dockerfile").read_text(encoding="utf-8")
    compile_line = next(line for line in text.splitlines() if "compileall" in line)
    assert_detects(
        check_dockerfile, repo_copy, "Dockerfile", compile_line + "\n", "", "compile the copied source"
    )


def test_an_image_compiling_before_it_copies_the_source_is_reported(repo_copy: Path) -> None:
    text = (repo_copy / "Dockerfile").read_text(encoding="utf-8")
    compile_line = next(line for line in text.splitlines() if "compileall" in line) + "\n"
    assert check_dockerfile(repo_copy) == [], "the untouched copy must comply"
    moved = text.replace(compile_line, "").replace("WORKDIR /app\n", "WORKDIR /app\n" + compile_line)
    (repo_copy / "Dockerfile").write_text(moved, encoding="utf-8")
    assert any("compile the copied source" in v for v in check_dockerfile(repo_copy))


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


# --- what each service receives --------------------------------------------------------------


def test_a_secret_under_another_env_name_is_reported(repo_copy: Path) -> None:
    # The ingress reads LINE_CHANNEL_SECRET; LINE_SECRET is read by nothing.
    old = '      LINE_CHANNEL_SECRET    = "line-channel-secret"\n'
    new = '      LINE_SECRET            = "line-channel-secret"\n'
    assert_detects(check_service_env, repo_copy, RUN, old, new, "LINE_SECRET")


def test_secret_env_name_derived_from_the_secret_id_is_reported(repo_copy: Path) -> None:
    old = "          name = env.key\n\n          value_source {"
    new = '          name = upper(replace(env.value, "-", "_"))\n\n          value_source {'
    assert_detects(check_service_env, repo_copy, RUN, old, new, "not derived")


def test_executor_without_the_vault_key_is_reported(repo_copy: Path) -> None:
    old = """      CHATWORK_API_TOKEN = "chatwork-api-token"
      CHARTER_VAULT_KEY  = "charter-vault-key"
"""
    new = """      CHATWORK_API_TOKEN = "chatwork-api-token"
"""
    assert_detects(check_secret_access, repo_copy, RUN, old, new, "least-privilege")


def test_executor_on_the_store_task_backend_is_reported(repo_copy: Path) -> None:
    old = """      THREADS              = tostring(local.sizing.executor.concurrency)
      CHARTER_TASK_BACKEND = "chatwork"
"""
    new = """      THREADS              = tostring(local.sizing.executor.concurrency)
      CHARTER_TASK_BACKEND = "store"
"""
    assert_detects(
        check_service_env, repo_copy, RUN, old, new, "service_env[executor] must set CHARTER_TASK_BACKEND"
    )


def test_env_var_set_outside_the_maps_is_reported(repo_copy: Path) -> None:
    extra = """      env {
        name  = "CHARTER_MODEL"
        value = "claude"
      }

"""
    assert_detects(check_service_env, repo_copy, RUN, SECRET_ENV, extra + SECRET_ENV, "CHARTER_MODEL")


def test_secret_that_the_secrets_module_lists_itself_is_reported(repo_copy: Path) -> None:
    old = "  for_each = var.secret_ids\n"
    new = '  for_each = toset(["anthropic-api-key", "charter-vault-key"])\n'
    assert_detects(check_secret_access, repo_copy, SECRETS, old, new, "for_each = var.secret_ids")


def test_secret_value_from_a_variable_is_reported(repo_copy: Path) -> None:
    version = """
resource "google_secret_manager_secret_version" "anthropic" {
  secret      = google_secret_manager_secret.this["anthropic-api-key"].id
  secret_data = var.anthropic_api_key
}
"""
    anchor = "# One 32-byte key per generation"
    assert_detects(check_secret_access, repo_copy, SECRETS, anchor, version + anchor, "generated vault key")


def test_iam_grants_from_their_own_secret_map_are_reported(repo_copy: Path) -> None:
    old = "    for target, secrets in var.service_secrets : {\n"
    new = '    for target, secrets in { admin = { T = "admin-operator-token" } } : {\n'
    assert_detects(check_secret_access, repo_copy, IAM, old, new, "var.service_secrets")


def test_threads_of_another_target_is_reported(repo_copy: Path) -> None:
    old = "      THREADS                     = tostring(local.sizing.brain.concurrency)\n"
    new = "      THREADS                     = tostring(local.sizing.ingress.concurrency)\n"
    assert_detects(check_threads, repo_copy, RUN, old, new, "THREADS of brain")


def test_literal_threads_that_a_tfvars_override_outgrows_is_reported(repo_copy: Path) -> None:
    # A literal equal to the module's concurrency is right until an environment overrides it.
    mutate(
        repo_copy,
        RUN,
        "      THREADS = tostring(local.sizing.ingress.concurrency)\n",
        '      THREADS = "80"\n',
    )
    assert check_threads(repo_copy) == []
    old = "  ingress   = { min_instances = 1, max_instances = 50 }\n"
    new = "  ingress   = { min_instances = 1, max_instances = 50, concurrency = 100 }\n"
    mutate(repo_copy, "terraform/envs/prod.tfvars", old, new)
    assert any("prod: THREADS of ingress" in v for v in check_threads(repo_copy))


def test_threads_follow_a_concurrency_override(repo_copy: Path) -> None:
    # GIVEN prod raising brain's concurrency THEN THREADS (an expression of it) still matches
    old = "  brain     = { min_instances = 1, max_instances = 30 }\n"
    new = "  brain     = { min_instances = 1, max_instances = 30, concurrency = 30 }\n"
    mutate(repo_copy, "terraform/envs/prod.tfvars", old, new)
    assert check_threads(repo_copy) == []


def test_push_timeout_at_the_ack_deadline_is_reported(repo_copy: Path) -> None:
    old = "    timeout_seconds = 50\n"
    new = "    timeout_seconds = 60\n"
    assert_detects(check_timeout_nesting, repo_copy, RUN, old, new, "must be below the ack deadline")


def test_push_timeout_raised_by_an_environment_is_reported(repo_copy: Path) -> None:
    old = "  responder = { min_instances = 1, max_instances = 30 }\n"
    new = "  responder = { min_instances = 1, max_instances = 30, timeout_seconds = 90 }\n"
    assert_detects(
        check_timeout_nesting,
        repo_copy,
        "terraform/envs/prod.tfvars",
        old,
        new,
        "prod: request timeout of responder",
    )


def test_llm_budget_beyond_the_request_timeout_is_reported(repo_copy: Path) -> None:
    old = "  llm_retry_budget_seconds = 40\n"
    new = "  llm_retry_budget_seconds = 55\n"
    assert_detects(check_timeout_nesting, repo_copy, RUN, old, new, "LLM retry budget of brain")


def test_llm_caller_without_a_retry_budget_is_reported(repo_copy: Path) -> None:
    old = """      THREADS                     = tostring(local.sizing.responder.concurrency)
      CHARTER_LLM_RETRY_BUDGET    = tostring(local.llm_retry_budget_seconds)
"""
    new = """      THREADS = tostring(local.sizing.responder.concurrency)
"""
    assert_detects(check_timeout_nesting, repo_copy, RUN, old, new, "responder calls the LLM")


def test_the_old_timeout_precondition_is_reported(repo_copy: Path) -> None:
    # The precondition the wrong way round: timeout >= ack deadline.
    old = "local.sizing[each.key].timeout_seconds < local.topology.retry.ack_deadline_seconds"
    new = "local.sizing[each.key].timeout_seconds >= local.topology.retry.ack_deadline_seconds"
    assert_detects(check_timeout_nesting, repo_copy, RUN, old, new, "timeout < ack deadline")


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


# --- one root, per-environment files -------------------------------------------------------------


def test_tfvars_without_an_env_specific_value_is_reported(repo_copy: Path) -> None:
    old = "deletion_protection  = true\n"
    assert_detects(
        check_env_files,
        repo_copy,
        "terraform/envs/stg.tfvars",
        old,
        "",
        "stg.tfvars does not set deletion_protection",
    )


def test_prod_without_deletion_protection_is_reported(repo_copy: Path) -> None:
    old = "deletion_protection  = true\n"
    new = "deletion_protection  = false\n"
    assert_detects(
        check_env_files, repo_copy, "terraform/envs/prod.tfvars", old, new, "prod: deletion_protection"
    )


def test_tfvars_of_another_environment_is_reported(repo_copy: Path) -> None:
    old = 'env                  = "stg"\n'
    new = 'env                  = "prod"\n'
    assert_detects(check_env_files, repo_copy, "terraform/envs/stg.tfvars", old, new, "sets env = 'prod'")


def test_missing_tfvars_file_is_reported(repo_copy: Path) -> None:
    assert check_env_files(repo_copy) == []
    (repo_copy / "terraform/envs/dev.tfvars").unlink()
    assert any("dev: needs dev.tfvars" in v for v in check_env_files(repo_copy))


def test_wrong_state_prefix_is_reported(repo_copy: Path) -> None:
    old = 'prefix = "charter/stg"\n'
    new = 'prefix = "charter/prod"\n'
    assert_detects(check_env_files, repo_copy, "terraform/envs/stg.gcs.tfbackend", old, new, "prefix")


def test_default_for_an_env_specific_variable_is_reported(repo_copy: Path) -> None:
    old = """  description = "Enable Firestore point-in-time recovery."
  type        = bool
"""
    new = old + "  default     = false\n"
    assert_detects(check_env_root, repo_copy, ROOT_VARIABLES, old, new, "have no default")


def test_second_root_is_reported(repo_copy: Path) -> None:
    assert check_env_root(repo_copy) == []
    second = repo_copy / "terraform/envs/prod"
    second.mkdir()
    (second / "versions.tf").write_text('terraform {\n  backend "gcs" {}\n}\n', encoding="utf-8")
    assert any("the one root" in v for v in check_env_root(repo_copy))


def test_missing_environment_guard_is_reported(repo_copy: Path) -> None:
    old = "    prevent_destroy = true\n"
    assert_detects(check_env_root, repo_copy, ROOT_MAIN, old, "", "environment guard")


def test_plan_without_the_environment_tfvars_is_reported(repo_copy: Path) -> None:
    old = '      terraform plan -input=false -out=tfplan -var-file="${_ENV}.tfvars" \\\n'
    new = "      terraform plan -input=false -out=tfplan \\\n"
    assert_detects(check_cloudbuild, repo_copy, "cloudbuild.yaml", old, new, "tf-plan: terraform plan/apply")


def test_init_without_the_environment_backend_is_reported(repo_copy: Path) -> None:
    text = (repo_copy / "cloudbuild.yaml").read_text(encoding="utf-8")
    old = '-backend-config="${_ENV}.gcs.tfbackend" \\\n'
    assert text.count(old) == 3
    (repo_copy / "cloudbuild.yaml").write_text(text.replace(old, "\\\n", 1), encoding="utf-8")
    assert any("tf-plan: terraform init" in v for v in check_cloudbuild(repo_copy))


def test_env_on_the_command_line_is_reported(repo_copy: Path) -> None:
    old = '-var "candidate_percent=100"'
    new = '-var "candidate_percent=100" -var "env=${_ENV}"'
    assert_detects(check_cloudbuild, repo_copy, "cloudbuild.yaml", old, new, "traffic: env is given")
