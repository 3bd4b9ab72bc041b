"""The peers Terraform gives the LLM services (``CHARTER_PEERS``) are a valid ``PeersConfig``:
the Anthropic API first, Claude on Vertex AI second in the project and the Vertex region, for
every purpose, on exactly the services that call the model.

The configuration is read from ``modules/run_services`` with the HCL parser (a heredoc with
``${var.…}`` interpolations), the variables filled in as Terraform would, and parsed by the
product's own loader, so a typo in Terraform fails here and not at a service's start.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from charter_static_checks import RUN_SERVICES, module_locals, parse_hcl

from shared_lib.delivery.topology import TOPOLOGY
from shared_lib.errors import ConfigError
from shared_lib.peers.config import PeersConfig
from shared_lib.ports import PURPOSES
from shared_lib.settings.model import LLM_TARGETS

_HEREDOC = re.compile(r"^<<-?(\w+)\n(.*)\n\s*\1\s*$", re.S)


def _variable_default(root: Path, name: str) -> str:
    for entry in parse_hcl(root / RUN_SERVICES / "variables.tf").get("variable", []):
        if name in entry:
            return str(entry[name]["default"])
    raise AssertionError(f"variable {name} is not declared")


def terraform_peers(root: Path, project: str = "charter-prod") -> str:
    """The ``CHARTER_PEERS`` text Terraform renders for ``project`` (the region: its default)."""
    raw = str(module_locals(root / RUN_SERVICES)["peers_json"])
    match = _HEREDOC.match(raw)
    assert match, f"peers_json is not a heredoc: {raw[:60]}"
    values = {"var.project_id": project, "var.vertex_region": _variable_default(root, "vertex_region")}
    text = re.sub(r"\$\{([^}]+)\}", lambda m: values[m.group(1).strip()], match.group(2))
    return text


def test_the_cloud_peers_are_anthropic_then_claude_on_vertex(repo_root: Path) -> None:
    # GIVEN the peers Terraform renders for a project
    config = PeersConfig.parse(terraform_peers(repo_root), "terraform peers_json")
    # THEN the Anthropic API comes first and Claude on Vertex second, both cloud peers
    assert [(p.name, p.kind, p.local) for p in config.peers] == [
        ("anthropic", "anthropic", False),
        ("vertex", "vertex", False),
    ]
    assert config.peers[0].api_key_setting == "anthropic_api_key"
    vertex = config.peers[1]
    assert (vertex.project, vertex.region) == ("charter-prod", "us-east5")
    # AND every purpose falls back from the first to the second
    assert all([p.name for p in config.route(purpose)] == ["anthropic", "vertex"] for purpose in PURPOSES)


def test_exactly_the_llm_services_get_the_peers(repo_root: Path) -> None:
    env = module_locals(repo_root / RUN_SERVICES)["service_env"]
    given = {t for t in TOPOLOGY.targets if "CHARTER_PEERS" in env.get(t, {})}
    # admin too: the heartbeat's peer health self-check names each peer (it reads their health
    # records and never calls one, so it has no probe interval of its own)
    assert given == {*LLM_TARGETS, "admin"}
    assert "CHARTER_PEER_HEALTH_SECONDS" not in env["admin"]
    assert all(env[t]["CHARTER_PEER_HEALTH_SECONDS"] == "30" for t in LLM_TARGETS)


def test_a_broken_peers_block_fails_here(repo_root: Path) -> None:
    # GIVEN the rendered text with the Vertex peer's region dropped
    text = terraform_peers(repo_root).replace('"region"', '"zone"')
    # THEN the product's loader refuses it, as a service would at start
    with pytest.raises(ConfigError, match="zone"):
        PeersConfig.parse(text, "terraform peers_json")
