"""The peer router: routing by purpose, fallback in order with reasons, the unhealthy skipped
until they recover, local-only turns on local peers only, per-peer concurrency."""

from __future__ import annotations

import logging
import threading

import pytest
from peer_fakes import Clock, FakePeer, local_only_turn, request

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.errors import LLMError
from shared_lib.peers.config import PeersConfig
from shared_lib.peers.health import HealthBoard
from shared_lib.peers.router import LocalOnlyViolation, PeerRouter
from shared_lib.ports import LLMResponse
from shared_lib.routing import guard


def no_probe(work):  # the board's background probes are the health tests' business
    return threading.Thread(target=lambda: None)


def router(specs: list[dict], routing: dict | None = None, **kw) -> tuple[PeerRouter, dict[str, FakePeer]]:
    config = PeersConfig.model_validate({"peers": specs, "routing": routing or {}})
    peers = {s["name"]: FakePeer(s["name"], local=s.get("local", False)) for s in specs}
    board = HealthBoard(MemoryStore(), peers, interval=30, clock=kw.pop("clock", Clock()), spawn=no_probe)
    return PeerRouter(config, peers, board, **kw), peers


A = {"name": "a", "kind": "anthropic"}
V = {"name": "v", "kind": "vertex", "region": "us-east5"}
L = {"name": "l", "kind": "openai_compatible", "local": True, "base_url": "http://127.0.0.1:1/v1"}


def test_the_first_routed_peer_answers_and_says_so():
    r, peers = router([A, V])
    answer = r.complete(request())
    assert (answer.peer, answer.fallbacks, answer.text()) == ("a", [], "from a")
    assert peers["v"].calls == 0


def test_each_purpose_goes_to_its_own_peers():
    r, _ = router([A, V, L], routing={"classification": ["l"], "summary": ["v", "a"]})
    assert r.complete(request("routing")).peer == "l"  # routing → classification
    assert r.complete(request("summary")).peer == "v"
    assert r.complete(request("integration")).peer == "a"  # phrasing: not listed → every peer in order


def test_a_failing_peer_falls_back_to_the_next_with_the_reason_logged_and_annotated(caplog):
    annotated: list[LLMResponse] = []
    r, peers = router([A, V, L], annotate=annotated.append)
    peers["a"].failure = "llm_unavailable"
    peers["v"].failure = "api_timeout"
    with caplog.at_level(logging.INFO):
        answer = r.complete(request())
    assert answer.peer == "l"
    assert [f["peer"] for f in answer.fallbacks] == ["a", "v"]
    assert answer.fallbacks[0]["reason"].startswith("llm_unavailable: APIStatusError status=529")
    assert answer.fallbacks[1]["reason"].startswith("api_timeout")
    assert annotated == [answer]
    events = [r.getMessage() for r in caplog.records if "llm_peer_fallback" in r.getMessage()]
    assert len(events) == 2


def test_every_peer_failing_raises_the_last_error():
    r, peers = router([A, V])
    peers["a"].failure = "rate_limit"
    peers["v"].failure = "llm_unavailable"
    with pytest.raises(LLMError) as caught:
        r.complete(request())
    assert caught.value.code == "llm_unavailable" and peers["a"].calls == peers["v"].calls == 1


def test_a_peer_that_failed_unavailable_is_skipped_until_a_probe_says_it_recovered():
    clock = Clock()
    r, peers = router([A, V], clock=clock)
    peers["a"].failure = "llm_unavailable"
    assert r.complete(request()).peer == "v"
    # WHEN the next call comes (the failure marked "a" unhealthy for every instance)
    peers["a"].failure = None
    answer = r.complete(request())
    # THEN "a" is skipped without a call, with the reason
    assert answer.peer == "v" and peers["a"].calls == 1
    assert answer.fallbacks == [
        {"peer": "a", "reason": "unhealthy: llm_unavailable: APIStatusError status=529 overloaded_error"}
    ]
    # WHEN a probe finds it healthy again
    r.board.probe("a")
    # THEN traffic returns to it
    assert r.complete(request()).peer == "a" and peers["a"].calls == 2


def test_a_timeout_does_not_mark_the_peer_unhealthy():
    r, peers = router([A, V])
    peers["a"].failure = "api_timeout"
    assert r.complete(request()).peer == "v"
    peers["a"].failure = None
    assert r.complete(request()).peer == "a"


