"""The OpenAI-compatible adapter's mapping (``openai_wire``): the product's Anthropic-shaped
request → chat completions, and the answer (JSON or chunks) → ``text`` / ``tool_use`` blocks.
Pure functions: no I/O."""

from __future__ import annotations

import json

import pytest

from shared_lib.adapters.llm_retry import StreamInterrupted
from shared_lib.adapters.openai_wire import ChunkReader, chat_kwargs, completion_response
from shared_lib.ports import LLMRequest

TOOL = {
    "name": "submit_proposal",
    "description": "Submit.",
    "input_schema": {"type": "object", "required": ["x"]},
}


def request(**kw: object) -> LLMRequest:
    base: dict[str, object] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    return LLMRequest.model_validate({**base, **kw})


def test_given_system_blocks_with_cache_control_then_one_system_message_without_it():
    system = [
        {"type": "text", "text": "core", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "org"},
    ]
    kwargs = chat_kwargs(request(system=system, max_tokens=77, temperature=0.3))
    assert kwargs["messages"][0] == {"role": "system", "content": "core\n\norg"}
    assert kwargs["max_tokens"] == 77 and kwargs["temperature"] == 0.3
    assert "cache_control" not in json.dumps(kwargs)
    assert "stream" not in kwargs


def test_given_a_tool_use_and_its_result_then_assistant_tool_calls_and_a_tool_message():
    messages = [
        {"role": "user", "content": "タスク確認して"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "調べるウル。"},
                {"type": "tool_use", "id": "call_1", "name": "submit_proposal", "input": {"x": "東京"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": [{"type": "text", "text": "ok"}]},
                {"type": "text", "text": "次へ"},
            ],
        },
    ]
    chat = chat_kwargs(request(messages=messages))["messages"]
    assert chat[1] == {
        "role": "assistant",
        "content": "調べるウル。",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "submit_proposal", "arguments": '{"x": "東京"}'},
            }
        ],
    }
    assert chat[2] == {"role": "tool", "tool_call_id": "call_1", "content": "ok"}
    assert chat[3] == {"role": "user", "content": "次へ"}


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        (
            {"type": "tool", "name": "submit_proposal"},
            {"type": "function", "function": {"name": "submit_proposal"}},
        ),
        ({"type": "auto"}, "auto"),
        ({"type": "any"}, "required"),
        ({"type": "none"}, "none"),
    ],
)
def test_given_tools_and_a_tool_choice_then_functions_and_the_mapped_choice(choice, expected):
    kwargs = chat_kwargs(request(tools=[TOOL], tool_choice=choice))
    assert kwargs["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "submit_proposal",
                "parameters": TOOL["input_schema"],
                "description": "Submit.",
            },
        }
    ]
    assert kwargs["tool_choice"] == expected


def test_given_a_streamed_request_then_usage_is_asked_for_unless_switched_off():
    assert chat_kwargs(request(stream=True))["stream_options"] == {"include_usage": True}
    assert "stream_options" not in chat_kwargs(request(stream=True), stream_usage=False)


def completion(message: dict, finish: str = "stop") -> dict:
    return {
        "model": "served",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7},
    }


@pytest.mark.parametrize(
    ("finish", "stop"), [("stop", "end_turn"), ("tool_calls", "tool_use"), ("length", "max_tokens")]
)
def test_given_a_completion_then_blocks_stop_reason_and_usage(finish, stop):
    call = {
        "id": "call_9",
        "type": "function",
        "function": {"name": "submit_proposal", "arguments": '{"x": 1}'},
    }
    response = completion_response(
        completion({"role": "assistant", "content": "hi", "tool_calls": [call]}, finish)
    )
    assert response.content == [
        {"type": "text", "text": "hi"},
        {"type": "tool_use", "id": "call_9", "name": "submit_proposal", "input": {"x": 1}},
    ]
    assert response.stop_reason == stop and response.model == "served"
    assert (
        response.usage.input_tokens,
        response.usage.output_tokens,
        response.usage.cache_read_input_tokens,
    ) == (
        11,
        7,
        0,
    )


@pytest.mark.parametrize("arguments", ['{"x": 1', "[1, 2]", '"text"'])
def test_given_tool_arguments_that_are_not_a_json_object_then_stream_interrupted(arguments):
    call = {"id": "c", "type": "function", "function": {"name": "submit_proposal", "arguments": arguments}}
    with pytest.raises(StreamInterrupted):
        completion_response(
            completion({"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls")
        )


def chunk(delta: dict, finish: str | None = None) -> dict:
    return {"model": "served", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def test_given_chunks_with_text_and_tool_call_deltas_then_they_add_up_to_one_answer():
    reader = ChunkReader()
    for piece in (
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "調べる"}),
        chunk({"content": "ウル"}),
        chunk({"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "f", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"a"'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": ": 2}"}}]}),
    ):
        reader.add(piece)
    assert not reader.finished
    reader.add(chunk({}, "tool_calls"))
    reader.add({"model": "served", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}})
    response = reader.response()
    assert response.content == [
        {"type": "text", "text": "調べるウル"},
        {"type": "tool_use", "id": "call_1", "name": "f", "input": {"a": 2}},
    ]
    assert response.stop_reason == "tool_use" and response.usage.output_tokens == 4
