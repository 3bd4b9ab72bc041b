"""The fake OpenAI-compatible server (``infra.fake_openai``): its wire on 127.0.0.1 read with
plain HTTP (what a server like vLLM sends, checked field by field), and the chat request it
hands to the shared scenario engine."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from infra.fake_llm import Scenario
from infra.fake_openai import FakeOpenAIServer
from infra.fake_openai.wire import messages_body

FORCED = {
    "tools": [
        {"type": "function", "function": {"name": "submit_proposal", "parameters": {"type": "object"}}}
    ],
    "tool_choice": {"type": "function", "function": {"name": "submit_proposal"}},
}
TASK = "田中さんに見積書を作成するタスクを明日までにお願い"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    fake = FakeOpenAIServer().start()
    yield fake
    fake.stop()


def post(
    server: FakeOpenAIServer, body: dict[str, Any], token: str = "local"
) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(
        server.url + "/v1/chat/completions",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"content-type": "application/json", "authorization": f"Bearer {token}"},
    )
    try:
        with urllib.request.urlopen(req, timeout=5) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def chat(text: str, **extra: Any) -> dict[str, Any]:
    return {"model": "qwen", "messages": [{"role": "user", "content": text}], **extra}


def test_given_a_forced_proposal_tool_then_a_completion_with_one_tool_call(server):
    status, _, raw = post(server, chat(TASK, **FORCED))
    body = json.loads(raw)
    assert status == 200 and body["object"] == "chat.completion" and body["model"] == "qwen"
    (choice,) = body["choices"]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] is None
    (call,) = choice["message"]["tool_calls"]
    assert call["id"].startswith("call_") and call["function"]["name"] == "submit_proposal"
    assert json.loads(call["function"]["arguments"])["output_type"] == "tool_call"
    assert (
        body["usage"]["total_tokens"] == body["usage"]["prompt_tokens"] + body["usage"]["completion_tokens"]
    )


def test_given_a_stream_then_data_chunks_with_tool_call_deltas_usage_and_done(server):
    status, headers, raw = post(
        server, chat(TASK, stream=True, stream_options={"include_usage": True}, **FORCED)
    )
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    frames = [f.removeprefix("data: ") for f in raw.decode().split("\n\n") if f]
    assert frames[-1] == "[DONE]"
    chunks = [json.loads(f) for f in frames[:-1]]
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    opening = next(d["tool_calls"][0] for d in deltas if "tool_calls" in d)
    assert opening["id"].startswith("call_") and opening["function"] == {
        "name": "submit_proposal",
        "arguments": "",
    }
    arguments = "".join(d["tool_calls"][0]["function"]["arguments"] for d in deltas if "tool_calls" in d)
    assert json.loads(arguments)["output_type"] == "tool_call"
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "tool_calls"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] > 0


def test_given_no_include_usage_then_no_usage_chunk(server):
    _, _, raw = post(server, chat("おはよう", stream=True))
    chunks = [
        json.loads(f.removeprefix("data: ")) for f in raw.decode().split("\n\n") if f and "[DONE]" not in f
    ]
    assert all(c["choices"] for c in chunks)


@pytest.mark.parametrize(
    ("status", "kind"), [(429, "requests"), (503, "server_error"), (529, "server_error")]
)
def test_given_a_status_fault_then_the_openai_error_json_and_retry_after(server, status, kind):
    server.set_scenario(
        Scenario.from_toml(f'[[rules]]\nfault = {{ kind = "status", status = {status}, retry_after = 2 }}')
    )
    code, headers, raw = post(server, chat("hi"))
    error = json.loads(raw)["error"]
    assert code == status and headers["retry-after"] == "2"
    assert error["type"] == kind and set(error) == {"message", "type", "code", "param"}


def test_given_a_max_tokens_fault_then_finish_reason_length(server):
    server.set_scenario(Scenario.from_toml('[[rules]]\nfault = { kind = "max_tokens", times = 1 }'))
    _, _, raw = post(server, chat("おはよう"))
    assert json.loads(raw)["choices"][0]["finish_reason"] == "length"


def test_given_no_bearer_token_then_401(server):
    code, _, raw = post(server, chat("hi"), token="")
    assert code == 401 and json.loads(raw)["error"]["code"] == "invalid_api_key"


def test_given_models_and_admin_endpoints_then_they_answer(server):
    with urllib.request.urlopen(server.url + "/v1/models", timeout=5) as response:
        assert json.loads(response.read())["object"] == "list"
    post(server, chat("hi"))
    with urllib.request.urlopen(server.url + "/_admin/requests", timeout=5) as response:
        assert [r["path"] for r in json.loads(response.read())] == ["/v1/models", "/v1/chat/completions"]


def test_given_a_chat_request_then_the_engine_sees_the_anthropic_shaped_request():
    chat_body = {
        "model": "m",
        "max_completion_tokens": 64,
        "stop": "。",
        "messages": [
            {"role": "system", "content": "ソウルくん"},
            {"role": "user", "content": [{"type": "text", "text": "確認して"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
            {"role": "user", "content": "次"},
        ],
        **FORCED,
    }
    body, problem = messages_body(chat_body)
    assert problem is None
    assert body["system"] == [{"type": "text", "text": "ソウルくん"}] and body["max_tokens"] == 64
    assert body["stop_sequences"] == ["。"] and body["tool_choice"] == {
        "type": "tool",
        "name": "submit_proposal",
    }
    assert body["tools"] == [{"name": "submit_proposal", "input_schema": {"type": "object"}}]
    assert body["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "call_1", "name": "f", "input": {"a": 1}}],
    }
    assert body["messages"][2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "call_1", "content": "ok"},
            {"type": "text", "text": "次"},
        ],
    }


def test_given_a_broken_assistant_tool_call_then_a_400_problem():
    bad = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{"}}
    _, problem = messages_body({"model": "m", "messages": [{"role": "assistant", "tool_calls": [bad]}]})
    assert problem is not None and problem.startswith("messages.0")
