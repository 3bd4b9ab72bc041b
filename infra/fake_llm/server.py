"""A fake Anthropic Messages API server, faithful enough on the wire for the real ``anthropic`` SDK.

``FakeAnthropicServer`` serves ``POST /v1/messages`` (JSON or SSE streaming, HTTP/1.1 with
chunked transfer encoding like the real API), ``POST /v1/messages/count_tokens`` and a few
admin endpoints for out-of-process use (``/_admin/requests``, ``/_admin/reset``,
``/_admin/scenario``, ``/_admin/health``). Answers come from a :class:`Scenario` (rules and
faults), else from the scripted model. Usage is estimated deterministically, including
prompt caching (``cache_control`` breakpoints).

>>> with FakeAnthropicServer() as server:
...     server.url.startswith("http://127.0.0.1:")
True
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import secrets
import socket
import string
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self, TypedDict

from infra.fake_llm import scripted, vertex
from infra.fake_llm.scenario import (
    JSON,
    Fault,
    MessagesRequest,
    Reply,
    Scenario,
    ScenarioEngine,
    ScenarioError,
)
from infra.fake_llm.sse import canonical as _canonical
from infra.fake_llm.sse import compact as _compact
from infra.fake_llm.sse import sse_frame, stream_events

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
_ID_ALPHABET = string.ascii_letters + string.digits
Rewrite = Callable[[Any], tuple[Any, "str | None"]]  # a body → (the Messages body, a 400 problem)


class RecordedRequest(TypedDict):
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    time: float


def new_id(prefix: str) -> str:
    """An id shaped like the real ones, e.g. ``msg_01Xk...`` or ``toolu_01...``."""
    return prefix + "_01" + "".join(secrets.choice(_ID_ALPHABET) for _ in range(22))


def error_type_for(status: int) -> str:
    return ERROR_TYPES.get(status) or ("api_error" if status >= 500 else "invalid_request_error")


def error_body(status: int, message: str, error_type: str | None = None) -> JSON:
    """The Anthropic error JSON: ``{"type": "error", "error": {"type": ..., "message": ...}}``."""
    return {"type": "error", "error": {"type": error_type or error_type_for(status), "message": message}}


# --------------------------------------------------------------------------- token accounting


def estimate_tokens(text: str) -> int:
    """Deterministic token estimate: one token per 4 characters, rounded up, at least 1."""
    return max(1, math.ceil(len(text) / 4))


def _without_cache_control(block: Mapping[str, Any]) -> JSON:
    return {key: value for key, value in block.items() if key != "cache_control"}


def _is_marked(block: Any) -> bool:
    marker = block.get("cache_control") if isinstance(block, Mapping) else None
    return isinstance(marker, Mapping) and marker.get("type") == "ephemeral"


@dataclass(frozen=True)
class Segment:
    """One unit of the prompt in API order (a tool, a system block, a message block)."""

    key: str
    tokens: int
    marked: bool


def _tool_segment(tool: Mapping[str, Any]) -> Segment:
    text = _canonical(_without_cache_control(tool))
    return Segment(f"tool:{text}", estimate_tokens(text), _is_marked(tool))


def _block_segment(role: str, block: Any) -> Segment:
    if isinstance(block, Mapping) and block.get("type") == "text":
        text = str(block.get("text", ""))
    else:
        text = _canonical(_without_cache_control(block) if isinstance(block, Mapping) else block)
    return Segment(f"{role}:{text}", estimate_tokens(text), _is_marked(block))


def prompt_segments(body: Mapping[str, Any]) -> list[Segment]:
    """The prompt as segments, in the real API's cache order: tools, then system, then messages."""
    segments = [_tool_segment(tool) for tool in body.get("tools") or [] if isinstance(tool, Mapping)]
    system = body.get("system")
    blocks = [{"type": "text", "text": system}] if isinstance(system, str) and system else system or []
    segments += [_block_segment("system", block) for block in blocks]
    for message in body.get("messages") or []:
        content = message.get("content", "") if isinstance(message, Mapping) else ""
        role = str(message.get("role", "")) if isinstance(message, Mapping) else ""
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
        segments += [_block_segment(role, block) for block in parts or []]
    if _is_marked(body) and segments:  # top-level cache_control: automatic breakpoint on the last block
        segments[-1] = Segment(segments[-1].key, segments[-1].tokens, True)
    return segments


@dataclass(frozen=True)
class InputUsage:
    input_tokens: int
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0


