"""Policy tests on the real tree: terraform formatting, HCL policy against topology.json, build files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from charter_static_checks import (
    ENV_SPECIFIC_VARIABLES,
    ENVIRONMENTS,
    EXPECTED_PUBLISHES,
    MONITORING,
    RUN_SERVICES,
    SEED_ALERTS,
    TREE_CHECKS,
    blocks,
    check_terraform_fmt,
    effective_sizing,
    load_topology,
    module_locals,
    resolve_number,
    tfvars,
)

# What the three env roots had as defaults, now the values of their tfvars files.
CARRIED_OVER = {
    "dev": {
        "daily_llm_budget_usd": 10,
        "deletion_protection": False,
        "firestore_pitr": False,
        "service_sizing": {},
    },
    "stg": {
        "daily_llm_budget_usd": 20,
        "deletion_protection": True,
        "firestore_pitr": False,
        "service_sizing": {},
    },
    "prod": {
        "daily_llm_budget_usd": 33,
        "deletion_protection": True,
        "firestore_pitr": True,
        "service_sizing": {
            "ingress": {"min_instances": 1, "max_instances": 50},
            "brain": {"min_instances": 1, "max_instances": 30},
            "responder": {"min_instances": 1, "max_instances": 30},
        },
    },
}


def test_terraform_fmt_check_passes(repo_root: Path) -> None:
    # GIVEN the terraform tree WHEN `terraform fmt -check -recursive` runs THEN nothing needs formatting
    assert check_terraform_fmt(repo_root) == []


@pytest.mark.parametrize("check", TREE_CHECKS, ids=lambda check: check.__name__)
def test_tree_complies(check: Callable[[Path], list[str]], repo_root: Path) -> None:
    # GIVEN the repository WHEN a policy check reads it THEN it reports no violation
    assert check(repo_root) == []


def test_publisher_policy_covers_exactly_the_topology(repo_root: Path) -> None:
    # GIVEN topology.json and the per-target publisher map of modules/iam
    topology = load_topology(repo_root)
    publishes = module_locals(repo_root / "terraform" / "modules" / "iam")["publishes"]

    # THEN the map names every target, only topology topics, and matches the design
    assert set(publishes) == set(topology["targets"])
    assert {t for topics in publishes.values() for t in topics} <= set(topology["topics"])
    assert {target: set(topics) for target, topics in publishes.items()} == EXPECTED_PUBLISHES


def test_every_subscription_target_is_a_service(repo_root: Path) -> None:
    # GIVEN topology.json THEN each subscription pushes to a cloudevent target whose topic exists
    topology = load_topology(repo_root)
    for name, subscription in topology["subscriptions"].items():
        assert subscription["topic"] in topology["topics"], name
        assert topology["targets"][subscription["target"]]["kind"] == "cloudevent", name


@pytest.mark.parametrize("env", ENVIRONMENTS)
def test_each_environment_is_a_tfvars_file_with_its_own_values(repo_root: Path, env: str) -> None:
    # GIVEN the one root WHEN an environment's tfvars file is read
    values = tfvars(repo_root, env)

    # THEN it sets every environment-specific variable, with the defaults its old root had
    assert set(values) >= ENV_SPECIFIC_VARIABLES
    assert values["env"] == env
    assert {key: values[key] for key in CARRIED_OVER[env]} == CARRIED_OVER[env]
    assert (repo_root / "terraform" / "envs" / f"{env}.gcs.tfbackend").is_file()


def test_the_environments_differ_only_in_their_tfvars(repo_root: Path) -> None:
    # GIVEN the three tfvars files THEN no two of them are the same environment
    chosen = [tuple(sorted((k, repr(v)) for k, v in tfvars(repo_root, env).items())) for env in ENVIRONMENTS]
    assert len(set(chosen)) == len(ENVIRONMENTS)


@pytest.mark.parametrize("env", ENVIRONMENTS)
def test_threads_equals_concurrency_for_every_target(repo_root: Path, env: str) -> None:
    # GIVEN the effective sizing of an environment and run_services' per-target env
    sizing = effective_sizing(repo_root, env)
    found = module_locals(repo_root / RUN_SERVICES)

    # THEN every target runs as many gunicorn threads as Cloud Run sends it concurrent requests
    for target in load_topology(repo_root)["targets"]:
        threads = resolve_number(found["service_env"][target]["THREADS"], found, sizing)
        assert threads == sizing[target]["concurrency"], target


@pytest.mark.parametrize("env", ENVIRONMENTS)
def test_timeouts_nest_inside_the_ack_deadline(repo_root: Path, env: str) -> None:
    # GIVEN topology.json's ack deadline, the request timeouts and the LLM retry budget
    topology = load_topology(repo_root)
    ack = topology["retry"]["ack_deadline_seconds"]
    sizing = effective_sizing(repo_root, env)
    found = module_locals(repo_root / RUN_SERVICES)
    push = {s["target"] for s in topology["subscriptions"].values()}

    # THEN every push target answers before the ack deadline, and LLM retries end before the timeout
    assert push and {"ingress", "admin"}.isdisjoint(push)
    for target in push:
        assert sizing[target]["timeout_seconds"] < ack, target
    from shared_lib.settings.model import LLM_TARGETS

    # every service that calls the model (the settings' contract, the router's classifier in
    # context among them) has the key, and no other
    llm_targets = {t for t, s in found["service_secrets"].items() if "ANTHROPIC_API_KEY" in s}
    assert llm_targets == set(LLM_TARGETS) and "context" in llm_targets
    for target in llm_targets:
        budget = resolve_number(found["service_env"][target]["CHARTER_LLM_RETRY_BUDGET"], found, sizing)
        assert budget is not None and 0 < budget < sizing[target]["timeout_seconds"] < ack, target


def test_alert_policies_come_from_the_one_map(repo_root: Path) -> None:
    # GIVEN the monitoring module
    policies = blocks(repo_root, type_="google_monitoring_alert_policy")
    alerts = module_locals(repo_root / MONITORING)["alerts"]

    # THEN one resource makes every alert from local.alerts, whose thresholds are the seed's
    assert [p.body["for_each"] for p in policies] == ["${local.alerts}"]
    assert {name: spec["threshold"] for name, spec in alerts.items()} == SEED_ALERTS


def test_every_service_calling_vertex_ai_may(repo_root: Path) -> None:
    # GIVEN the settings: the services that call an LLM peer (Claude on Vertex AI among the
    # peers Terraform gives them) and those that embed (Vertex AI text embeddings in the cloud)
    from shared_lib.settings.memory import EMBED_TARGETS
    from shared_lib.settings.model import LLM_TARGETS

    granted = module_locals(repo_root / "terraform" / "modules" / "iam")["vertex_targets"]

    # THEN exactly those service accounts hold roles/aiplatform.user
    assert set(granted) == set(LLM_TARGETS) | set(EMBED_TARGETS)


def test_every_scheduled_memory_job_is_a_job_the_memory_target_runs(repo_root: Path) -> None:
    # GIVEN the scheduler's jobs of modules/scheduler and the memory target's jobs: its own and the rooms'
    from shared_lib.layers.memory import JOBS as OWN
    from shared_lib.wiring.features import memory_jobs

    JOBS = {**OWN, **memory_jobs()}

    jobs = module_locals(repo_root / "terraform" / "modules" / "scheduler")["jobs"]
    paths = [str(job["path"]) for job in jobs.values() if str(job["path"]).startswith("/tasks/memory/")]
    # THEN each POST /tasks/memory/<job> names a registered job (else the admin answers 404 nightly)
    assert paths and {p.rsplit("/", 1)[1] for p in paths} <= set(JOBS)
    assert {"compact", "daily_digest", "tagging"} <= {p.rsplit("/", 1)[1] for p in paths}


def test_the_jobs_watchdog_is_scheduled_every_minute_on_the_route_the_admin_serves(repo_root: Path) -> None:
    # GIVEN the scheduler's jobs and the admin app's routes
    # (the route is the jobs feature's, registered by the admin app from the jobs' manifest)
    admin = (repo_root / "shared_lib" / "features" / "jobs" / "admin.py").read_text(encoding="utf-8")
    manifest = (repo_root / "shared_lib" / "features" / "jobs" / "manifest.py").read_text(encoding="utf-8")
    jobs = module_locals(repo_root / "terraform" / "modules" / "scheduler")["jobs"]
    watchdog = [job for job in jobs.values() if str(job["path"]).startswith("/tasks/jobs/")]
    # THEN one job POSTs /tasks/jobs/watchdog every minute, and the admin serves that route
    assert [(j["path"], j["schedule"]) for j in watchdog] == [("/tasks/jobs/watchdog", "* * * * *")]
    assert '.post("/tasks/jobs/watchdog")' in admin
    assert 'admin="shared_lib.features.jobs.admin"' in manifest
