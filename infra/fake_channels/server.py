"""One HTTP server imitating the reply APIs of ChatWork, LINE, Slack and our HTTP channel.

Routes (base URLs for the clients in brackets)::

    POST /chatwork/v2/rooms/{id}/messages     [CHATWORK_API_BASE = {url}/chatwork/v2]
    POST /line/v2/bot/message/reply           [LINE_API_BASE     = {url}/line]
    POST /line/v2/bot/message/push
    POST /slack/api/chat.postMessage          [SLACK_API_BASE    = {url}/slack/api]
    POST /http/reply                          [CHARTER_HTTP_REPLY_URL = {url}/http/reply]
    GET  /_admin/sent[?channel=line&accepted=1]   every call: channel, path, headers, body, text, status,
                                              duplicate (accepted=1: delivered ones, no repeats)
    POST /_admin/reset                        forget calls and faults
    GET  /_admin/health
    POST /_admin/faults  {"channel": "slack", "status": 429, "times": 2, "retry_after": 0}
                         {"channel": "line", "mode": "expired_reply_token", "times": 1}
                         {"channel": "slack", "slack_error": "channel_not_found"}
                         {"channel": "chatwork", "mode": "drop"}   (close without answering)

The fakes check what the real APIs check and the clients could get wrong: a token is
present, LINE gets at most 5 messages of at most 5,000 characters and a reply token,
a LINE push retry key is not reused (409 like LINE), Slack's ``text`` is at most 40,000.
Our HTTP channel's receiver honours ``Idempotency-Key`` as its contract says: a key it already
accepted is answered with the first answer and recorded ``duplicate: true`` (delivered once; a
responder that died between the send and its receipt sends again under the same key).
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import count
from typing import Any
from urllib.parse import parse_qs, urlsplit

JSON = dict[str, Any]
_ROUTES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^/chatwork/v2/rooms/[^/]+/messages$"), "chatwork"),
    (re.compile(r"^/line/v2/bot/message/(?:reply|push)$"), "line"),
    (re.compile(r"^/slack/api/chat\.postMessage$"), "slack"),
    (re.compile(r"^/http/reply$"), "http"),
]
LINE_MAX_MESSAGES, LINE_MAX_TEXT, SLACK_MAX_TEXT = 5, 5000, 40000


@dataclass
class Fault:
    """An injected answer for the next ``times`` calls of ``channel``."""

    channel: str
    status: int = 500
    times: int = 1
    retry_after: float | None = None
    mode: str | None = None  # "expired_reply_token" (LINE reply only) or "drop"
    slack_error: str | None = None

    def applies(self, path: str) -> bool:
        return self.mode != "expired_reply_token" or path.endswith("/reply")


@dataclass
class _State:
    lock: threading.Lock = field(default_factory=threading.Lock)
    calls: list[JSON] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    retry_keys: set[str] = field(default_factory=set)
    # the HTTP channel's accepted Idempotency-Keys and what each was first answered
    accepted_keys: dict[str, JSON] = field(default_factory=dict)
    ids: count[int] = field(default_factory=lambda: count(1))

    def take_fault(self, channel: str, path: str) -> Fault | None:
        with self.lock:
            for fault in self.faults:
                if fault.channel == channel and fault.times > 0 and fault.applies(path):
                    fault.times -= 1
                    return fault
        return None


def _texts(channel: str, body: Any) -> list[str]:
    if not isinstance(body, dict):
        return []
    if channel == "chatwork":
        return [str(v) for v in body.get("body", [])]
    if channel == "line":
        return [str(m.get("text", "")) for m in body.get("messages", []) if isinstance(m, dict)]
    return [str(body["text"])] if "text" in body else []


def _line_problem(path: str, body: Any, headers: dict[str, str], state: _State) -> tuple[int, JSON] | None:
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list) or not 1 <= len(messages) <= LINE_MAX_MESSAGES:
        return 400, {"message": "The request body has 1 error(s)", "details": [{"property": "messages"}]}
    if any(len(str(m.get("text", ""))) > LINE_MAX_TEXT for m in messages if isinstance(m, dict)):
        return 400, {"message": "The request body has 1 error(s)", "details": [{"property": "messages.text"}]}
    if path.endswith("/reply") and not body.get("replyToken"):
        return 400, {"message": "Invalid reply token"}
    if path.endswith("/push"):
        key = headers.get("x-line-retry-key")
        with state.lock:
            if key and key in state.retry_keys:
                return 409, {"message": "The retry key is already accepted"}
            if key:
                state.retry_keys.add(key)
    return None


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read /_admin/sent
        return

    def _answer(self, status: int, body: JSON | list[JSON], headers: dict[str, str] | None = None) -> None:
        raw = json.dumps(body, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path == "/_admin/health":
            self._answer(200, {"ok": True})
        elif url.path == "/_admin/sent":
            query = parse_qs(url.query)
            self._answer(
                200,
                self.server.fake.sent(
                    query.get("channel", [None])[0],
                    accepted_only=query.get("accepted", ["0"])[0] == "1",
                    since=int(query.get("since", ["0"])[0] or 0),
                ),
            )
        else:
            self._answer(404, {"error": "not_found"})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = urlsplit(self.path).path
        if path == "/_admin/reset":
            self.server.fake.reset()
            self._answer(200, {"ok": True})
        elif path == "/_admin/faults":
            try:
                self.server.fake.add_fault(**json.loads(raw))
            except (ValueError, TypeError) as exc:
                self._answer(400, {"error": str(exc)})
            else:
                self._answer(200, {"ok": True})
        else:
            channel = next((name for pattern, name in _ROUTES if pattern.match(path)), None)
            if channel is None:
                self._answer(404, {"error": "not_found"})
            else:
                self._provider(channel, path, raw)

    def _provider(self, channel: str, path: str, raw: bytes) -> None:
        state = self.server.state
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            body: Any = parse_qs(raw.decode()) if channel == "chatwork" else json.loads(raw or b"null")
        except ValueError:
            body = raw.decode("utf-8", "replace")
        fault = state.take_fault(channel, path)
        if fault is not None and fault.mode == "drop":
            self.close_connection = True
            self._record(channel, path, headers, body, 0)
            return
        key = headers.get("idempotency-key", "") if channel == "http" and fault is None else ""
        with state.lock:
            first = state.accepted_keys.get(key) if key else None
        if first is not None:
            self._record(channel, path, headers, body, 200, duplicate=True)
            self._answer(200, first)
            return
        status, answer, extra = self._outcome(channel, path, headers, body, fault)
        if key and 200 <= status < 300 and isinstance(answer, dict):
            with state.lock:
                state.accepted_keys.setdefault(key, answer)
        self._record(channel, path, headers, body, status)
        self._answer(status, answer, extra)

    def _outcome(
        self, channel: str, path: str, headers: dict[str, str], body: Any, fault: Fault | None
    ) -> tuple[int, JSON, dict[str, str]]:
        state = self.server.state
        if fault is not None:
            extra = {"Retry-After": f"{fault.retry_after:g}"} if fault.retry_after is not None else {}
            if fault.mode == "expired_reply_token":
                return 400, {"message": "Invalid reply token"}, {}
            if fault.slack_error:
                return 200, {"ok": False, "error": fault.slack_error}, extra
            error = "ratelimited" if fault.status == 429 else "internal_error"
            return fault.status, {"ok": False, "error": error, "message": error}, extra
        token = headers.get("x-chatworktoken") if channel == "chatwork" else headers.get("authorization", "")
        if channel != "http" and not (token or "").removeprefix("Bearer ").strip():
            return (200 if channel == "slack" else 401), {"ok": False, "error": "not_authed"}, {}
        if channel == "line":
            problem = _line_problem(path, body, headers, state)
            if problem:
                return problem[0], problem[1], {}
        texts = _texts(channel, body)
        if channel == "slack" and (not texts or len(texts[0]) > SLACK_MAX_TEXT):
            return 200, {"ok": False, "error": "msg_too_long" if texts else "no_text"}, {}
        number = next(state.ids)
        answers: dict[str, JSON] = {
            "chatwork": {"message_id": str(1_000_000 + number)},
            "line": {
                "sentMessages": [
                    {"id": str(5_000_000 + number + i), "quoteToken": f"q{number}-{i}"}
                    for i in range(len(texts))
                ]
            },
            "slack": {
                "ok": True,
                "channel": body.get("channel") if isinstance(body, dict) else None,
                "ts": f"1700000000.{number:06d}",
            },
            "http": {"ok": True, "message_id": f"http-{number}"},
        }
        return 200, answers[channel], {}

    def _record(
        self,
        channel: str,
        path: str,
        headers: dict[str, str],
        body: Any,
        status: int,
        duplicate: bool = False,
    ) -> None:
        texts = _texts(channel, body)
        call = {
            "duplicate": duplicate,
            "channel": channel,
            "method": "POST",
            "path": path,
            "headers": headers,
            "body": body,
            "text": "\n".join(texts),
            "texts": texts,
            "status": status,
            "at": datetime.now(UTC).isoformat(),
        }
        with self.server.state.lock:
            self.server.state.calls.append(call)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], fake: FakeChannelServer) -> None:
        super().__init__(address, _Handler)
        self.fake = fake
        self.state = fake.state


class FakeChannelServer:
    """In-process fake of the four reply APIs on 127.0.0.1 (port 0: any free port).

    >>> with FakeChannelServer() as fake:
    ...     sorted(fake.env())
    ['CHARTER_HTTP_REPLY_URL', 'CHATWORK_API_BASE', 'LINE_API_BASE', 'SLACK_API_BASE']
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.state = _State()
        self._address = (host, port)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> FakeChannelServer:
        self._server = _Server(self._address, self)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-channels",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeChannelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("FakeChannelServer is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def env(self) -> dict[str, str]:
        """The base-URL variables that point the reply clients at this server."""
        return {
            "CHATWORK_API_BASE": f"{self.url}/chatwork/v2",
            "LINE_API_BASE": f"{self.url}/line",
            "SLACK_API_BASE": f"{self.url}/slack/api",
            "CHARTER_HTTP_REPLY_URL": f"{self.url}/http/reply",
        }

    def sent(self, channel: str | None = None, *, accepted_only: bool = False, since: int = 0) -> list[JSON]:
        """Recorded calls, oldest first (``accepted_only``: those answered 2xx); ``since``: only
        those after the first ``since`` of that selection (it only grows: a poller that keeps what
        it read asks for the rest, ``/_admin/sent?since=N``)."""
        with self.state.lock:
            calls = list(self.state.calls)
        chosen = [
            c
            for c in calls
            if (channel is None or c["channel"] == channel)
            and (not accepted_only or (200 <= c["status"] < 300 and not c.get("duplicate")))
        ]
        return [dict(c) for c in chosen[max(since, 0) :]]

    def reset(self) -> None:
        with self.state.lock:
            self.state.calls.clear()
            self.state.faults.clear()
            self.state.retry_keys.clear()
            self.state.accepted_keys.clear()

    def add_fault(
        self,
        channel: str,
        status: int = 500,
        times: int = 1,
        retry_after: float | None = None,
        mode: str | None = None,
        slack_error: str | None = None,
    ) -> None:
        """Answer the next ``times`` calls of ``channel`` with an error (see the module doc)."""
        if channel not in ("chatwork", "line", "slack", "http"):
            raise ValueError(f"unknown channel {channel!r}")
        if mode not in (None, "expired_reply_token", "drop"):
            raise ValueError(f"unknown mode {mode!r}")
        with self.state.lock:
            self.state.faults.append(Fault(channel, int(status), int(times), retry_after, mode, slack_error))
