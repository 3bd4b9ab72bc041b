"""The deploy contract: Terraform gives each Cloud Run service exactly what the settings model reads.

The expectation comes from ``shared_lib.settings`` (each field's targets and deploy metadata),
never from a list kept in the test; mutating Terraform (renaming, dropping or adding a variable,
or moving a secret to a plain value) must fail the check.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from charter_static_checks import check_deploy_contract, terraform_provides
from test_policy_mutations import mutate

from shared_lib.delivery.topology import TOPOLOGY
from shared_lib.errors import ConfigError
from shared_lib.settings import Settings, deploy_contract, required_names

RUN = "terraform/modules/run_services/main.tf"
# Required names the settings fill in a cloud environment when absent (Terraform still sets them):
# the adapters of every cloud service, structured logs, and the project from GOOGLE_CLOUD_PROJECT.
CLOUD_DEFAULTS = (
    "CHARTER_STORE",
    "CHARTER_BUS",
    "CHARTER_LOG_JSON",
    "CHARTER_TASK_BACKEND",
    "CHARTER_PROJECT",
)


def test_terraform_provides_every_service_exactly_its_settings(repo_root: Path) -> None:
    assert check_deploy_contract(repo_root) == []


def test_the_contract_is_derived_from_the_settings_model(repo_root: Path) -> None:
    # GIVEN the model: the scheduler's identity is the admin service's, the vault key the brain's;
    # no operator token at all (operators act by identity)
    assert deploy_contract("admin")["CHARTER_SCHEDULER_SA"] == "env"
    assert "CHARTER_ADMIN_TOKEN" not in deploy_contract("admin")
    assert deploy_contract("executor")["CHARTER_VAULT_KEY"] == "secret"
    assert deploy_contract("executor")["CHARTER_TASK_BACKEND"] == "env"
    assert "ANTHROPIC_API_KEY" not in deploy_contract("guardian")
    # THEN Terraform agrees for every target of the topology
    provided = terraform_provides(repo_root)
    assert set(provided) == set(TOPOLOGY.targets)
    assert {t: provided[t] for t in provided} == {t: dict(deploy_contract(t)) for t in provided}


def test_the_services_that_notify_get_the_alert_webhook_key_as_a_secret(repo_root: Path) -> None:
    # GIVEN the alert notifier signs its webhook with CHARTER_ALERT_WEBHOOK_SECRET
    # THEN observer and admin (who deliver alerts) mount it from Secret Manager, nobody else does
    provided = terraform_provides(repo_root)
    holders = {t for t, names in provided.items() if "CHARTER_ALERT_WEBHOOK_SECRET" in names}
    assert holders == {"observer", "admin"}
    assert {provided[t]["CHARTER_ALERT_WEBHOOK_SECRET"] for t in holders} == {"secret"}


@pytest.mark.parametrize("target", sorted(TOPOLOGY.targets))
def test_a_cloud_service_missing_a_required_value_refuses_to_start(target: str) -> None:
    environ = {name: "x" for name in deploy_contract(target)} | {
        "CHARTER_ENV": "prod",
        "FUNCTION_TARGET": target,
        "CHARTER_STORE": "firestore",
        "CHARTER_BUS": "pubsub",
        "CHARTER_LOG_JSON": "1",
        "THREADS": "8",
        "CHARTER_LLM_RETRY_BUDGET": "40",
        "CHARTER_PEER_HEALTH_SECONDS": "30",
        "CHARTER_TASK_BACKEND": "store",
        "CHARTER_TRACE_EXPORTER": "cloud_trace",
        "CHARTER_TRACE_SAMPLE_RATIO": "0.5",
        "CHARTER_EMBEDDER": "vertex",
    }
    Settings.from_env(environ)  # complete: starts
    for name in required_names(target):
        if name in ("CHARTER_ENV", "FUNCTION_TARGET") or name not in environ:
            continue
        broken = {k: v for k, v in environ.items() if k != name}
        if name in CLOUD_DEFAULTS:
            continue
        with pytest.raises(ConfigError, match=name):
            Settings.from_env(broken)


def test_renaming_the_scheduler_identity_in_terraform_is_reported(repo_copy: Path) -> None:
    assert check_deploy_contract(repo_copy) == []
    mutate(
        repo_copy,
        RUN,
        "CHARTER_SCHEDULER_SA = var.scheduler_email",
        "SCHEDULER_SA = var.scheduler_email",
    )
    violations = check_deploy_contract(repo_copy)
    assert any("admin: Terraform does not provide CHARTER_SCHEDULER_SA" in v for v in violations), violations
    assert any("SCHEDULER_SA, which its settings do not read" in v for v in violations), violations
    assert any("prod/admin: the service would not start" in v for v in violations), violations


def test_dropping_the_executors_vault_key_is_reported(repo_copy: Path) -> None:
    mutate(
        repo_copy,
        RUN,
        """      CHATWORK_API_TOKEN = "chatwork-api-token"
      CHARTER_VAULT_KEY  = "charter-vault-key"
""",
        """      CHATWORK_API_TOKEN = "chatwork-api-token"
""",
    )
    violations = check_deploy_contract(repo_copy)
    assert any("executor: Terraform does not provide CHARTER_VAULT_KEY" in v for v in violations), violations
    assert any("dev/executor: the service would not start" in v for v in violations), violations


def test_a_secret_given_as_a_plain_value_is_reported(repo_copy: Path) -> None:
    mutate(
        repo_copy,
        RUN,
        "      THREADS          = tostring(local.sizing.admin.concurrency)\n",
        '      THREADS          = tostring(local.sizing.admin.concurrency)\n      CHARTER_ALERT_ROOM = "chatwork:acme:1"\n',
    )
    violations = check_deploy_contract(repo_copy)
    assert any("admin: Terraform provides CHARTER_ALERT_ROOM" in v for v in violations), violations


def test_dropping_threads_from_a_service_is_reported(repo_copy: Path) -> None:
    mutate(repo_copy, RUN, "      THREADS = tostring(local.sizing.guardian.concurrency)\n", "")
    violations = check_deploy_contract(repo_copy)
    assert any("guardian: Terraform does not provide THREADS" in v for v in violations), violations