class PromptCache:
    """Remembers hashed cache prefixes (per model) to split input tokens into created / read / uncached."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: set[str] = set()

    def reset(self) -> None:
        with self._lock:
            self._seen.clear()

    def account(self, body: Mapping[str, Any]) -> InputUsage:
        segments = prompt_segments(body)
        total = sum(segment.tokens for segment in segments)
        breakpoints = self._breakpoints(str(body.get("model", "")), segments)
        if not breakpoints:
            return InputUsage(input_tokens=total)
        with self._lock:
            read = max((tokens for digest, tokens in breakpoints if digest in self._seen), default=0)
            last_digest, last_tokens = breakpoints[-1]
            created = 0 if last_digest in self._seen else last_tokens - read
            self._seen.update(digest for digest, _ in breakpoints)
        return InputUsage(total - read - created, created, read)

    @staticmethod
    def _breakpoints(model: str, segments: list[Segment]) -> list[tuple[str, int]]:
        """(prefix hash, prefix tokens) for each segment marked with cache_control."""
        digest = hashlib.sha256(model.encode())
        tokens, found = 0, []
        for segment in segments:
            digest.update(hashlib.sha256(segment.key.encode()).digest())
            tokens += segment.tokens
            if segment.marked:
                found.append((digest.hexdigest(), tokens))
        return found


def output_tokens(content: list[JSON]) -> int:
    text = "".join(
        str(b.get("text", ""))
        if b.get("type") == "text"
        else str(b.get("name", "")) + _canonical(b.get("input", {}))
        for b in content
    )
    return estimate_tokens(text)


# --------------------------------------------------------------------------- request validation


def validate_messages_body(body: Any, *, count_only: bool = False) -> str | None:
    """The first problem the real API would report for this body (400), or None."""
    if not isinstance(body, Mapping):
        return "request body must be a JSON object"
    required = ("model", "messages") if count_only else ("model", "max_tokens", "messages")
    for key in required:
        if key not in body:
            return f"{key}: Field required"
    if not isinstance(body["model"], str) or not body["model"]:
        return "model: Input should be a non-empty string"
    if not count_only and (not isinstance(body["max_tokens"], int) or body["max_tokens"] < 1):
        return "max_tokens: Input should be a positive integer"
    if not isinstance(body.get("system", ""), (str, list)):
        return "system: Input should be a valid string or a list of text blocks"
    if not isinstance(body.get("tools", []), list):
        return "tools: Input should be a valid list"
    return _validate_messages(body["messages"])


def _validate_messages(messages: Any) -> str | None:
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping) or message.get("role") not in ("user", "assistant"):
            return f"messages.{index}.role: Input should be 'user' or 'assistant'"
        if not isinstance(message.get("content"), (str, list)):
            return f"messages.{index}.content: Field required"
    last = MessagesRequest({"messages": messages}).prefill_text()
    if last is not None and last != last.rstrip():
        return "messages: final assistant content cannot end with trailing whitespace"
    return None


# --------------------------------------------------------------------------- message building


def apply_stop_sequences(reply: Reply, stop_sequences: Any) -> Reply:
    """Cut the reply at the first requested stop sequence found in a text block (as the model would)."""
    sequences = [s for s in stop_sequences or [] if isinstance(s, str) and s]
    for index, block in enumerate(reply.content):
        text = str(block.get("text", "")) if block.get("type") == "text" else ""
        hits = [(text.find(s), s) for s in sequences if s in text]
        if hits:
            position, sequence = min(hits)
            content = [*reply.content[:index], {"type": "text", "text": text[:position]}]
            return Reply(
                content=content, stop_reason="stop_sequence", stop_sequence=sequence, usage=reply.usage
            )
    return reply


def build_message(reply: Reply, body: Mapping[str, Any], usage: InputUsage) -> JSON:
    """The wire Message object for a reply."""
    reply = apply_stop_sequences(reply, body.get("stop_sequences"))
    content = [
        {"id": new_id("toolu"), **block}
        if block.get("type") == "tool_use" and not block.get("id")
        else dict(block)
        for block in reply.content
    ]
    stop_reason = reply.resolved_stop_reason()
    produced = int(body["max_tokens"]) if stop_reason == "max_tokens" else output_tokens(content)
    return {
        "id": new_id("msg"),
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": reply.stop_sequence,
        "usage": {
            "input_tokens": usage.input_tokens,
            "cache_creation_input_tokens": usage.cache_creation_input_tokens,
            "cache_read_input_tokens": usage.cache_read_input_tokens,
            "output_tokens": produced,
            **reply.usage,
        },
    }


# --------------------------------------------------------------------------- the server


class FakeAnthropicServer:
    """The fake API on ``127.0.0.1``; ``start()`` serves it from a daemon thread.

    ``port=0`` picks a free port; read it back from ``url`` / ``port`` after ``start()``.
    """

    def __init__(self, scenario: Scenario | None = None, port: int = 0) -> None:
        self._engine = ScenarioEngine(scenario or Scenario(), fallback=scripted.answer)
        self._cache = PromptCache()
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._connections: set[socket.socket] = set()
        self._stopping = threading.Event()
        self._requested_port = port
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle

    def _handler(self) -> type[MessagesHandler]:
        """The request handler class (the fake OpenAI-compatible server serves another)."""
        return MessagesHandler

    def start(self) -> Self:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        self._httpd = _HTTPServer((HOST, self._requested_port), self._handler(), app=self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-anthropic",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            _shutdown_quietly(connection)
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server is not started")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    # -- state

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every non-admin request received since the last reset, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def scenario(self) -> Scenario:
        return self._engine.scenario

    def set_scenario(self, scenario: Scenario) -> None:
        self._engine.set_scenario(scenario)

    def reset(self) -> None:
        """Forget recorded requests, the call count, fault counters, continuations and the prompt cache."""
        with self._lock:
            self._requests.clear()
        self._engine.reset()
        self._cache.reset()

    # -- used by the handler

    def record(self, entry: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(entry)

    def track(self, connection: socket.socket, opened: bool) -> None:
        with self._lock:
            if opened:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def wait_interrupted(self, seconds: float) -> bool:
        """Sleep ``seconds``; True if the server was stopped meanwhile."""
        return self._stopping.wait(seconds)

    @property
    def engine(self) -> ScenarioEngine:
        return self._engine

    @property
    def cache(self) -> PromptCache:
        return self._cache


def _has_credentials(api_key: str | None, authorization: str | None) -> bool:
    """A non-empty ``x-api-key``, or ``Authorization: Bearer <key>`` (what anthropic SDK 2.x sends)."""
    if (api_key or "").strip():
        return True
    scheme, _, token = (authorization or "").partition(" ")
    return scheme.lower() == "bearer" and bool(token.strip())


def _shutdown_quietly(connection: socket.socket) -> None:
    with contextlib.suppress(OSError):
        connection.shutdown(socket.SHUT_RDWR)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], app: FakeAnthropicServer
    ) -> None:
        self.app = app
        super().__init__(address, handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Connections dropped by clients (timeouts, cancelled streams) are normal here: log quietly."""
        error = sys.exc_info()[1]
        if isinstance(error, OSError):
            log.debug("fake-anthropic: connection from %s dropped: %r", client_address, error)
            return
        super().handle_error(request, client_address)


