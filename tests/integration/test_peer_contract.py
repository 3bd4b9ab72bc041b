"""One contract for every LLM peer adapter, over real HTTP against its fake (127.0.0.1 only):

* ``anthropic`` — ``AnthropicLLM`` → ``infra.fake_llm`` (``/v1/messages``);
* ``vertex`` — ``VertexLLM`` (``anthropic.AnthropicVertex``) → the same fake's Vertex routes;
* ``openai_compatible`` — ``OpenAICompatibleLLM`` (``openai`` SDK) → ``infra.fake_openai``.

Each keeps the product's contract whatever the wire: a proposal is a ``submit_proposal``
``tool_use`` block that validates as a ``Proposal``; faults end in the same ``LLMError`` codes
under the one retry policy; ``health()`` is one call, never raises. Waits are recorded, never
slept (only the ``delay`` fault takes wall time, under a second). No emulator is needed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from infra.fake_llm import FakeAnthropicServer, Scenario
from infra.fake_openai import FakeOpenAIServer
from shared_lib.adapters.anthropic_llm import AnthropicLLM
from shared_lib.adapters.llm_retry import RetryPolicy
from shared_lib.adapters.openai_llm import OpenAICompatibleLLM
from shared_lib.adapters.vertex_llm import VertexLLM
from shared_lib.errors import LLMError
from shared_lib.ports import LLMPeer, LLMRequest
from shared_lib.turn.proposal import Proposal

MODEL = "claude-sonnet-4-6"
SERVED = {"anthropic": MODEL, "vertex": "claude-sonnet-4-6@20261001", "openai_compatible": "qwen2.5:32b"}
TASK = "田中さんに見積書を作成するタスクを明日までにお願い"
PROPOSAL_TOOLS: list[dict[str, Any]] = [
    {"name": "submit_proposal", "description": "Submit the decision.", "input_schema": {"type": "object"}}
]


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@dataclass
class Peer:
    kind: str
    server: FakeAnthropicServer
    build: Callable[..., LLMPeer]
    sleeps: Sleeps

    def adapter(self, *, timeout: float = 5.0, retries: int = 3) -> LLMPeer:
        policy = RetryPolicy(max_retries=retries, initial_delay=0.01, max_delay=0.04, max_retry_after=30.0)
        return self.build(timeout=timeout, policy=policy, sleep=self.sleeps)

    def scenario(self, toml: str) -> None:
        self.server.set_scenario(Scenario.from_toml(toml))

    def served_models(self) -> list[str]:
        """The model each recorded request asked for, as this wire carries it."""
        if self.kind == "vertex":
            return [r["path"].rsplit("/", 1)[1].split(":")[0] for r in self.server.requests]
        return [r["body"]["model"] for r in self.server.requests]


def _builder(kind: str, url: str) -> Callable[..., LLMPeer]:
    models = {MODEL: SERVED[kind], "claude-haiku-4-5": SERVED[kind]}
    if kind == "anthropic":
        return lambda **kw: AnthropicLLM(api_key="test", base_url=url, models=models, **kw)
    if kind == "vertex":
        return lambda **kw: VertexLLM(
            region="us-east5",
            project_id="charter-test",
            access_token="t",
            base_url=url + "/v1",
            models=models,
            **kw,
        )
    return lambda **kw: OpenAICompatibleLLM(local=True, base_url=url + "/v1", models=models, **kw)


@pytest.fixture(params=["anthropic", "vertex", "openai_compatible"])
def peer(request: pytest.FixtureRequest) -> Iterator[Peer]:
    server = (FakeOpenAIServer() if request.param == "openai_compatible" else FakeAnthropicServer()).start()
    yield Peer(request.param, server, _builder(request.param, server.url), Sleeps())
    server.stop()


def proposal_request(*, stream: bool = False) -> LLMRequest:
    return LLMRequest(
        call_type="proposal",
        model=MODEL,
        max_tokens=1024,
        system=[{"type": "text", "text": "あなたはソウルくん。", "cache_control": {"type": "ephemeral"}}],
        tools=PROPOSAL_TOOLS,
        tool_choice={"type": "tool", "name": "submit_proposal"},
        messages=[{"role": "user", "content": TASK}],
        stream=stream,
    )


def text_request(text: str = "結果を伝えて", *, stream: bool = False) -> LLMRequest:
    return LLMRequest(
        call_type="integration",
        model=MODEL,
        max_tokens=300,
        stream=stream,
        messages=[{"role": "user", "content": text}],
    )


# --------------------------------------------------------------------------- answers


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_given_a_forced_proposal_tool_then_the_answer_is_one_submit_proposal_tool_use(
    peer: Peer, stream: bool
):
    response = peer.adapter().complete(proposal_request(stream=stream))
    (call,) = response.tool_uses("submit_proposal")
    proposal = Proposal.model_validate(call["input"])
    assert call["id"] and response.stop_reason == "tool_use"
    assert proposal.tool_calls and proposal.tool_calls[0].tool_name == "chatwork_task_create"
    assert response.usage.input_tokens > 0 and response.usage.output_tokens > 0
    assert response.attempts == 1 and response.interruptions == 0
    assert peer.served_models() == [SERVED[peer.kind]]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_given_no_tools_then_the_answer_is_text_in_the_persona(peer: Peer, stream: bool):
    response = peer.adapter().complete(text_request("おはよう", stream=stream))
    assert response.stop_reason == "end_turn" and response.tool_uses() == []
    assert "ウル" in response.text()
    assert response.model == SERVED[peer.kind]


def test_given_the_peer_attributes_then_they_are_the_ports(peer: Peer):
    adapter = peer.adapter()
    assert adapter.kind == peer.kind and adapter.name == peer.kind
    assert adapter.local is (peer.kind == "openai_compatible")
    assert adapter.max_context_tokens > 0 and adapter.supports_parallel is True


# --------------------------------------------------------------------------- faults


def test_given_529_once_then_it_is_retried_and_the_second_attempt_answers(peer: Peer):
    peer.scenario('[[rules]]\nfault = { kind = "status", status = 529, times = 1 }')
    response = peer.adapter().complete(proposal_request())
    assert response.attempts == 2 and len(peer.server.requests) == 2
    assert response.tool_uses("submit_proposal")
    assert len(peer.sleeps) == 1


def test_given_529_always_then_llm_unavailable_after_the_policy_gives_up(peer: Peer):
    peer.scenario('[[rules]]\nfault = { kind = "status", status = 529 }')
    with pytest.raises(LLMError) as caught:
        peer.adapter(retries=2).complete(proposal_request())
    assert caught.value.code == "llm_unavailable"
    assert len(peer.server.requests) == 3


def test_given_429_with_retry_after_then_the_wait_is_honoured_and_rate_limit_when_it_persists(peer: Peer):
    peer.scenario('[[rules]]\nfault = { kind = "status", status = 429, retry_after = 0.25 }')
    with pytest.raises(LLMError) as caught:
        peer.adapter(retries=2).complete(text_request())
    assert caught.value.code == "rate_limit"
    assert peer.sleeps == [0.25, 0.25]


def test_given_an_answer_slower_than_the_timeout_then_api_timeout(peer: Peer):
    peer.scenario('[[rules]]\nfault = { kind = "delay", seconds = 1.5 }')
    with pytest.raises(LLMError) as caught:
        peer.adapter(timeout=0.3, retries=1).complete(text_request())
    assert caught.value.code == "api_timeout"
    assert len(peer.server.requests) == 2


def test_given_a_stream_cut_once_then_it_is_retried_and_the_whole_answer_used(peer: Peer):
    # the cut is inside the first block (no block complete): nothing to salvage, on any wire
    peer.scenario('[[rules]]\nfault = { kind = "cut_stream", after_blocks = 0, times = 1 }')
    response = peer.adapter().complete(text_request(stream=True))
    assert response.attempts == 2 and response.interruptions == 1
    assert response.salvaged is False and response.stop_reason == "end_turn"
    assert response.text().endswith(("ウル。", "ウル！", "ウル🐺"))


def test_given_a_tool_call_cut_in_every_stream_then_llm_unavailable_never_a_half_tool_call(peer: Peer):
    peer.scenario('[[rules]]\nfault = { kind = "cut_stream", after_blocks = 0 }')
    with pytest.raises(LLMError) as caught:
        peer.adapter(retries=1).complete(proposal_request(stream=True))
    assert caught.value.code == "llm_unavailable"
    assert len(peer.server.requests) == 2


# --------------------------------------------------------------------------- health


def test_given_a_working_peer_then_health_is_healthy_after_one_minimal_call(peer: Peer):
    health = peer.adapter().health()
    assert health.healthy is True and health.reason == "" and health.latency_ms > 0
    (probe,) = peer.server.requests
    assert probe["body"]["max_tokens"] == 1
    assert peer.served_models() == [SERVED[peer.kind]]


def test_given_an_overloaded_peer_then_health_is_unhealthy_without_retries_or_raising(peer: Peer):
    peer.scenario('[[rules]]\nfault = { kind = "status", status = 529 }')
    health = peer.adapter(retries=3).health()
    assert health.healthy is False and "status=529" in health.reason
    assert len(peer.server.requests) == 1 and peer.sleeps == []


def test_given_a_peer_that_does_not_answer_then_health_is_unhealthy(peer: Peer):
    peer.server.stop()
    health = peer.adapter().health()
    assert health.healthy is False and health.reason
