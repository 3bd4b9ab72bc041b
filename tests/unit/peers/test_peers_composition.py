"""The composition root builds the runtime's LLM as a peer router, from the settings or from
``CHARTER_PEERS``; each peer behind its call log, each cloud peer behind the local-only guard."""

from __future__ import annotations

import json

import pytest
from peer_fakes import FakePeer, local_only_turn, request

from shared_lib.adapters.anthropic_llm import AnthropicLLM
from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.adapters.openai_llm import OpenAICompatibleLLM
from shared_lib.adapters.vertex_llm import VertexLLM
from shared_lib.errors import ConfigError
from shared_lib.peers.config import PeersConfig
from shared_lib.peers.router import PeerRouter
from shared_lib.prices import PriceTable
from shared_lib.routing.guard import LocalOnlyGuard
from shared_lib.settings import Settings
from shared_lib.wiring.composition import build_runtime, check_startup, peer_router

FAKE = "http://127.0.0.1:9"  # never called: the tests only build


def test_the_default_is_a_router_over_one_anthropic_peer_from_the_settings():
    rt = build_runtime(
        {"CHARTER_ENV": "test", "ANTHROPIC_BASE_URL": FAKE, "CHARTER_PEER_HEALTH_SECONDS": "7"}
    )
    assert isinstance(rt.llm, PeerRouter)  # not wrapped again: it guards its cloud peers itself
    (peer,) = rt.llm.peers()
    assert isinstance(peer, AnthropicLLM) and peer.name == "anthropic" and not peer.local
    assert str(peer.client.base_url).startswith(FAKE)
    assert rt.llm.board.interval == 7.0


def test_no_key_and_no_base_url_is_no_llm_as_before():
    assert build_runtime({"CHARTER_ENV": "test"}).llm is None
    assert (
        build_runtime({"CHARTER_ENV": "test", "ANTHROPIC_BASE_URL": FAKE, "CHARTER_LLM": "none"}).llm is None
    )


def test_charter_peers_names_the_peers_and_their_routing():
    peers = {
        "peers": [
            {
                "name": "primary",
                "kind": "anthropic",
                "base_url": "http://127.0.0.1:8",
                "api_key_setting": "anthropic_api_key",
            },
            {"name": "fallback", "kind": "anthropic", "base_url": "http://127.0.0.1:9", "concurrency": 2},
        ],
        "routing": {"classification": ["fallback"]},
    }
    rt = build_runtime({"CHARTER_ENV": "test", "ANTHROPIC_API_KEY": "k", "CHARTER_PEERS": json.dumps(peers)})
    assert isinstance(rt.llm, PeerRouter)
    assert [p.name for p in rt.llm.peers()] == ["primary", "fallback"]
    assert [p.name for p in rt.llm.config.route("classification")] == ["fallback"]


def test_every_kind_is_built_by_its_adapter_with_the_spec_s_name_limits_and_models():
    peers = {
        "peers": [
            {
                "name": "vertex",
                "kind": "vertex",
                "region": "us-east5",
                "project": "acme-ai",
                "base_url": "http://127.0.0.1:7/v1",
                "api_key_setting": "anthropic_api_key",
                "models": {"claude-sonnet-4-6": "claude-sonnet-4-6@20260101"},
            },
            {
                "name": "gpu-box",
                "kind": "openai_compatible",
                "local": True,
                "base_url": "http://127.0.0.1:8/v1",
                "max_context_tokens": 32768,
                "supports_parallel": False,
            },
        ]
    }
    rt = build_runtime(
        {"CHARTER_ENV": "test", "ANTHROPIC_API_KEY": "tok", "CHARTER_PEERS": json.dumps(peers)}
    )
    assert isinstance(rt.llm, PeerRouter)
    vertex, local = rt.llm.peers()
    assert isinstance(vertex, VertexLLM) and vertex.kind == "vertex" and not vertex.local
    assert vertex.client.project_id == "acme-ai" and vertex.client.region == "us-east5"
    assert vertex.models == {"claude-sonnet-4-6": "claude-sonnet-4-6@20260101"}
    assert local.kind == "openai_compatible" and local.local
    assert (local.name, local.max_context_tokens, local.supports_parallel) == ("gpu-box", 32768, False)
    assert isinstance(local.adapter(), OpenAICompatibleLLM)
    assert str(local.client.base_url).startswith("http://127.0.0.1:8/v1")


