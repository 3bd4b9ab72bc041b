"""One HTTP server imitating the Cloud Run Admin API v2 calls a revision rollback makes.

Routes (the client's base URL, ``CHARTER_RUN_ADMIN_BASE``, is the server's URL)::

    GET   /v2/projects/{p}/locations/{r}/services/{s}             the service: traffic, updateTime, etag
    GET   /v2/projects/{p}/locations/{r}/services/{s}/revisions   its revisions, 2 per page (nextPageToken)
    PATCH /v2/projects/{p}/locations/{r}/services/{s}             replace the service: a long-running operation
    GET   /v2/projects/{p}/locations/{r}/operations/{id}          the operation, done, with the service
    GET   /probe                                                  a health check answering ``set_probe``'s status
                                                                  (``fail_updates(n)``: the next n PATCHes get 503)
    GET   /_admin/calls                                           every API call: method, path, query, body
    GET   /_admin/health

Like the real API it checks what a client could get wrong: the bearer token (401), that the
service exists (404), that only ``traffic`` changes, that the new traffic's percents sum to 100,
every revision is one of the service's and tags are unique (400), and that the body's ``etag``
is the current one (409: the service changed since it was read).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import count
from typing import Any
from urllib.parse import parse_qs, urlsplit

JSON = dict[str, Any]
PAGE_SIZE = 2
_SERVICE = re.compile(r"^/v2/(projects/[^/]+/locations/[^/]+/services/[^/]+)$")
_REVISIONS = re.compile(r"^/v2/(projects/[^/]+/locations/[^/]+/services/[^/]+)/revisions$")
_OPERATION = re.compile(r"^/v2/(projects/[^/]+/locations/[^/]+/operations/[^/]+)$")
_OUTPUT_ONLY = frozenset({"traffic", "trafficStatuses", "updateTime", "etag", "uid", "generation", "uri"})


def _time(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class _State:
    lock: threading.Lock = field(default_factory=threading.Lock)
    services: dict[str, JSON] = field(default_factory=dict)
    revisions: dict[str, list[JSON]] = field(default_factory=dict)
    operations: dict[str, JSON] = field(default_factory=dict)
    calls: list[JSON] = field(default_factory=list)
    ids: count[int] = field(default_factory=lambda: count(1))
    probe_status: int = 200
    failing_updates: int = 0


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    wbufsize = 1 << 16  # headers and body in one segment: no delayed-ACK stall on keep-alive

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read /_admin/calls
        return

    def _answer(self, status: int, body: Any) -> None:
        raw = json.dumps(body, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path == "/_admin/health":
            self._answer(200, {"ok": True})
        elif url.path == "/_admin/calls":
            self._answer(200, self.server.fake.calls())
        elif url.path == "/probe":
            status = self.server.fake.state.probe_status
            self._answer(status, {"ok": 200 <= status < 300})
        else:
            self._api("GET", url.path, parse_qs(url.query), None)

    def do_PATCH(self) -> None:
        url = urlsplit(self.path)
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            self._answer(400, {"error": {"code": 400, "message": "body is not JSON"}})
            return
        self._api("PATCH", url.path, parse_qs(url.query), body)

    def _api(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> None:
        fake = self.server.fake
        headers = {k.lower(): v for k, v in self.headers.items()}
        with fake.state.lock:
            fake.state.calls.append(
                {
                    "method": method,
                    "path": path,
                    "query": {k: v[0] for k, v in query.items()},
                    "authorization": headers.get("authorization", ""),
                    "body": body,
                }
            )
        if headers.get("authorization") != f"Bearer {fake.token}":
            self._answer(401, {"error": {"code": 401, "status": "UNAUTHENTICATED"}})
            return
        status, answer = fake.handle(method, path, query, body)
        self._answer(status, answer)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], fake: FakeCloudRun) -> None:
        super().__init__(address, _Handler)
        self.fake = fake


def _error(status: int, message: str) -> tuple[int, JSON]:
    return status, {"error": {"code": status, "message": message}}


class FakeCloudRun:
    """In-process fake of the Cloud Run Admin API v2 on 127.0.0.1 (port 0: any free port).

    >>> with FakeCloudRun(token="t") as fake:
    ...     _ = fake.add_service("p", "r", "charter-brain", revisions=["charter-brain-c-1"],
    ...                          traffic=[{"revision": "charter-brain-c-1", "percent": 100, "tag": "c-1"}])
    ...     fake.traffic("p", "r", "charter-brain")
    [('charter-brain-c-1', 100, 'c-1')]
    """

    def __init__(
        self,
        *,
        token: str = "fake-cloud-run-token",
        host: str = "127.0.0.1",
        port: int = 0,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.token = token
        self.clock = clock
        self.state = _State()
        self._address = (host, port)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> FakeCloudRun:
        self._server = _Server(self._address, self)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-cloud-run",
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

    def __enter__(self) -> FakeCloudRun:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("FakeCloudRun is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    # -- the world the tests set up and read -----------------------------------------------------
    def add_service(
        self,
        project: str,
        region: str,
        name: str,
        *,
        revisions: list[str],
        traffic: list[JSON],
        updated: str | None = None,
        first_created: str = "2026-01-01T00:00:00Z",
    ) -> JSON:
        """A service whose ``revisions`` (oldest first, an hour apart) serve ``traffic``
        (``{"revision", "percent", "tag"}``); ``updated`` is its ``updateTime`` (default: now)."""
        full = f"projects/{project}/locations/{region}/services/{name}"
        start = datetime.fromisoformat(first_created.replace("Z", "+00:00"))
        docs = [
            {"name": f"{full}/revisions/{r}", "createTime": _time(start + timedelta(hours=i))}
            for i, r in enumerate(revisions)
        ]
        service = {
            "name": full,
            "uri": f"https://{name}-abc123-an.a.run.app",
            "template": {"containers": [{"image": "charter:image"}]},
            "latestReadyRevision": docs[-1]["name"] if docs else "",
            "updateTime": updated or _time(self.clock()),
        }
        with self.state.lock:
            self.state.revisions[full] = list(reversed(docs))  # the API lists newest first
            self.state.services[full] = service
            self._set_traffic(full, [self._entry(t) for t in traffic])
        return dict(service)

    def set_probe(self, status: int) -> None:
        """What ``GET /probe`` answers from now on."""
        self.state.probe_status = status

    def fail_updates(self, times: int) -> None:
        """Answer the next ``times`` updates with 503, changing nothing."""
        self.state.failing_updates = times

    def traffic(self, project: str, region: str, name: str) -> list[tuple[str, int, str]]:
        """``(revision, percent, tag)`` of the service's traffic now."""
        with self.state.lock:
            service = self.state.services[f"projects/{project}/locations/{region}/services/{name}"]
            return [(t["revision"], t["percent"], t.get("tag", "")) for t in service["traffic"]]

    def calls(self, method: str | None = None) -> list[JSON]:
        """The API calls received, oldest first (``method``: only those)."""
        with self.state.lock:
            return [dict(c) for c in self.state.calls if method is None or c["method"] == method]

    # -- the API ------------------------------------------------------------------------------------
    @staticmethod
    def _entry(target: JSON) -> JSON:
        entry = {
            "type": "TRAFFIC_TARGET_ALLOCATION_TYPE_REVISION",
            "revision": target["revision"],
            "percent": int(target["percent"]),
        }
        if target.get("tag"):
            entry["tag"] = target["tag"]
        return entry

    def _set_traffic(self, full: str, traffic: list[JSON]) -> None:
        service = self.state.services[full]
        service["traffic"] = traffic
        service["trafficStatuses"] = [dict(t) for t in traffic]
        service["etag"] = f'"{next(self.state.ids)}"'

    def handle(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> tuple[int, Any]:
        with self.state.lock:
            if (m := _OPERATION.match(path)) and method == "GET":
                operation = self.state.operations.get(m.group(1))
                return (200, {**operation, "done": True}) if operation else _error(404, "no such operation")
            if (m := _REVISIONS.match(path)) and method == "GET":
                return self._list_revisions(m.group(1), query)
            if m := _SERVICE.match(path):
                if m.group(1) not in self.state.services:
                    return _error(404, f"service {m.group(1)} not found")
                if method == "GET":
                    return 200, json.loads(json.dumps(self.state.services[m.group(1)]))
                if method == "PATCH":
                    return self._replace(m.group(1), body)
        return _error(404, f"no route {method} {path}")

    def _list_revisions(self, full: str, query: dict[str, list[str]]) -> tuple[int, JSON]:
        if full not in self.state.services:
            return _error(404, f"service {full} not found")
        start = int(query.get("pageToken", ["0"])[0])
        page = self.state.revisions[full][start : start + PAGE_SIZE]
        answer: JSON = {"revisions": page}
        if start + PAGE_SIZE < len(self.state.revisions[full]):
            answer["nextPageToken"] = str(start + PAGE_SIZE)
        return 200, answer

    def _replace(self, full: str, body: Any) -> tuple[int, JSON]:
        current = self.state.services[full]
        if self.state.failing_updates > 0:
            self.state.failing_updates -= 1
            return _error(503, "the service is unavailable (injected)")
        if not isinstance(body, dict) or not isinstance(body.get("traffic"), list):
            return _error(400, "the body must be a service with traffic")
        if body.get("etag") != current["etag"]:
            return _error(409, "etag mismatch: the service changed since it was read")
        changed = sorted(
            k for k in set(body) | set(current) if k not in _OUTPUT_ONLY and body.get(k) != current.get(k)
        )
        if changed:
            return _error(400, f"only traffic may change here, not {changed}")
        known = {r["name"].rsplit("/", 1)[-1] for r in self.state.revisions[full]}
        traffic = body["traffic"]
        tags = [t["tag"] for t in traffic if t.get("tag")]
        if sum(int(t.get("percent") or 0) for t in traffic) != 100:
            return _error(400, "traffic percents must sum to 100")
        if any(t.get("revision") not in known for t in traffic) or len(tags) != len(set(tags)):
            return _error(400, "unknown revision or duplicate tag in traffic")
        self._set_traffic(full, [self._entry(t) for t in traffic])
        current["updateTime"] = _time(self.clock())
        name = f"{full.rsplit('/services/', 1)[0]}/operations/op-{next(self.state.ids)}"
        self.state.operations[name] = {"name": name, "response": json.loads(json.dumps(current))}
        return 200, {"name": name, "done": False}
