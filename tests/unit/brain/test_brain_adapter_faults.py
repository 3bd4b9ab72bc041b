"""The Anthropic adapter against the fake server's injectable faults (loopback only).

One retry policy (the adapter's; the SDK's own retries are off); ``retry-after`` honoured
exactly; stream interruptions retried or salvaged (seed 000 §6.7.6). Sleeps are recorded,
never waited, so nothing here depends on timing.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from brain_fakes import FakeLLM, text_answer

from infra.fake_llm import FakeAnthropicServer, Scenario
from shared_lib.adapters.anthropic_llm import AnthropicLLM, RetryPolicy
from shared_lib.brain.continuation import complete
from shared_lib.errors import LLMError
from shared_lib.ports import LLMRequest

MODEL = "claude-sonnet-4-6"


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    fake = FakeAnthropicServer().start()
    yield fake
    fake.stop()


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def adapter(
    server: FakeAnthropicServer, *, timeout: float = 5.0, retries: int = 3, max_retry_after: float = 30.0
) -> tuple[AnthropicLLM, Sleeps]:
    sleeps = Sleeps()
    policy = RetryPolicy(
        max_retries=retries, initial_delay=0.01, max_delay=0.04, max_retry_after=max_retry_after
    )
    return AnthropicLLM(
        api_key="test", base_url=server.url, timeout=timeout, policy=policy, sleep=sleeps
    ), sleeps


def request(text: str = "結果を伝えて", *, stream: bool = True, max_tokens: int = 300) -> LLMRequest:
    return LLMRequest(
        call_type="integration",
        model=MODEL,
        max_tokens=max_tokens,
        stream=stream,
        messages=[{"role": "user", "content": text}],
    )


def scenario(server: FakeAnthropicServer, toml: str) -> None:
    server.set_scenario(Scenario.from_toml(toml))


def test_given_the_adapter_then_the_sdks_own_retries_are_off(server):
    llm, _ = adapter(server)
    assert llm.client.max_retries == 0


# -- 429 -------------------------------------------------------------------------------------------
def test_given_a_429_with_retry_after_when_calling_then_the_wait_is_exactly_the_servers(server):
    # GIVEN one 429 asking for 0.25 s
    scenario(server, '[[rules]]\nfault = { kind = "status", status = 429, retry_after = 0.25, times = 1 }')
    llm, sleeps = adapter(server)
    # WHEN
    response = llm.complete(request())
    # THEN the adapter waited what the server asked, then succeeded
    assert sleeps == [0.25] and response.attempts == 2 and response.text()
    assert len(server.requests) == 2


def test_given_a_retry_after_longer_than_allowed_when_calling_then_it_gives_up_at_once_with_rate_limit(
    server,
):
    scenario(server, '[[rules]]\nfault = { kind = "status", status = 429, retry_after = 120 }')
    llm, sleeps = adapter(server, max_retry_after=30)
    with pytest.raises(LLMError) as caught:
        llm.complete(request())
    assert caught.value.code == "rate_limit" and caught.value.retry_after == 120
    assert sleeps == [] and len(server.requests) == 1


def test_given_429_on_every_attempt_when_calling_then_rate_limit_after_the_retry_budget(server):
    scenario(server, '[[rules]]\nfault = { kind = "status", status = 429, retry_after = 0.01 }')
    llm, sleeps = adapter(server, retries=2)
    with pytest.raises(LLMError) as caught:
        llm.complete(request())
    assert caught.value.code == "rate_limit" and len(server.requests) == 3 and sleeps == [0.01, 0.01]


# -- 5xx / 529 --------------------------------------------------------------------------------------
@pytest.mark.parametrize("status", [500, 529])
def test_given_transient_server_errors_when_calling_then_backoff_with_jitter_then_success(server, status):
    scenario(server, f'[[rules]]\nfault = {{ kind = "status", status = {status}, times = 2 }}')
    llm, sleeps = adapter(server)
    response = llm.complete(request())
    assert response.attempts == 3 and len(server.requests) == 3
    # exponential ceilings 0.01, 0.02 with "equal jitter": each wait in [ceiling / 2, ceiling]
    assert 0.005 <= sleeps[0] <= 0.01 and 0.01 <= sleeps[1] <= 0.02


@pytest.mark.parametrize("status", [500, 529])
def test_given_persistent_server_errors_when_calling_then_llm_unavailable(server, status):
    scenario(server, f'[[rules]]\nfault = {{ kind = "status", status = {status} }}')
    llm, sleeps = adapter(server, retries=3)
    with pytest.raises(LLMError) as caught:
        llm.complete(request())
    assert caught.value.code == "llm_unavailable" and f"status={status}" in caught.value.detail
    assert len(server.requests) == 4 and len(sleeps) == 3 and all(s <= 0.04 for s in sleeps)


def test_given_a_400_when_calling_then_it_is_not_retried(server):
    scenario(server, '[[rules]]\nfault = { kind = "status", status = 400, message = "bad" }')
    llm, sleeps = adapter(server)
    with pytest.raises(LLMError) as caught:
        llm.complete(request())
    assert caught.value.code == "llm_unavailable" and len(server.requests) == 1 and sleeps == []


# -- timeouts ----------------------------------------------------------------------------------------
def test_given_a_slow_answer_once_when_calling_then_the_timeout_is_retried(server):
    scenario(server, '[[rules]]\nfault = { kind = "delay", seconds = 2, times = 1 }')
    llm, _ = adapter(server, timeout=0.3)
    response = llm.complete(request())
    assert response.attempts == 2 and response.text()


def test_given_always_slow_answers_when_calling_then_api_timeout(server):
    scenario(server, '[[rules]]\nfault = { kind = "delay", seconds = 2 }')
    llm, _ = adapter(server, timeout=0.3, retries=1)
    with pytest.raises(LLMError) as caught:
        llm.complete(request())
    assert caught.value.code == "api_timeout"


# -- streams cut in the middle (§6.7.6) -------------------------------------------------------------
def test_given_a_text_stream_cut_inside_its_only_block_when_calling_then_it_is_retried(server):
    scenario(server, '[[rules]]\nfault = { kind = "cut_stream", after_blocks = 0, times = 1 }')
    llm, _ = adapter(server)
    response = llm.complete(request())
    assert (response.attempts, response.interruptions, response.salvaged) == (2, 1, False)
    assert response.stop_reason == "end_turn" and response.text().endswith("ウル！")


def test_given_a_tool_use_cut_in_its_json_when_calling_then_the_partial_call_is_never_used(server):
    # GIVEN the proposal's tool_use is cut once inside its partial_json
    scenario(server, '[[rules]]\nfault = { kind = "cut_stream", after_blocks = 0, times = 1 }')
    llm, _ = adapter(server)
    forced = request("田中さんに見積書を作成するタスクを明日までにお願い").model_copy(
        update={
            "tools": [{"name": "submit_proposal", "description": "d", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "tool", "name": "submit_proposal"},
        }
    )
    # WHEN
    response = llm.complete(forced)
    # THEN the answer is the complete call of the retry
    (use,) = response.tool_uses("submit_proposal")
    assert (
        response.interruptions == 1 and use["input"]["tool_calls"][0]["tool_name"] == "chatwork_task_create"
    )


def test_given_a_stream_cut_after_a_complete_text_block_when_calling_then_the_complete_text_is_salvaged(
    server,
):
    scenario(
        server,
        """
