"""A fake OpenAI-compatible server (vLLM, Ollama, LM Studio), faithful enough on the wire for
the real ``openai`` SDK: the fake Anthropic server with another handler.

``POST /v1/chat/completions`` (JSON, or SSE ``data: {chunk}`` … ``data: [DONE]`` with
``tool_calls`` deltas), ``GET /v1/models`` and the same ``/_admin/…`` endpoints. Answers come
from the same scenario engine and scripted model as ``infra.fake_llm`` (so the product's
proposal call gets a ``submit_proposal`` tool call), faults included.

>>> with FakeOpenAIServer() as server:
...     server.url.startswith("http://127.0.0.1:")
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from infra.fake_llm.scenario import JSON
from infra.fake_llm.server import ADMIN_ROUTES, FakeAnthropicServer, MessagesHandler
from infra.fake_llm.sse import compact
from infra.fake_openai import wire


class FakeOpenAIServer(FakeAnthropicServer):
    """The fake chat completions API on ``127.0.0.1`` (``port=0``: a free port)."""

    def _handler(self) -> type[MessagesHandler]:
        return ChatHandler


class ChatHandler(MessagesHandler):
    server_version = "fake-openai"
    _include_usage = False  # the request asked for the usage chunk (stream_options.include_usage)

    def routes(self) -> Mapping[tuple[str, str], Callable[[Any, bytes], None]]:
        return _ROUTES

    def send_error_json(
        self, status: int, message: str, error_type: str | None = None, **headers: str
    ) -> None:
        self._send_json(
            status, wire.error_body(status, message.replace("fake-anthropic", "fake-openai")), headers
        )

    def _chat(self, raw: bytes) -> None:
        self._include_usage = False
        self._messages(raw, self._rewrite)

    def _rewrite(self, body: Any) -> tuple[Any, str | None]:
        options = body.get("stream_options") if isinstance(body, Mapping) else None
        self._include_usage = bool(isinstance(options, Mapping) and options.get("include_usage"))
        return wire.messages_body(body)

    def send_message(self, message: JSON, stream: bool, cut_after_blocks: int | None) -> None:
        if not stream:
            self._send_json(200, wire.completion(message))
            return
        chunks, complete = wire.chunks(message, cut_after_blocks, self._include_usage)
        frames = [f"data: {compact(chunk)}\n\n".encode() for chunk in chunks]
        self.send_sse([*frames, b"data: [DONE]\n\n"] if complete else frames, complete)

    def _models(self, raw: bytes) -> None:
        self._record(raw)
        model = {"id": "fake-model", "object": "model", "created": 0, "owned_by": "fake-openai"}
        self._send_json(200, {"object": "list", "data": [model]})


_ROUTES: dict[tuple[str, str], Callable[[Any, bytes], None]] = {
    ("POST", "/v1/chat/completions"): ChatHandler._chat,
    ("GET", "/v1/models"): ChatHandler._models,
    **ADMIN_ROUTES,
}
