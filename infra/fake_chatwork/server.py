"""A fake of ChatWork's *task* REST API (v2) that records every call.

Routes (``CHATWORK_TASKS_API_BASE = {url}/v2``; an extra leading segment such as
``/chatwork/v2/...`` is accepted too, so it can sit behind the channel fake's prefix)::

    GET  /v2/rooms/{room_id}/tasks[?account_id=&assigned_by_account_id=&status=open|done]
         200 JSON list, or 204 with no body when there is none (as ChatWork does)
    POST /v2/rooms/{room_id}/tasks       form body, to_ids (comma-separated integers),
                                         limit (unix time), limit_type none|date|time
         200 {"task_ids": [...]}
    GET  /v2/rooms/{room_id}/tasks/{task_id}
    PUT  /v2/rooms/{room_id}/tasks/{task_id}/status   form body=done|open -> {"task_id": n}
    GET  /_admin/calls        every call (method, path, query, form, token_ok, status), oldest first
    POST /_admin/reset        forget calls, tasks and faults
    POST /_admin/faults       {"status": 429, "times": 2, "method": "POST", "retry_after": 0}
                              {"status": 500, "after_effect": true}   (do the work, then fail)
                              {"status": 0, "after_effect": true}     (do the work, drop the answer)
    POST /_admin/tasks        {"room_id": "1", "body": "...", "account_id": 12}  (seed a task)
    GET  /_admin/health

Like ChatWork it checks ``X-ChatWorkToken`` (401), the form (400) and the room's task
(404). 429 answers carry ``x-ratelimit-reset``.

>>> with FakeChatWorkServer() as fake:
...     fake.url.startswith("http://127.0.0.1:")
True
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

JSON = dict[str, Any]
HOST = "127.0.0.1"
DEFAULT_TOKEN = "fake-chatwork-token"
_TASKS = re.compile(r"^(?:/[^/]+)?/v2/rooms/(?P<room>[^/]+)/tasks(?:/(?P<task>\d+)(?P<status>/status)?)?$")
_DROP = object()  # answer: close the connection without a response


@dataclass
class Fault:
    """The answer for the next ``times`` matching calls (``status`` 0 drops the connection)."""

    status: int = 500
    times: int = 1
    method: str | None = None
    after_effect: bool = False
    retry_after: float | None = None

    def matches(self, method: str) -> bool:
        return self.times > 0 and (self.method is None or self.method == method)


@dataclass
class Reply:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


def _error(status: int, message: str) -> Reply:
    return Reply(status, {"errors": [message]})


class ChatWorkTasksApp:
    """The API's state and logic, independent of HTTP (the server below, or another fake)."""

    def __init__(
        self,
        token: str | None = DEFAULT_TOKEN,
        *,
        me_account_id: int = 1000,
        accounts: dict[int, str] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.token = token
        self.me_account_id = me_account_id
        self.accounts = dict(accounts or {})
        self._clock = clock
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self._rooms: dict[str, dict[int, JSON]] = {}
            self._calls: list[JSON] = []
            self._faults: list[Fault] = []
            self._next_id = 1

    # -- test and admin surface ---------------------------------------------------------
    def calls(self, method: str | None = None) -> list[JSON]:
        with self._lock:
            return [dict(c) for c in self._calls if method is None or c["method"] == method]

    def creates(self) -> list[JSON]:
        """Accepted task creations (POST answered 200, or done before an injected failure)."""
        return [c for c in self.calls("POST") if c.get("effect")]

    def tasks(self, room_id: str) -> list[JSON]:
        with self._lock:
            return [dict(t) for t in self._rooms.get(room_id, {}).values()]

    def inject(self, fault: Fault) -> None:
        with self._lock:
            self._faults.append(fault)

    def transport(self) -> httpx.MockTransport:
        """This app as an in-process ``httpx`` transport (no socket): a peer of the server."""

        def handler(request: httpx.Request) -> httpx.Response:
            form = {k: v[-1] for k, v in parse_qs(request.content.decode("utf-8", "replace")).items()}
            query = {k: v[-1] for k, v in parse_qs(request.url.query.decode()).items()}
            headers = {k.lower(): v for k, v in request.headers.items()}
            reply = self.handle(request.method, request.url.path, query, form, headers)
            if not isinstance(reply, Reply):
                raise httpx.RemoteProtocolError(
                    "server disconnected without sending a response", request=request
                )
            content = b"" if reply.body is None else json.dumps(reply.body, ensure_ascii=False).encode()
            return httpx.Response(reply.status, headers=reply.headers, content=content)

        return httpx.MockTransport(handler)

    def add_task(
        self,
        room_id: str,
        body: str,
        account_id: int,
        *,
        limit: int = 0,
        limit_type: str = "none",
        status: str = "open",
    ) -> int:
        with self._lock:
            return self._create(room_id, body, account_id, limit, limit_type, status)

    # -- the API ---------------------------------------------------------------------------
    def handle(
        self, method: str, path: str, query: dict[str, str], form: dict[str, str], headers: dict[str, str]
    ) -> Reply | object:
        token_ok = self.token is None or headers.get("x-chatworktoken") == self.token
        with self._lock:
            call: JSON = {
                "method": method,
                "path": path,
                "query": dict(query),
                "form": dict(form),
                "token_ok": token_ok,
                "at": self._clock(),
            }
            self._calls.append(call)
            fault = next((f for f in self._faults if f.matches(method)), None)
            if fault is not None:
                fault.times -= 1
            if fault is not None and not fault.after_effect:
                reply: Reply | object = self._fault_reply(fault)
            else:
                reply = (
                    self._route(method, path, query, form) if token_ok else _error(401, "Invalid API token")
                )
                call["effect"] = method == "POST" and isinstance(reply, Reply) and reply.status == 200
                if fault is not None:
                    reply = self._fault_reply(fault)
            call["status"] = reply.status if isinstance(reply, Reply) else 0
            return reply

    def _fault_reply(self, fault: Fault) -> Reply | object:
        if fault.status == 0:
            return _DROP
        reply = _error(fault.status, f"injected {fault.status}")
        if fault.status == 429:
            wait = fault.retry_after if fault.retry_after is not None else 0
            reply.headers = {
                "x-ratelimit-limit": "300",
                "x-ratelimit-remaining": "0",
                "x-ratelimit-reset": str(int(self._clock() + wait)),
            }
        return reply

    def _route(self, method: str, path: str, query: dict[str, str], form: dict[str, str]) -> Reply:
        m = _TASKS.match(path)
        if m is None:
            return _error(404, "Not Found")
        room, task, status = m.group("room"), m.group("task"), m.group("status")
        if task is None and method == "GET":
            return self._list(room, query)
        if task is None and method == "POST":
            return self._post(room, form)
        if task is not None and status is None and method == "GET":
            found = self._rooms.get(room, {}).get(int(task))
            return Reply(200, self._render(found)) if found else _error(404, "Task not found")
        if task is not None and status is not None and method == "PUT":
            return self._put_status(room, int(task), form)
        return _error(405, "Method Not Allowed")

    def _create(self, room: str, body: str, account_id: int, limit: int, limit_type: str, status: str) -> int:
        task_id = self._next_id
        self._next_id += 1
        self._rooms.setdefault(room, {})[task_id] = {
            "task_id": task_id,
            "room_id": room,
            "account_id": account_id,
            "body": body,
            "limit_time": limit,
            "limit_type": limit_type,
            "status": status,
            "assigned_by": self.me_account_id,
        }
        return task_id

    def _render(self, t: JSON) -> JSON:
        def account(aid: int) -> JSON:
            return {
                "account_id": aid,
                "name": self.accounts.get(aid, f"user{aid}"),
                "avatar_image_url": f"https://example.invalid/avatar/{aid}.png",
            }

        return {
            "task_id": t["task_id"],
            "account": account(t["account_id"]),
            "assigned_by_account": account(t["assigned_by"]),
            "message_id": str(1000 + t["task_id"]),
            "body": t["body"],
            "limit_time": t["limit_time"],
            "status": t["status"],
            "limit_type": t["limit_type"],
        }

    def _list(self, room: str, query: dict[str, str]) -> Reply:
        if query.get("status") not in (None, "open", "done"):
            return _error(400, "Invalid status")
        tasks = [
            t
            for t in self._rooms.get(room, {}).values()
            if (not query.get("status") or t["status"] == query["status"])
            and (not query.get("account_id") or str(t["account_id"]) == query["account_id"])
            and (
                not query.get("assigned_by_account_id")
                or str(t["assigned_by"]) == query["assigned_by_account_id"]
            )
        ]
        if not tasks:
            return Reply(204)
        return Reply(200, [self._render(t) for t in tasks])

    def _post(self, room: str, form: dict[str, str]) -> Reply:
        body, to_ids = form.get("body", ""), form.get("to_ids", "")
        limit_type = form.get("limit_type", "none")
        if not body.strip():
            return _error(400, "Parameter [body] is required")
        if not re.fullmatch(r"\d+(,\d+)*", to_ids):
            return _error(400, "Parameter [to_ids] must be a list of account ids")
        if limit_type not in ("none", "date", "time"):
            return _error(400, "Invalid limit_type")
        limit = form.get("limit", "0")
        if not limit.isdigit():
            return _error(400, "Parameter [limit] must be a unix time")
        ids = [
            self._create(room, body, int(aid), int(limit), limit_type, "open") for aid in to_ids.split(",")
        ]
        return Reply(200, {"task_ids": ids})

    def _put_status(self, room: str, task_id: int, form: dict[str, str]) -> Reply:
        if form.get("body") not in ("done", "open"):
            return _error(400, "Parameter [body] must be done or open")
        found = self._rooms.get(room, {}).get(task_id)
        if found is None:
            return _error(404, "Task not found")
        found["status"] = form["body"]
        return Reply(200, {"task_id": task_id})


def _handler_class(app: ChatWorkTasksApp) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            return

        def _body(self) -> bytes:
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def _send(self, reply: Reply) -> None:
            data = b"" if reply.body is None else json.dumps(reply.body, ensure_ascii=False).encode()
            self.send_response(reply.status)
            for key, value in reply.headers.items():
                self.send_header(key, value)
            if reply.status != 204:
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if reply.status != 204:
                self.wfile.write(data)

        def _dispatch(self, method: str) -> None:
            url = urlsplit(self.path)
            raw = self._body()
            if url.path.startswith("/_admin/"):
                self._send(_admin(app, method, url.path, raw))
                return
            query = {k: v[-1] for k, v in parse_qs(url.query).items()}
            form = {k: v[-1] for k, v in parse_qs(raw.decode("utf-8", "replace")).items()}
            headers = {k.lower(): v for k, v in self.headers.items()}
            reply = app.handle(method, url.path, query, form, headers)
            if isinstance(reply, Reply):
                self._send(reply)
            else:
                self.close_connection = True

        def do_GET(self) -> None:
            self._dispatch("GET")

        def do_POST(self) -> None:
            self._dispatch("POST")

        def do_PUT(self) -> None:
            self._dispatch("PUT")

    return Handler


def _admin(app: ChatWorkTasksApp, method: str, path: str, raw: bytes) -> Reply:
    try:
        data: Any = json.loads(raw) if raw else {}
    except ValueError:
        return _error(400, "admin body is not JSON")
    if path == "/_admin/health":
        return Reply(200, {"ok": True})
    if path == "/_admin/calls" and method == "GET":
        return Reply(200, app.calls())
    if path == "/_admin/reset" and method == "POST":
        app.reset()
        return Reply(200, {"ok": True})
    if path == "/_admin/faults" and method == "POST":
        app.inject(Fault(**data))
        return Reply(200, {"ok": True})
    if path == "/_admin/tasks" and method == "POST":
        task_id = app.add_task(
            str(data["room_id"]),
            str(data["body"]),
            int(data["account_id"]),
            limit=int(data.get("limit", 0)),
            limit_type=str(data.get("limit_type", "none")),
        )
        return Reply(200, {"task_id": task_id})
    return _error(404, "unknown admin route")


class FakeChatWorkServer:
    """The fake on ``127.0.0.1`` in a background thread; ``app`` holds state and faults."""

    def __init__(self, app: ChatWorkTasksApp | None = None, port: int = 0) -> None:
        self.app = app or ChatWorkTasksApp()
        self._httpd = ThreadingHTTPServer((HOST, port), _handler_class(self.app))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    def start(self) -> FakeChatWorkServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-chatwork",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeChatWorkServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def api_base(self) -> str:
        """What ``CHATWORK_TASKS_API_BASE`` (or ``CHATWORK_API_BASE``) should be."""
        return f"{self.url}/v2"

    def env(self) -> dict[str, str]:
        return {
            "CHARTER_TASK_BACKEND": "chatwork",
            "CHATWORK_TASKS_API_BASE": self.api_base,
            "CHATWORK_API_TOKEN": self.app.token or DEFAULT_TOKEN,
        }
