"""The chat completions wire (OpenAI-compatible servers) ⇄ the product's Anthropic-shaped contract.

Requests: system blocks → one ``system`` message (text joined, ``cache_control`` dropped);
``text`` blocks → message text; ``tool_use`` blocks → the assistant's ``tool_calls``
(arguments as JSON text); ``tool_result`` blocks → ``role: "tool"`` messages with their
``tool_call_id``; ``tools`` (``input_schema`` → ``function.parameters``); ``tool_choice``
(``tool`` → ``function``, ``any`` → ``required``, ``auto``, ``none``).

Answers: the message's text → one ``text`` block, each tool call → a ``tool_use`` block
(``id`` the call's id, ``input`` its arguments parsed: arguments that are not a JSON object
raise ``StreamInterrupted``, retried like a cut stream: never a half tool call);
``finish_reason`` → ``stop_reason``; usage from prompt / completion tokens.

Both directions of the assistant message are here (``assistant_message`` and
``content_blocks``): the fake OpenAI-compatible server uses them the other way round.

>>> assistant_message([{"type": "tool_use", "id": "c1", "name": "f", "input": {"a": 1}}])
{'role': 'assistant', 'content': None, 'tool_calls': [{'id': 'c1', 'type': 'function', 'function': {'name': 'f', 'arguments': '{"a": 1}'}}]}
>>> content_blocks({"content": "hi", "tool_calls": []})
[{'type': 'text', 'text': 'hi'}]
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from shared_lib.adapters.llm_retry import StreamInterrupted, probe
from shared_lib.ports import LLMRequest, LLMResponse, LLMUsage, PeerHealth

JSON = dict[str, Any]
FINISH_TO_STOP = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}
STOP_TO_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}


def block_text(content: Any) -> str:
    """The text of a content (a string, or its ``text`` blocks joined)."""
    if isinstance(content, str):
        return content
    blocks = content if isinstance(content, list) else []
    return "\n".join(
        str(b.get("text", "")) for b in blocks if isinstance(b, Mapping) and b.get("type") == "text"
    )


def chat_messages(system: list[JSON], messages: list[JSON]) -> list[JSON]:
    """The chat messages for an Anthropic-shaped system and conversation."""
    out: list[JSON] = []
    prompt = "\n\n".join(str(b.get("text", "")) for b in system if b.get("type") == "text")
    if prompt:
        out.append({"role": "system", "content": prompt})
    for message in messages:
        role, content = message.get("role"), message.get("content", "")
        if isinstance(content, str):
            out.append({"role": role, "content": content})
        elif role == "assistant":
            out.append(assistant_message(content))
        else:
            for block in content:
                if block.get("type") == "tool_result":
                    result = {
                        "tool_call_id": block.get("tool_use_id"),
                        "content": block_text(block.get("content")),
                    }
                    out.append({"role": "tool", **result})
            text = block_text(content)
            if text:
                out.append({"role": "user", "content": text})
    return out


def assistant_message(blocks: list[JSON]) -> JSON:
    """An assistant's Anthropic content blocks as one chat message (text and ``tool_calls``)."""
    text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
    calls = [
        {
            "id": b.get("id"),
            "type": "function",
            "function": {
                "name": b.get("name"),
                "arguments": json.dumps(b.get("input", {}), ensure_ascii=False),
            },
        }
        for b in blocks
        if b.get("type") == "tool_use"
    ]
    message: JSON = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    return message


def content_blocks(message: Mapping[str, Any]) -> list[JSON]:
    """A chat message as Anthropic content blocks; ``StreamInterrupted`` for a broken tool call."""
    text = message.get("content")
    blocks: list[JSON] = [{"type": "text", "text": str(text)}] if text else []
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") or {}
        name = function.get("name")
        if not name:
            raise StreamInterrupted("a tool call without a name")
        blocks.append(
            {
                "type": "tool_use",
                "id": call.get("id") or f"call_{index}",
                "name": name,
                "input": tool_input(function.get("arguments")),
            }
        )
    return blocks


def tool_input(arguments: Any) -> JSON:
    """A tool call's arguments as a JSON object (``""`` is ``{}``), else ``StreamInterrupted``."""
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return {}
    try:
        value = json.loads(arguments) if isinstance(arguments, str) else arguments
    except json.JSONDecodeError as exc:
        raise StreamInterrupted("tool call arguments are not JSON") from exc
    if not isinstance(value, dict):
        raise StreamInterrupted("tool call arguments are not a JSON object")
    return value


def chat_tools(tools: list[JSON]) -> list[JSON]:
    def function(tool: JSON) -> JSON:
        found = {"name": tool["name"], "parameters": tool.get("input_schema") or {"type": "object"}}
        return {**found, "description": tool["description"]} if tool.get("description") else found

    return [{"type": "function", "function": function(tool)} for tool in tools]