[[rules]]
fault = { kind = "cut_stream", after_blocks = 1 }
[rules.respond]
content = [{ type = "text", text = "タスクを作成したウル🐺" }, { type = "text", text = "他にも手伝えることがあれば言ってほしいウル！" }]
""",
    )
    llm, _ = adapter(server)
    response = llm.complete(request())
    assert response.salvaged and response.stop_reason is None and response.interruptions == 1
    assert response.text() == "タスクを作成したウル🐺" and len(server.requests) == 1


def test_given_a_stream_cut_inside_a_tool_call_after_text_when_calling_then_it_is_retried_not_salvaged(
    server,
):
    scenario(
        server,
        """
[[rules]]
fault = { kind = "cut_stream", after_blocks = 1 }
[rules.respond]
content = [{ type = "text", text = "考え中ウル" }, { type = "tool_use", name = "submit_proposal", input = { note = "abcdefghijklmnopqrstuvwxyz0123456789" } }]
""",
    )
    llm, _ = adapter(server, retries=1)
    with pytest.raises(LLMError) as caught:
        llm.complete(request())
    assert caught.value.code == "llm_unavailable" and len(server.requests) == 2


def test_given_interrupted_attempts_when_calling_then_their_input_tokens_are_still_counted(server):
    scenario(server, '[[rules]]\nfault = { kind = "cut_stream", after_blocks = 0, times = 1 }')
    llm, _ = adapter(server)
    cut_then_ok = llm.complete(request())
    server.set_scenario(Scenario())
    clean = llm.complete(request())
    assert cut_then_ok.usage.input_tokens == 2 * clean.usage.input_tokens


def test_given_a_non_streaming_request_when_calling_then_the_json_answer_is_used(server):
    llm, _ = adapter(server)
    response = llm.complete(request(stream=False))
    assert response.stop_reason == "end_turn" and server.requests[0]["body"].get("stream") in (None, False)


# -- max_tokens (§6.7.6 continuation) ---------------------------------------------------------------
LONG = "今週の予定をまとめるウル。月曜は定例会議、水曜は見積書の締め切り、金曜は全社会議があるウル！"


def test_given_a_text_cut_by_max_tokens_when_completed_then_it_is_continued_with_a_prefill(server):
    # GIVEN the fake cuts the answer once at max_tokens
    scenario(
        server,
        f"""
