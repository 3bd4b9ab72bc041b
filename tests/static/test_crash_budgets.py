"""The crash-safety numbers nest (``shared_lib/delivery/idempotency.py`` explains why), checked on the
settings' defaults, topology.json's retry policy and Terraform's push timeouts of every env:

heartbeat < lease < claim wait < turn budget < push timeout < ack deadline.

A delivery that waits for a dead holder's lease and then redoes the step (its LLM calls
bounded by the turn's budget) still answers before Pub/Sub's ack deadline, so it is never
delivered again while it works."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from charter_static_checks import ENVIRONMENTS, effective_sizing, load_topology

from shared_lib.delivery.idempotency import claim_wait
from shared_lib.settings import Settings


@pytest.mark.parametrize("env", ENVIRONMENTS)
def test_lease_wait_budget_timeout_and_ack_deadline_nest(repo_root: Path, env: str) -> None:
    # GIVEN the cloud's defaults, the retry policy and the push targets' request timeouts
    settings = Settings.from_env({"CHARTER_ENV": "test"})
    ack = load_topology(repo_root)["retry"]["ack_deadline_seconds"]
    sizing = effective_sizing(repo_root, env)
    push = {s["target"] for s in load_topology(repo_root)["subscriptions"].values()}
    lease = timedelta(seconds=settings.lease_seconds)
    # THEN they nest, for every pushed service
    assert lease / 3 < lease < claim_wait(lease) < timedelta(seconds=settings.turn_budget_seconds)
    for target in push:
        assert settings.turn_budget_seconds < sizing[target]["timeout_seconds"] < ack, target
