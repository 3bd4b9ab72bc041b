"""The chat completions wire of the fake OpenAI-compatible server, over the fake Anthropic
server's engine: a chat request becomes the Messages body the scenario engine and the scripted
model read, and their wire Message becomes a ``chat.completion`` or its chunks.

The assistant message goes both ways through the product's own mapping
(``shared_lib.adapters.openai_wire``), so the fake and the adapter agree on one shape.

>>> body, problem = messages_body({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
>>> body["messages"], problem
([{'role': 'user', 'content': [{'type': 'text', 'text': 'hi'}]}], None)
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from typing import Any

from infra.fake_llm.scenario import JSON
from infra.fake_llm.sse import stream_events
from shared_lib.adapters.openai_wire import STOP_TO_FINISH, assistant_message, block_text, content_blocks
from shared_lib.errors import CharterError

DEFAULT_MAX_TOKENS = 4096
ERROR_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 404: "invalid_request_error"}
ERROR_CODES = {
    401: "invalid_api_key",
    404: "not_found",
    429: "rate_limit_exceeded",
    503: "service_unavailable",
}


def error_body(status: int, message: str, error_type: str | None = None) -> JSON:
    """The OpenAI error JSON: ``{"error": {"message", "type", "code", "param"}}``."""
    kind = error_type or ERROR_TYPES.get(status) or ("server_error" if status >= 500 else "requests")
    return {"error": {"message": message, "type": kind, "code": ERROR_CODES.get(status), "param": None}}


def messages_body(chat: Any) -> tuple[Any, str | None]:
    """The Messages body for a chat completions body, or the problem to report (400)."""
    if not isinstance(chat, Mapping):
        return chat, "request body must be a JSON object"
    if not isinstance(chat.get("messages"), list) or not chat["messages"]:
        return chat, "messages: at least one message is required"
    system: list[str] = []
    messages: list[JSON] = []
    for index, message in enumerate(chat["messages"]):
        role = message.get("role") if isinstance(message, Mapping) else None
        if role in ("system", "developer"):
            system.append(block_text(message.get("content")))
            continue
        try:
            blocks = _blocks(role, message)
        except CharterError as err:
            return chat, f"messages.{index}: {err}"
        if blocks is None:
            return chat, f"messages.{index}.role: unknown role {role!r}"
        wire_role = "assistant" if role == "assistant" else "user"
        if messages and messages[-1]["role"] == wire_role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": wire_role, "content": blocks})
    body: JSON = {
        "model": chat.get("model"),
        "max_tokens": chat.get("max_completion_tokens") or chat.get("max_tokens") or DEFAULT_MAX_TOKENS,
        "messages": messages,
        "stream": bool(chat.get("stream", False)),
    }
    if system:
        body["system"] = [{"type": "text", "text": "\n\n".join(system)}]
    if chat.get("tools"):
        body["tools"] = [_tool(tool.get("function") or {}) for tool in chat["tools"]]
    if chat.get("tool_choice") is not None:
        body["tool_choice"] = _tool_choice(chat["tool_choice"])
    stop = chat.get("stop")
    if stop:
        body["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    return body, None


def _blocks(role: Any, message: Mapping[str, Any]) -> list[JSON] | None:
    if role == "user":
        return [{"type": "text", "text": block_text(message.get("content"))}]
    if role == "assistant":
        return content_blocks(message)
    if role == "tool":
        result = {"tool_use_id": message.get("tool_call_id"), "content": block_text(message.get("content"))}
        return [{"type": "tool_result", **result}]
    return None


def _tool(function: Mapping[str, Any]) -> JSON:
    tool = {"name": function.get("name"), "input_schema": function.get("parameters") or {"type": "object"}}
    return {**tool, "description": function["description"]} if function.get("description") else tool


def _tool_choice(choice: Any) -> JSON:
    if isinstance(choice, Mapping):
        return {"type": "tool", "name": (choice.get("function") or {}).get("name")}
    return {"type": {"required": "any", "none": "none"}.get(str(choice), "auto")}


def _with_call_ids(message: JSON) -> JSON:
    """Tool ids as OpenAI's (``call_…``) instead of Anthropic's (``toolu_…``)."""
    content = [
        {**b, "id": "call_" + str(b["id"]).removeprefix("toolu_")} if b.get("type") == "tool_use" else b
        for b in message["content"]
    ]
    return {**message, "content": content}


def usage(message: JSON) -> JSON:
    used = message["usage"]
    prompt = used["input_tokens"] + used["cache_creation_input_tokens"] + used["cache_read_input_tokens"]
    return {
        "prompt_tokens": prompt,
        "completion_tokens": used["output_tokens"],
        "total_tokens": prompt + used["output_tokens"],
    }


def _head(message: JSON, kind: str) -> JSON:
    cid = "chatcmpl-" + secrets.token_hex(12)
    return {"id": cid, "object": kind, "created": int(time.time()), "model": message["model"]}


def completion(message: JSON) -> JSON:
    """A wire Message as a ``chat.completion``."""
    message = _with_call_ids(message)
    choice = {
        "index": 0,
        "message": assistant_message(message["content"]),
        "finish_reason": STOP_TO_FINISH.get(message["stop_reason"], "stop"),
        "logprobs": None,
    }
    return {**_head(message, "chat.completion"), "choices": [choice], "usage": usage(message)}


def chunks(message: JSON, cut_after_blocks: int | None, include_usage: bool) -> tuple[list[JSON], bool]:
    """The ``chat.completion.chunk``s of a message, from the Messages stream's events (so a
    ``cut_stream`` fault cuts at the same place: inside a tool call's arguments for a
    ``tool_use`` block), and whether the stream is complete."""
    message = _with_call_ids(message)
    events, complete = stream_events(message, cut_after_blocks)
    head = _head(message, "chat.completion.chunk")
    out: list[JSON] = []
    calls: dict[int, int] = {}  # block index -> tool call index

    def chunk(delta: JSON, finish: str | None = None) -> None:
        out.append(
            {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}
        )

    for name, data in events:
        if name == "message_start":
            chunk({"role": "assistant", "content": ""})
        elif name == "content_block_start" and data["content_block"]["type"] == "tool_use":
            block = data["content_block"]
            calls[data["index"]] = len(calls)
            function = {"name": block["name"], "arguments": ""}
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": calls[data["index"]],
                            "id": block["id"],
                            "type": "function",
                            "function": function,
                        }
                    ]
                }
            )
        elif name == "content_block_delta" and data["delta"]["type"] == "text_delta":
            chunk({"content": data["delta"]["text"]})
        elif name == "content_block_delta" and data["delta"].get("partial_json"):
            piece = {"index": calls[data["index"]], "function": {"arguments": data["delta"]["partial_json"]}}
            chunk({"tool_calls": [piece]})
        elif name == "message_delta":
            chunk({}, STOP_TO_FINISH.get(data["delta"]["stop_reason"], "stop"))
    if complete and include_usage:
        out.append({**head, "choices": [], "usage": usage(message)})
    return out, complete