[[rules]]
fault = {{ kind = "max_tokens", times = 1 }}
[rules.respond]
content = [{{ type = "text", text = "{LONG}" }}]
""",
    )
    llm, _ = adapter(server)
    calls: list[LLMRequest] = []
    # WHEN
    done = complete(llm, request(), max_continuations=3, cap=8192, record=lambda q, r: calls.append(q))
    # THEN one continuation, sent as an assistant prefill, completed the text
    assert done.continuations == 1 and not done.truncated and done.response.text() == LONG
    assert [c.call_type for c in calls] == ["integration", "continuation"]
    prefill = server.requests[1]["body"]["messages"][-1]
    assert prefill["role"] == "assistant" and LONG.startswith(prefill["content"])


def test_given_a_proposal_cut_by_max_tokens_when_completed_then_it_is_asked_again_with_more_room(server):
    scenario(server, '[[rules]]\nfault = { kind = "max_tokens", times = 1 }')
    llm, _ = adapter(server)
    forced = request("田中さんに見積書を作成するタスクを明日までにお願い", max_tokens=500).model_copy(
        update={
            "tools": [{"name": "submit_proposal", "description": "d", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "tool", "name": "submit_proposal"},
        }
    )
    done = complete(llm, forced, max_continuations=3, cap=8192, record=lambda q, r: None)
    assert done.continuations == 1 and done.response.tool_uses("submit_proposal")
    assert [r["body"]["max_tokens"] for r in server.requests] == [500, 1000]


def test_given_an_answer_always_cut_when_completed_then_at_most_three_continuations():
    # GIVEN a port that is always cut by max_tokens
    llm = FakeLLM(default=text_answer("途中ウル", stop_reason="max_tokens"))
    done = complete(llm, request(), max_continuations=3, cap=8192, record=lambda q, r: None)
    assert done.continuations == 3 and done.truncated and len(llm.requests) == 4
    assert done.response.text() == "途中ウル" * 4


@pytest.mark.parametrize(
    "text, tools",
    [
        ("来週の定例、何時からだっけ？🙏", False),
        ("田中さんに見積書を作成するタスクを明日までにお願い", True),
    ],
)
def test_a_streamed_answer_gathered_from_its_events_is_the_whole_answer(server, text, tools):
    """The adapter gathers the stream's raw events itself (the SDK's helper re-parsed the tool input
    at every delta): text, a tool's input, the stop reason, the model and every token count come
    out as the same request answered whole."""
    llm, _ = adapter(server)
    asked = request(text, max_tokens=1024)
    if tools:
        asked = asked.model_copy(
            update={
                "tools": [
                    {"name": "submit_proposal", "description": "d", "input_schema": {"type": "object"}}
                ],
                "tool_choice": {"type": "tool", "name": "submit_proposal"},
            }
        )
    streamed = llm.complete(asked)
    whole = llm.complete(asked.model_copy(update={"stream": False}))

    def unnamed(content):  # a tool call's id is new in every answer
        return [{k: v for k, v in block.items() if k != "id"} for block in content]

    assert unnamed(streamed.content) == unnamed(whole.content) and streamed.content
    assert all(block["id"] for block in streamed.content if block["type"] == "tool_use")
    assert (streamed.stop_reason, streamed.model, streamed.usage) == (
        whole.stop_reason,
        whole.model,
        whole.usage,
    )
    assert streamed.usage.output_tokens > 0 and streamed.usage.input_tokens > 0
    if tools:
        (use,) = streamed.tool_uses("submit_proposal")
        assert isinstance(use["input"], dict) and use["input"]["tool_calls"]
