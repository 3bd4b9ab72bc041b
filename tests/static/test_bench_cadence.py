"""The burst measures the product at the cache periods it is deployed with (issue 39).

The local stack shortens the flags' lifetime and the LLM peers' health interval to 2 s for its
end-to-end tests (a flag flip or a peer's recovery seen within seconds). The burst starts its
stack with the deployed values instead (``infra.bench.burst.deployed_cadence``): the settings'
defaults, which Terraform keeps (the health interval it sets) or leaves alone (the flags'
lifetime), so a turn is not charged for a background load no deployed instance carries.
"""

from __future__ import annotations

from pathlib import Path

from charter_static_checks import RUN_SERVICES, module_locals

from infra import local_stack
from infra.bench.burst import deployed_cadence
from shared_lib.settings import Settings
from shared_lib.settings.model import LLM_TARGETS


def _stack_state(**up: object) -> dict[str, object]:
    """What ``local_stack.up`` records of its arguments, with the components' addresses."""
    url = {"url": "http://127.0.0.1:1", "port": 1}
    components = {
        n: url
        for n in ("fake_channels", "pubsub", "firestore", "fake_llm", "fake_llm_fallback", "fake_openai")
    }
    return {
        "components": components,
        "project": "p",
        "flags_ttl": up.get("flags_ttl", 2.0),
        "extra_env": up.get("extra_env") or {},
    }


def test_the_burst_runs_the_stack_at_the_deployed_cadence(repo_root: Path) -> None:
    # GIVEN what Terraform gives the services and what a served function reads without it
    env = module_locals(repo_root / RUN_SERVICES)["service_env"]
    served = Settings.from_env({})
    cadence = deployed_cadence()
    # THEN the burst's functions read the flags as long as a deployed function keeps them
    assert not any("CHARTER_FLAGS_TTL" in env.get(t, {}) for t in env)
    assert cadence["flags_ttl"] == served.flags_ttl_seconds == 10.0
    # AND probe the peers at Terraform's interval
    assert {env[t]["CHARTER_PEER_HEALTH_SECONDS"] for t in LLM_TARGETS} == {
        cadence["extra_env"]["CHARTER_PEER_HEALTH_SECONDS"]
    }
    # AND the stack's functions get those values, where its own default is the e2e's 2 s
    burst = local_stack.function_env(_stack_state(**cadence))
    assert (burst["CHARTER_FLAGS_TTL"], burst["CHARTER_PEER_HEALTH_SECONDS"]) == ("10.0", "30")
    e2e = local_stack.function_env(_stack_state())
    assert (e2e["CHARTER_FLAGS_TTL"], e2e["CHARTER_PEER_HEALTH_SECONDS"]) == ("2.0", "2")
