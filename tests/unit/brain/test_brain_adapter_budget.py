"""The Anthropic adapter under the turn's budget (``callctx.turn_budget``), against the fake
server (loopback only): a call and its retries never outlive what is left of the turn. Before,
``stop_after_delay`` was only checked between attempts and each attempt could run the whole
client timeout (4 attempts x 20 s on a phrasing call left a reply 80 s late)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from infra.fake_llm import FakeAnthropicServer, Scenario
from shared_lib.adapters.anthropic_llm import AnthropicLLM, RetryPolicy
from shared_lib.errors import LLMError
from shared_lib.ports import LLMRequest
from shared_lib.turn.callctx import remaining, turn_budget

NOW = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
REQUEST = LLMRequest(
    call_type="integration",
    model="claude-sonnet-4-6",
    max_tokens=200,
    messages=[{"role": "user", "content": "結果を伝えて"}],
)


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    fake = FakeAnthropicServer().start()
    yield fake
    fake.stop()


def adapter(server: FakeAnthropicServer, *, timeout: float) -> AnthropicLLM:
    policy = RetryPolicy(max_retries=3, initial_delay=0.01, max_delay=0.04)
    return AnthropicLLM(
        api_key="test", base_url=server.url, timeout=timeout, policy=policy, sleep=lambda s: None
    )


def test_given_a_spent_budget_when_calling_then_api_timeout_and_no_request(server):
    llm = adapter(server, timeout=5.0)
    with turn_budget(NOW - timedelta(seconds=1), NOW), pytest.raises(LLMError) as caught:
        llm.complete(REQUEST)
    assert caught.value.code == "api_timeout"
    assert server.requests == []


def test_given_stalled_answers_when_the_budget_is_shorter_than_the_timeout_then_one_attempt_is_cut_to_it(
    server,
):
    # GIVEN an LLM that stalls every answer longer than the client timeout, and 0.5 s of budget left
    server.set_scenario(Scenario.from_toml('[[rules]]\nfault = { kind = "delay", seconds = 3 }'))
    llm = adapter(server, timeout=2.0)
    # WHEN a call is made within the budget
    with turn_budget(NOW + timedelta(seconds=0.5), NOW), pytest.raises(LLMError) as caught:
        llm.complete(REQUEST)
    # THEN its one attempt was cut to the budget (not the 2 s timeout), and no retry started after it
    assert caught.value.code == "api_timeout"
    assert len(server.requests) == 1


def test_given_no_budget_then_the_retry_policy_alone_applies(server):
    # GIVEN one stalled answer, then a normal one, outside any turn (an operator command)
    server.set_scenario(Scenario.from_toml('[[rules]]\nfault = { kind = "delay", seconds = 2, times = 1 }'))
    llm = adapter(server, timeout=0.3)
    # WHEN calling THEN the timeout is retried as before
    assert remaining() is None
    response = llm.complete(REQUEST)
    assert response.attempts == 2 and response.text()