class MessagesHandler(BaseHTTPRequestHandler):
    """One HTTP/1.1 connection (keep-alive like the real API); routes to the endpoints.

    A subclass serves another API by overriding ``routes``, ``send_error_json`` and
    ``send_message`` (``infra.fake_openai``)."""

    protocol_version = "HTTP/1.1"
    server_version = "fake-anthropic"
    timeout = 60
    server: _HTTPServer

    # -- plumbing

    def setup(self) -> None:
        super().setup()
        self.server.app.track(self.connection, opened=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.app.track(self.connection, opened=False)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("fake-anthropic: " + format, *args)

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def _dispatch(self) -> None:
        try:
            raw = self._read_body()
            route = self.routes().get((self.command, self.path.split("?", 1)[0]))
            if route is not None:
                route(self, raw)
            elif self.command == "POST" and (found := vertex.vertex_route(self.path)) is not None:
                self._messages(raw, lambda body: vertex.messages_body(body, found))
            else:
                self._record(raw)
                self.send_error_json(404, f"Not Found: {self.command} {self.path}")
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            self.close_connection = True

    def routes(self) -> Mapping[tuple[str, str], Callable[[Any, bytes], None]]:
        return _ROUTES

    def send_error_json(
        self, status: int, message: str, error_type: str | None = None, **headers: str
    ) -> None:
        self._send_json(status, error_body(status, message, error_type), headers)

    def _read_body(self) -> bytes:
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _record(self, raw: bytes) -> Any:
        try:
            body = json.loads(raw) if raw else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = raw.decode("utf-8", "replace")
        self.server.app.record(
            RecordedRequest(
                method=self.command,
                path=self.path,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
                time=time.time(),
            )
        )
        return body

    def _send_json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        data = _compact(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", new_id("req"))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    # -- API endpoints

    def _checked_request(
        self, raw: bytes, *, count_only: bool = False, rewrite: Rewrite | None = None
    ) -> MessagesRequest | None:
        """Record, authenticate and validate (after ``rewrite``, e.g. from Vertex's body); None
        once an error response has been sent."""
        body = self._record(raw)
        if not _has_credentials(self.headers.get("x-api-key"), self.headers.get("authorization")):
            self.send_error_json(401, "x-api-key header (or Authorization: Bearer) is required")
            return None
        body, problem = rewrite(body) if rewrite is not None else (body, None)
        problem = problem or validate_messages_body(body, count_only=count_only)
        if problem is not None:
            self.send_error_json(400, problem)
            return None
        return MessagesRequest(body)

    def _messages(self, raw: bytes, rewrite: Rewrite | None = None) -> None:
        request = self._checked_request(raw, rewrite=rewrite)
        if request is None:
            return
        app = self.server.app
        decision = app.engine.decide(request)
        if decision.delay and app.wait_interrupted(decision.delay):
            self.close_connection = True
            return
        if decision.error is not None:
            self._send_fault(decision.error)
            return
        if decision.reply is None:
            raise RuntimeError("a scenario decision has neither an error nor a reply")
        message = build_message(decision.reply, request.body, app.cache.account(request.body))
        self.send_message(message, request.stream, decision.cut_after_blocks)

    def send_message(self, message: JSON, stream: bool, cut_after_blocks: int | None) -> None:
        """Send the answer (a wire Message): as JSON, or as SSE cut after ``cut_after_blocks``."""
        if stream:
            self._send_stream(message, cut_after_blocks)
        else:
            self._send_json(200, message)

    def _count_tokens(self, raw: bytes) -> None:
        request = self._checked_request(raw, count_only=True)
        if request is not None:
            total = sum(segment.tokens for segment in prompt_segments(request.body))
            self._send_json(200, {"input_tokens": total})

    def _send_fault(self, fault: Fault) -> None:
        headers = {} if fault.retry_after is None else {"retry-after": f"{fault.retry_after:g}"}
        message = fault.message or f"fake-anthropic injected fault (HTTP {fault.status})"
        self.send_error_json(fault.status, message, fault.error_type, **headers)

    def _send_stream(self, message: JSON, cut_after_blocks: int | None) -> None:
        events, complete = stream_events(message, cut_after_blocks)
        self.send_sse([sse_frame(name, data) for name, data in events], complete)

    def send_sse(self, frames: list[bytes], complete: bool) -> None:
        """A chunked ``text/event-stream``; when not ``complete`` the connection drops mid-body."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", new_id("req"))
        self.end_headers()
        for frame in frames:
            self._write_chunk(frame)
        if complete:
            self.wfile.write(b"0\r\n\r\n")
        else:  # drop the connection mid-body: no terminating chunk, like a network failure
            self.close_connection = True

    # -- admin endpoints

    def _admin_health(self, raw: bytes) -> None:
        self._send_json(200, {"ok": True})

    def _admin_requests(self, raw: bytes) -> None:
        self._send_json(200, self.server.app.requests)

    def _admin_reset(self, raw: bytes) -> None:
        self.server.app.reset()
        self._send_json(200, {"ok": True})

    def _admin_scenario(self, raw: bytes) -> None:
        try:
            scenario = Scenario.from_text(raw.decode("utf-8"))
        except (ScenarioError, UnicodeDecodeError) as err:
            self.send_error_json(400, str(err))
            return
        self.server.app.set_scenario(scenario)
        summary = {"ok": True, "rules": len(scenario.rules), "has_default": scenario.default is not None}
        self._send_json(200, summary)


ADMIN_ROUTES: dict[tuple[str, str], Callable[[Any, bytes], None]] = {
    ("GET", "/_admin/health"): MessagesHandler._admin_health,
    ("GET", "/_admin/requests"): MessagesHandler._admin_requests,
    ("POST", "/_admin/reset"): MessagesHandler._admin_reset,
    ("POST", "/_admin/scenario"): MessagesHandler._admin_scenario,
}
_ROUTES = {
    ("POST", "/v1/messages"): MessagesHandler._messages,
    ("POST", "/v1/messages/count_tokens"): MessagesHandler._count_tokens,
    **ADMIN_ROUTES,
}