def test_when_every_routed_peer_is_unhealthy_they_are_all_tried_anyway():
    r, _ = router([A, V])
    r.board.mark_unhealthy("a", "stale")
    r.board.mark_unhealthy("v", "stale")
    answer = r.complete(request())
    assert answer.peer == "a" and answer.fallbacks == []


def test_a_local_only_turn_uses_only_local_peers_and_never_calls_a_cloud_one():
    r, peers = router([A, L])
    with local_only_turn():
        answer = r.complete(request())
    assert answer.peer == "l" and peers["a"].calls == 0


def test_a_local_only_turn_without_a_local_peer_is_refused_before_any_call():
    r, peers = router([A, V, L], routing={"proposal": ["a", "v"]})
    with (
        local_only_turn(),
        pytest.raises(LocalOnlyViolation, match="local_only: no local peer serves proposal"),
    ):
        r.complete(request())
    assert peers["a"].calls == peers["v"].calls == peers["l"].calls == 0


def test_the_routing_guard_refuses_with_the_same_class():
    assert guard.LocalOnlyViolation is LocalOnlyViolation
    error = LocalOnlyViolation("llm_unavailable", "local_only: x")
    assert isinstance(error, LLMError) and error.code == "llm_unavailable"


def test_a_peer_at_its_concurrency_limit_is_skipped_as_busy():
    r, peers = router([{**A, "concurrency": 1, "queue_timeout": 0.05}, V])
    hold = peers["a"].hold = threading.Event()
    first: list[LLMResponse] = []
    worker = threading.Thread(target=lambda: first.append(r.complete(request())))
    worker.start()
    try:
        assert peers["a"].entered.wait(2)
        # WHEN a second call comes while the one slot is taken
        answer = r.complete(request())
        # THEN it goes to the next peer, "a" skipped as busy
        assert answer.peer == "v" and answer.fallbacks == [{"peer": "a", "reason": "busy"}]
    finally:
        hold.set()
        worker.join(5)
    assert first[0].peer == "a"
    # AND the slot is free again once the first call ended
    peers["a"].hold = None
    assert r.complete(request()).peer == "a"


def test_every_peer_busy_is_llm_unavailable_naming_them():
    r, peers = router([{**A, "concurrency": 1, "queue_timeout": 0.05}])
    hold = peers["a"].hold = threading.Event()
    worker = threading.Thread(target=lambda: r.complete(request()))
    worker.start()
    try:
        assert peers["a"].entered.wait(2)
        with pytest.raises(LLMError, match="a: busy") as caught:
            r.complete(request())
        assert caught.value.code == "llm_unavailable"
    finally:
        hold.set()
        worker.join(5)


def test_describe_lists_every_peer_with_purposes_and_last_health():
    r, _ = router([A, L], routing={"classification": ["l"]})
    r.board.mark_unhealthy("a", "llm_unavailable: 529")
    rows = r.describe()
    assert [(row["name"], row["kind"], row["local"]) for row in rows] == [
        ("a", "anthropic", False),
        ("l", "openai_compatible", True),
    ]
    assert rows[1]["purposes"] == [
        "proposal",
        "phrasing",
        "critique",
        "evaluation",
        "classification",
        "summary",
    ]
    assert "classification" not in rows[0]["purposes"]
    assert rows[0]["health"]["healthy"] is False and rows[0]["health"]["reason"] == "llm_unavailable: 529"
    assert rows[1]["health"] is None
    assert [p.name for p in r.peers()] == ["a", "l"]


def test_a_lone_peer_is_never_probed_or_marked_there_is_nothing_to_choose_between():
    spawned: list[object] = []
    config = PeersConfig.model_validate({"peers": [A, V], "routing": {"summary": ["v"]}})
    peers = {"a": FakePeer("a"), "v": FakePeer("v")}
    store = MemoryStore()
    board = HealthBoard(
        store, peers, interval=30, clock=Clock(), spawn=lambda w: spawned.append(w) or no_probe(w)
    )
    r = PeerRouter(config, peers, board)
    peers["v"].failure = "llm_unavailable"
    with pytest.raises(LLMError):
        r.complete(request("summary"))  # only v serves summaries: it fails, and stays presumed healthy
    assert spawned == [] and store.get("peer_health/v") is None
    r.complete(request())  # a choice: the board is read, and probes its peers
    assert spawned
