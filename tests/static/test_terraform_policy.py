"""Policy tests on the real tree: terraform formatting, HCL policy against topology.json, build files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from charter_static_checks import (
    EXPECTED_PUBLISHES,
    MONITORING,
    SEED_ALERTS,
    TREE_CHECKS,
    blocks,
    check_terraform_fmt,
    load_topology,
    module_locals,
)


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


def test_alert_policies_come_from_the_one_map(repo_root: Path) -> None:
    # GIVEN the monitoring module
    policies = blocks(repo_root, type_="google_monitoring_alert_policy")
    alerts = module_locals(repo_root / MONITORING)["alerts"]

    # THEN one resource makes every alert from local.alerts, whose thresholds are the seed's
    assert [p.body["for_each"] for p in policies] == ["${local.alerts}"]
    assert {name: spec["threshold"] for name, spec in alerts.items()} == SEED_ALERTS
