"""Integration tests: the REAL ``anthropic`` SDK against the fake server on 127.0.0.1.

Also covers the admin endpoints and the ``python -m infra.fake_llm`` command line. Every test
starts its own server through a fixture that stops it afterwards; nothing leaves the machine.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from infra.fake_llm import FakeAnthropicServer, Scenario
from infra.fake_llm.agent_state import with_state_update
from infra.fake_llm.scripted import PROPOSAL_TOOL, integrate, propose
from shared_lib.adapters.anthropic_llm import is_retryable

MODEL = "claude-sonnet-4-6"
REPO_ROOT = Path(__file__).resolve().parents[2]
PROPOSAL_TOOLS: list[Any] = [
    {"name": PROPOSAL_TOOL, "description": "Submit the decision.", "input_schema": {"type": "object"}}
]
FORCED: Any = {"type": "tool", "name": PROPOSAL_TOOL}
TASK_MESSAGE = "田中さんに見積書を作成するタスクを明日までにお願い"


def expected_proposal() -> dict[str, Any]:
    """What the scripted model answers for TASK_MESSAGE: its proposal with its state_update."""
    return with_state_update(TASK_MESSAGE, propose(TASK_MESSAGE))


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    fake = FakeAnthropicServer().start()
    yield fake
    fake.stop()


@pytest.fixture
def client(server: FakeAnthropicServer) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(base_url=server.url, api_key="test", max_retries=0) as sdk:
        yield sdk


def user(text: str) -> list[Any]:
    return [{"role": "user", "content": text}]


def text_of(message: anthropic.types.Message) -> str:
    return "".join(block.text for block in message.content if isinstance(block, anthropic.types.TextBlock))


def http(
    server: FakeAnthropicServer,
    method: str,
    path: str,
    payload: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    req = urllib.request.Request(server.url + path, data=payload, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


# --------------------------------------------------------------------------- happy paths


def test_given_forced_proposal_tool_when_create_then_sdk_parses_a_tool_use_message(
    server: FakeAnthropicServer, client: anthropic.Anthropic
) -> None:
    message = client.messages.create(
        model=MODEL, max_tokens=1024, messages=user(TASK_MESSAGE), tools=PROPOSAL_TOOLS, tool_choice=FORCED
    )
    block = message.content[0]
    assert isinstance(block, anthropic.types.ToolUseBlock)
    assert (
        block.id.startswith("toolu_") and block.name == PROPOSAL_TOOL and block.input == expected_proposal()
    )
    assert message.stop_reason == "tool_use" and message.id.startswith("msg_") and message.model == MODEL
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0
    assert (message.usage.cache_creation_input_tokens, message.usage.cache_read_input_tokens) == (0, 0)
    recorded = server.requests[0]
    assert (recorded["method"], recorded["path"], recorded["body"]["tool_choice"]) == (
        "POST",
        "/v1/messages",
        FORCED,
    )


def test_given_stream_true_when_create_then_text_events_arrive_in_the_real_order(
    client: anthropic.Anthropic,
) -> None:
    prompt = 'chatwork_task_search の結果: {"tasks": ["見積書を作成"]}\nソウルくんとして伝えて'
    events = list(client.messages.create(model=MODEL, max_tokens=256, messages=user(prompt), stream=True))
    kinds = [event.type for event in events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    text = "".join(
        e.delta.text for e in events if e.type == "content_block_delta" and e.delta.type == "text_delta"
    )
    assert text == integrate(prompt) and "見積書を作成" in text


def test_given_messages_stream_when_tool_use_then_final_message_has_the_assembled_input(
    client: anthropic.Anthropic,
) -> None:
    with client.messages.stream(
        model=MODEL, max_tokens=1024, messages=user(TASK_MESSAGE), tools=PROPOSAL_TOOLS, tool_choice=FORCED
    ) as stream:
        json_events = [event for event in stream if event.type == "input_json"]
        final = stream.get_final_message()
    assert len(json_events) > 1
    assert final.stop_reason == "tool_use" and final.usage.output_tokens > 1
    assert final.content[0].type == "tool_use" and final.content[0].input == expected_proposal()


def test_given_messages_endpoint_when_counting_tokens_then_sdk_gets_the_estimate(
    client: anthropic.Anthropic,
) -> None:
    counted = client.messages.count_tokens(model=MODEL, messages=user("x" * 40))
    assert counted.input_tokens == 10


# --------------------------------------------------------------------------- faults


def test_given_429_with_retry_after_when_no_retries_then_rate_limit_error_carries_the_header(
    server: FakeAnthropicServer, client: anthropic.Anthropic
) -> None:
    server.set_scenario(
        Scenario.from_dict(
            {"rules": [{"fault": {"kind": "status", "status": 429, "retry_after": 0.2, "times": 1}}]}
        )
    )
    with pytest.raises(anthropic.RateLimitError) as caught:
        client.messages.create(model=MODEL, max_tokens=64, messages=user("こんにちは"))
    assert caught.value.status_code == 429 and caught.value.response.headers["retry-after"] == "0.2"
    assert caught.value.type == "rate_limit_error"


def test_given_429_once_when_one_retry_allowed_then_the_sdk_retries_and_succeeds(
    server: FakeAnthropicServer,
) -> None:
    server.set_scenario(
        Scenario.from_dict(
            {"rules": [{"fault": {"kind": "status", "status": 429, "retry_after": 0.1, "times": 1}}]}
        )
    )
    with anthropic.Anthropic(base_url=server.url, api_key="test", max_retries=1) as sdk:
        message = sdk.messages.create(model=MODEL, max_tokens=64, messages=user("こんにちは"))
    assert message.stop_reason == "end_turn"
    assert [r["headers"]["x-stainless-retry-count"] for r in server.requests] == ["0", "1"]


@pytest.mark.parametrize(
    ("status", "error_class", "error_type"),
    [
        (500, anthropic.InternalServerError, "api_error"),
        (529, anthropic.OverloadedError, "overloaded_error"),
    ],
)
def test_given_server_side_status_fault_when_create_then_the_sdk_raises_the_typed_error(
    server: FakeAnthropicServer,
    client: anthropic.Anthropic,
    status: int,
    error_class: type[anthropic.APIStatusError],
    error_type: str,
) -> None:
    server.set_scenario(Scenario.from_dict({"rules": [{"fault": {"kind": "status", "status": status}}]}))
    with pytest.raises(error_class) as caught:
        client.messages.create(model=MODEL, max_tokens=64, messages=user("こんにちは"))
    # the adapter judges a server-side fault by its status, not by the SDK's class tree (a 529's
    # OverloadedError is an InternalServerError in some SDK lines and not in others): retried
    assert (caught.value.status_code, caught.value.type) == (status, error_type)
    assert is_retryable(caught.value)


def test_given_delay_beyond_client_timeout_when_create_then_api_timeout_error(
    server: FakeAnthropicServer,
) -> None:
    server.set_scenario(
        Scenario.from_dict({"rules": [{"fault": {"kind": "delay", "seconds": 2, "times": 1}}]})
    )
    sdk = anthropic.Anthropic(base_url=server.url, api_key="test", max_retries=0, timeout=0.5)
    with sdk, pytest.raises(anthropic.APITimeoutError):
        sdk.messages.create(model=MODEL, max_tokens=64, messages=user("こんにちは"))


def test_given_cut_text_stream_when_iterating_then_httpx_protocol_error_and_no_message_stop(
    server: FakeAnthropicServer, client: anthropic.Anthropic
) -> None:
    # What really happens with anthropic 2.x: the chunked body ends early, httpx2 raises
    # RemoteProtocolError while iterating, and the SDK does not wrap it in an APIError.
    server.set_scenario(Scenario.from_dict({"rules": [{"fault": {"kind": "cut_stream", "after_blocks": 0}}]}))
    seen: list[str] = []
    opened = client.messages.stream(model=MODEL, max_tokens=256, messages=user("結果: 完了しました"))
    with pytest.raises(httpx2.RemoteProtocolError), opened as stream:
        seen.extend(event.type for event in stream)
    assert "text" in seen and "content_block_stop" not in seen and "message_stop" not in seen


def test_given_cut_tool_use_stream_when_iterating_then_partial_json_is_incomplete(
    server: FakeAnthropicServer, client: anthropic.Anthropic
) -> None:
    server.set_scenario(Scenario.from_dict({"rules": [{"fault": {"kind": "cut_stream", "after_blocks": 0}}]}))
    pieces: list[str] = []
    with pytest.raises(httpx2.RemoteProtocolError):
        for event in client.messages.create(
            model=MODEL,
            max_tokens=1024,
            messages=user(TASK_MESSAGE),
            tools=PROPOSAL_TOOLS,
            tool_choice=FORCED,
            stream=True,
        ):
            if event.type == "content_block_delta" and event.delta.type == "input_json_delta":
                pieces.append(event.delta.partial_json)
    assert "".join(pieces)
    with pytest.raises(json.JSONDecodeError):
        json.loads("".join(pieces))


def test_given_max_tokens_fault_when_client_continues_with_a_prefill_then_the_remainder_completes_the_text(
    server: FakeAnthropicServer, client: anthropic.Anthropic
) -> None:
    full = "今週は月曜に定例会議、水曜に見積書の締め切り、金曜に全社会議があるウル。"
    server.set_scenario(
        Scenario.from_dict(
            {
                "rules": [
                    {
                        "fault": {"kind": "max_tokens", "times": 1},
                        "respond": {"content": [{"type": "text", "text": full}]},
                    }
                ]
            }
        )
    )
    first = client.messages.create(model=MODEL, max_tokens=64, messages=user("今週の予定"))
    partial = text_of(first)
    assert first.stop_reason == "max_tokens" and full.startswith(partial) and partial != full
    prefill = partial.rstrip()
    second = client.messages.create(
        model=MODEL, max_tokens=64, messages=[*user("今週の予定"), {"role": "assistant", "content": prefill}]
    )
    assert second.stop_reason == "end_turn" and prefill + text_of(second) == full


def test_given_cache_control_on_system_when_same_prefix_sent_twice_then_creation_then_read(
    client: anthropic.Anthropic,
) -> None:
    system: Any = [
        {"type": "text", "text": "あなたはソウルくんです。" * 40, "cache_control": {"type": "ephemeral"}}
    ]
    first = client.messages.create(model=MODEL, max_tokens=64, system=system, messages=user("こんにちは"))
    second = client.messages.create(model=MODEL, max_tokens=64, system=system, messages=user("こんばんは"))
    assert (first.usage.cache_creation_input_tokens or 0) > 0 and first.usage.cache_read_input_tokens == 0
    assert second.usage.cache_creation_input_tokens == 0
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens


# --------------------------------------------------------------------------- raw HTTP and admin


def test_given_no_credentials_or_bad_body_when_posting_then_anthropic_error_json(
    server: FakeAnthropicServer,
) -> None:
    payload = json.dumps({"model": MODEL, "messages": user("x")}).encode()
    status, error = http(server, "POST", "/v1/messages", payload, {"content-type": "application/json"})
    assert (status, error["type"], error["error"]["type"]) == (401, "error", "authentication_error")
    status, error = http(server, "POST", "/v1/messages", payload, {"x-api-key": "k"})
    assert (status, error["error"]) == (
        400,
        {"type": "invalid_request_error", "message": "max_tokens: Field required"},
    )


def test_given_admin_endpoints_when_used_then_health_requests_scenario_and_reset_work(
    server: FakeAnthropicServer,
) -> None:
    assert http(server, "GET", "/_admin/health") == (200, {"ok": True})
    toml = '[[rules]]\nrespond = { content = [{ type = "text", text = "from admin" }] }\n'
    assert http(server, "POST", "/_admin/scenario", toml.encode())[0] == 200
    payload = json.dumps({"model": MODEL, "max_tokens": 8, "messages": user("hi")}).encode()
    status, message = http(server, "POST", "/v1/messages", payload, {"x-api-key": "k"})
    assert (status, message["content"]) == (200, [{"type": "text", "text": "from admin"}])
    status, recorded = http(server, "GET", "/_admin/requests")
    assert status == 200 and [r["body"]["messages"] for r in recorded] == [user("hi")]
    assert http(server, "POST", "/_admin/scenario", b'{"rules": [{"oops": 1}]}')[0] == 400
    assert http(server, "POST", "/_admin/reset") == (200, {"ok": True})
    assert http(server, "GET", "/_admin/requests") == (200, [])


def test_given_cli_when_started_then_it_prints_the_url_serves_and_stops_on_sigterm() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "infra.fake_llm", "--port", "0"],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        assert line.startswith("fake-anthropic listening on http://127.0.0.1:")
        with urllib.request.urlopen(line.rsplit(" ", 1)[1] + "/_admin/health", timeout=5) as response:
            assert json.loads(response.read()) == {"ok": True}
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


def test_given_a_tool_result_for_its_proposal_when_create_then_the_scripted_model_takes_the_next_step(
    client: anthropic.Anthropic,
) -> None:
    """Search then act, over the real SDK: the second request carries the charter's tool_result."""
    request = "自分のタスクを確認して、資料のタスクは完了にして"
    first = client.messages.create(
        model=MODEL, max_tokens=1024, messages=user(request), tools=PROPOSAL_TOOLS, tool_choice=FORCED
    )
    call = first.content[0]
    assert isinstance(call, anthropic.types.ToolUseBlock)
    proposed: dict[str, Any] = dict(call.input)  # type: ignore[arg-type]
    assert proposed["tool_calls"][0]["tool_name"] == "chatwork_task_search"
    assert proposed["loop"]["needs_next_loop"] is True

    def next_step(tasks: list[dict[str, str]]) -> dict[str, Any]:
        outcome = {
            "verdict": "allow",
            "results": [{"tool": "chatwork_task_search", "ok": True, "result": {"tasks": tasks}}],
        }
        answered = client.messages.create(
            model=MODEL,
            max_tokens=1024,
            tools=PROPOSAL_TOOLS,
            tool_choice=FORCED,
            messages=[
                *user(request),
                {"role": "assistant", "content": [call.model_dump()]},
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": call.id, "content": json.dumps(outcome)}
                    ],
                },
            ],
        )
        block = answered.content[0]
        assert isinstance(block, anthropic.types.ToolUseBlock)
        return dict(block.input)  # type: ignore[arg-type]

    act = next_step([{"task_id": "t1", "body": "見積書"}, {"task_id": "t2", "body": "資料作成"}])
    assert act["tool_calls"][0]["tool_name"] == "chatwork_task_complete"
    assert act["tool_calls"][0]["parameters"]["task_id"] == "t2"
    ask = next_step([{"task_id": "t1", "body": "見積書"}])
    assert ask["output_type"] == "clarification_needed" and ask["options"] == ["見積書"]