def test_a_bad_peers_setting_fails_the_startup_check():
    with pytest.raises(ConfigError, match="CHARTER_PEERS"):
        check_startup({"CHARTER_ENV": "test", "CHARTER_PEERS": '{"peers": [], "routing": {}}'})


def test_each_call_is_logged_under_its_peer_and_the_answer_entry_carries_the_fallbacks():
    store = MemoryStore()
    config = PeersConfig.model_validate(
        {"peers": [{"name": "a", "kind": "anthropic"}, {"name": "b", "kind": "anthropic"}]}
    )
    a, b = FakePeer("a"), FakePeer("b")
    a.failure = "llm_unavailable"
    settings = Settings.from_env({"CHARTER_ENV": "test"})
    router = peer_router(config, {"a": a, "b": b}, settings, store, PriceTable.load())
    answer = router.complete(request())
    entries = {doc["peer"]: doc for _, doc in store.query("orgs/default/llm_calls")}
    assert entries["a"]["status"] == "error" and entries["b"]["status"] == "success"
    assert (
        entries["b"]["fallbacks"]
        == answer.fallbacks
        == [{"peer": "a", "reason": "llm_unavailable: APIStatusError status=529 overloaded_error"}]
    )


def test_a_cloud_peer_is_guarded_and_a_local_one_is_not():
    config = PeersConfig.model_validate(
        {
            "peers": [
                {"name": "cloud", "kind": "anthropic"},
                {
                    "name": "local",
                    "kind": "openai_compatible",
                    "local": True,
                    "base_url": "http://127.0.0.1:1/v1",
                },
            ]
        }
    )
    cloud, local = FakePeer("cloud"), FakePeer("local", local=True)
    settings = Settings.from_env({"CHARTER_ENV": "test", "CHARTER_LLM_CALL_LOG": "0"})
    router = peer_router(config, {"cloud": cloud, "local": local}, settings, MemoryStore(), PriceTable.load())
    assert isinstance(router._callers["cloud"], LocalOnlyGuard) and router._callers["local"] is local
    with local_only_turn():
        assert router.complete(request()).peer == "local"
    assert cloud.calls == 0


def test_the_openai_compatible_peer_is_built_on_its_first_call_and_answers_through_the_router():
    from infra.fake_openai.server import FakeOpenAIServer

    # GIVEN a deployment whose only peer is an OpenAI-compatible server (the fake)
    with FakeOpenAIServer() as fake:
        peers = {
            "peers": [
                {"name": "gpu-box", "kind": "openai_compatible", "local": True, "base_url": f"{fake.url}/v1"}
            ],
            "routing": {},
        }
        rt = build_runtime({"CHARTER_ENV": "test", "CHARTER_PEERS": json.dumps(peers)})
        assert isinstance(rt.llm, PeerRouter)
        (peer,) = rt.llm.peers()
        # WHEN the runtime is built, THEN the peer routes by its spec without an adapter yet
        assert (peer.name, peer.kind, peer.local) == ("gpu-box", "openai_compatible", True)
        assert not peer.built and fake.requests == []
        # WHEN a call is routed to it, THEN the adapter is built once and the server answers
        first = rt.llm.complete(request())
        second = rt.llm.complete(request())
    assert isinstance(peer.adapter(), OpenAICompatibleLLM)
    assert first.peer == second.peer == "gpu-box" and first.content
    assert len(fake.requests) == 2