def chat_tool_choice(choice: Mapping[str, Any]) -> str | JSON:
    kind = choice.get("type", "auto")
    if kind == "tool":
        return {"type": "function", "function": {"name": choice.get("name")}}
    return {"any": "required", "none": "none"}.get(str(kind), "auto")


def chat_kwargs(request: LLMRequest, *, stream_usage: bool = True) -> JSON:
    """The ``chat.completions.create`` arguments for a request (without ``timeout``)."""
    kwargs: JSON = {
        "model": request.model,
        "max_tokens": request.max_tokens,
        "messages": chat_messages(request.system, request.messages),
    }
    if request.tools:
        kwargs["tools"] = chat_tools(request.tools)
    if request.tool_choice:
        kwargs["tool_choice"] = chat_tool_choice(request.tool_choice)
    if request.temperature is not None:
        kwargs["temperature"] = request.temperature
    if request.stream:
        kwargs["stream"] = True
        if stream_usage:
            kwargs["stream_options"] = {"include_usage": True}
    return kwargs


def to_response(
    message: Mapping[str, Any], finish: str | None, usage: Mapping[str, Any], model: str
) -> LLMResponse:
    return LLMResponse(
        content=content_blocks(message),
        stop_reason=FINISH_TO_STOP.get(finish, finish) if finish else None,
        model=model,
        usage=LLMUsage(
            input_tokens=int(usage.get("prompt_tokens") or 0),
            output_tokens=int(usage.get("completion_tokens") or 0),
        ),
    )


def completion_response(completion: Mapping[str, Any]) -> LLMResponse:
    """A whole ``chat.completion`` (as JSON) as the product's answer."""
    choices = completion.get("choices") or []
    if not choices:
        raise StreamInterrupted("a completion without a choice")
    first = choices[0]
    return to_response(
        first.get("message") or {},
        first.get("finish_reason"),
        completion.get("usage") or {},
        completion.get("model", ""),
    )


class ChunkReader:
    """The chunks of a streamed completion added up; ``finished`` once a ``finish_reason`` came."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: dict[int, JSON] = {}
        self.finish: str | None = None
        self.usage: Mapping[str, Any] = {}
        self.model = ""

    @property
    def finished(self) -> bool:
        return self.finish is not None

    def add(self, chunk: Mapping[str, Any]) -> None:
        self.model = str(chunk.get("model") or self.model)
        self.usage = chunk.get("usage") or self.usage
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if delta.get("content"):
                self.text.append(str(delta["content"]))
            for call in delta.get("tool_calls") or []:
                slot = self.calls.setdefault(
                    int(call.get("index", 0)), {"id": None, "name": "", "arguments": ""}
                )
                function = call.get("function") or {}
                slot["id"] = call.get("id") or slot["id"]
                slot["name"] = function.get("name") or slot["name"]
                slot["arguments"] += function.get("arguments") or ""
            self.finish = choice.get("finish_reason") or self.finish

    def response(self) -> LLMResponse:
        calls = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for _, c in sorted(self.calls.items())
        ]
        message = {"role": "assistant", "content": "".join(self.text) or None, "tool_calls": calls}
        return to_response(message, self.finish, self.usage, self.model)


def ping_request(base_url: str, api_key: str | None, model: str) -> tuple[str, dict[str, str], JSON]:
    """The health probe's one minimal call, as the SDK sends it: ``max_tokens`` 1 to ``model``
    at ``{base_url}/chat/completions``, the key as a bearer token (``local`` when there is none)."""
    url = base_url.rstrip("/") + "/chat/completions"
    headers = {"Authorization": f"Bearer {api_key or 'local'}", "Content-Type": "application/json"}
    return url, headers, {"model": model, "max_tokens": 1, "messages": [{"role": "user", "content": "ping"}]}


class _PlainFailures:
    """How a plain HTTP probe's failure is described: the status, or the transport error's name
    (content-free, like the SDK path's ``describe``)."""

    @staticmethod
    def describe(exc: BaseException | None) -> str:
        import httpx2

        if isinstance(exc, httpx2.HTTPStatusError):
            return f"{type(exc).__name__} status={exc.response.status_code}"
        return type(exc).__name__ if exc is not None else "none"


def plain_health(base_url: str, api_key: str | None, model: str, timeout: float) -> PeerHealth:
    """``OpenAICompatibleLLM.health`` without the ``openai`` SDK: the same minimal call over plain
    HTTP (``httpx2``, which the LLM SDKs already import). A peer nobody has called yet is probed
    this way, so holding it (and probing it every interval) never imports the SDK (≈ 20 MiB,
    540 modules, in every process that holds the peer). Never raises."""

    def call() -> None:
        import httpx2

        url, headers, body = ping_request(base_url, api_key, model)
        httpx2.post(url, headers=headers, json=body, timeout=timeout).raise_for_status()

    return probe(call, _PlainFailures())
