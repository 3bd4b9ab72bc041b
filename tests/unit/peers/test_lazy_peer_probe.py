"""A peer nobody has called yet is probed without building its adapter: the OpenAI-compatible
peer's health probe is the SDK's own minimal call sent over plain HTTP, so holding the peer (the
health board probes every peer it holds, at start and every interval) never imports ``openai``
(≈ 20 MiB and 540 modules in every LLM target). Once a turn has built the adapter, its own probe
is used, as before."""

from __future__ import annotations

import http.server
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from infra.fake_openai.server import FakeOpenAIServer
from shared_lib.peers.router import PeerRouter
from shared_lib.wiring.composition import build_runtime

REPO = Path(__file__).resolve().parents[3]


def _runtime(base_url: str):
    peers = {
        "peers": [
            {
                "name": "gpu-box",
                "kind": "openai_compatible",
                "local": True,
                "base_url": base_url,
                "models": {"claude-haiku-4-5": "qwen2.5:7b"},
            }
        ],
        "routing": {},
    }
    rt = build_runtime({"CHARTER_ENV": "test", "CHARTER_PEERS": json.dumps(peers)})
    assert isinstance(rt.llm, PeerRouter)
    (peer,) = rt.llm.peers()
    return rt.llm, peer


def test_a_peer_nobody_called_is_probed_as_the_sdk_would_without_building_its_adapter():
    with FakeOpenAIServer() as fake:
        router, peer = _runtime(f"{fake.url}/v1")
        # WHEN the health board probes the peer no turn was routed to
        health = router.board.probe("gpu-box")
        # THEN it is healthy, and its adapter (the SDK) was not built for it
        assert health.healthy and health.reason == "" and not peer.built
        (plain,) = fake.requests
        # WHEN a turn builds the adapter and the peer is probed again
        peer.adapter()
        again = router.board.probe("gpu-box")
        assert again.healthy
        sdk = fake.requests[-1]
    # THEN both probes were the same call: path, body (the model mapped), credentials
    assert plain["method"] == sdk["method"] == "POST"
    assert plain["path"] == sdk["path"] == "/v1/chat/completions"
    ping = {"model": "qwen2.5:7b", "max_tokens": 1, "messages": [{"role": "user", "content": "ping"}]}
    assert plain["body"] == sdk["body"] == ping
    assert plain["headers"]["authorization"] == sdk["headers"]["authorization"] == "Bearer local"


@pytest.fixture
def failing_server() -> Iterator[str]:
    class Down(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            body = b'{"error": {"message": "model is loading: please echo this prompt"}}'
            self.send_response(503)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Down)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_failing_or_unreachable_peer_is_unhealthy_with_a_reason_that_holds_no_content(failing_server):
    # GIVEN a server that answers 503 with a body, and a port nobody listens on
    router, peer = _runtime(failing_server)
    down = router.board.probe("gpu-box")
    router2, peer2 = _runtime(f"http://127.0.0.1:{_closed_port()}/v1")
    gone = router2.board.probe("gpu-box")
    # THEN both are unhealthy, said by status or error name only, and nothing was built
    assert (down.healthy, down.reason) == (False, "HTTPStatusError status=503")
    assert (gone.healthy, gone.reason) == (False, "ConnectError")
    assert not peer.built and not peer2.built
    # AND the board recorded them, for every instance to skip the peer
    assert router.board.records()["gpu-box"].healthy is False


PROBE_EVERY_PEER = """
import json, sys
from infra.fake_llm.server import FakeAnthropicServer
from infra.fake_openai.server import FakeOpenAIServer
from infra.local_stack import local_peers
from shared_lib.wiring.composition import build_runtime

with FakeAnthropicServer() as first, FakeAnthropicServer() as vertex, FakeOpenAIServer() as local:
    rt = build_runtime({
        "CHARTER_ENV": "test",
        "ANTHROPIC_BASE_URL": first.url,
        "ANTHROPIC_API_KEY": "k",
        "CHARTER_PEERS": local_peers(vertex.url, local.url),
    })
    health = {p.name: rt.llm.board.probe(p.name).healthy for p in rt.llm.peers()}
    print(json.dumps({"health": health, "openai": "openai" in sys.modules}))
"""


def test_a_process_holding_the_stack_s_three_peers_probes_them_all_without_importing_openai():
    # GIVEN a fresh process with the local stack's peers (Anthropic, Claude on Vertex AI, a local
    # OpenAI-compatible server), each a fake that answers
    done = subprocess.run(
        [sys.executable, "-c", PROBE_EVERY_PEER], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    # THEN every peer was probed healthy, and the openai SDK was never imported
    assert result == {"health": {"anthropic": True, "vertex": True, "local": True}, "openai": False}
