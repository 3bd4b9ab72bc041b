"""A served target's runtime holds the model and the embedder only where its stages use them
(issue 39): the guardian gets neither, the brain a model, the executor an embedder; a process of
every stage (no target: the CLI, the demo, tests) gets both, as before."""

from __future__ import annotations

import pytest

from shared_lib.errors import ConfigError
from shared_lib.wiring.composition import build_runtime, check_startup

# the local stack's way to reach a model: a base URL and a key, nothing contacted while building
WITH_A_MODEL = {
    "CHARTER_ENV": "test",
    "ANTHROPIC_API_KEY": "sk-ant-test-鍵",
    "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
}


@pytest.mark.parametrize("target", ["guardian", "authorizer", "observer", "ingress"])
def test_a_stage_that_neither_calls_a_model_nor_embeds_gets_neither(target: str) -> None:
    # GIVEN a key and the local embedder configured WHEN the target's runtime is built
    rt = build_runtime(WITH_A_MODEL | {"FUNCTION_TARGET": target})
    # THEN it holds no model and no embedder
    assert (rt.llm, rt.embedder) == (None, None)


@pytest.mark.parametrize("target", ["executor", "admin"])
def test_a_stage_that_embeds_but_calls_no_model_gets_the_embedder_only(target: str) -> None:
    rt = build_runtime(WITH_A_MODEL | {"FUNCTION_TARGET": target})
    assert rt.llm is None
    assert rt.embedder is not None


@pytest.mark.parametrize("target", ["brain", "brain_shadow", "responder"])
def test_a_stage_that_calls_a_model_but_does_not_embed_gets_the_model_only(target: str) -> None:
    rt = build_runtime(WITH_A_MODEL | {"FUNCTION_TARGET": target})
    assert rt.llm is not None
    assert rt.embedder is None


@pytest.mark.parametrize("target", ["context", "memory", None])
def test_the_context_the_memory_target_and_a_process_of_every_stage_get_both(target: str | None) -> None:
    rt = build_runtime(WITH_A_MODEL | ({"FUNCTION_TARGET": target} if target else {}))
    assert rt.llm is not None
    assert rt.embedder is not None


def test_the_startup_check_asks_an_embedder_of_the_targets_that_embed_only() -> None:
    # GIVEN Vertex embeddings without the project they need
    vertex = {"CHARTER_ENV": "test", "CHARTER_EMBEDDER": "vertex"}
    # THEN a target that embeds refuses to start, and the guardian, which never embeds, starts
    with pytest.raises(ConfigError, match="CHARTER_PROJECT"):
        check_startup(vertex | {"FUNCTION_TARGET": "executor"})
    assert check_startup(vertex | {"FUNCTION_TARGET": "guardian"}).target == "guardian"
