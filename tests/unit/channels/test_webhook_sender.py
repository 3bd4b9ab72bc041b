"""infra.webhook_sender: realistic signed deliveries, accepted by handle_webhook, posted
over HTTP to a stand-in ingress on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

import pytest

from infra import webhook_sender
from infra.webhook_sender import build_request, send
from shared_lib.channels import ChannelSecrets, IngressConfig, handle_webhook

LOCAL = ChannelSecrets.local_defaults()
CHANNELS = ["chatwork", "line", "slack", "http"]


class _Ingress(BaseHTTPRequestHandler):
    """A stand-in for the ingress function: routes /webhooks/{channel} to handle_webhook."""

    def log_message(self, format, *args):
        return

    def do_POST(self):
        url = urlsplit(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        outcome = handle_webhook(
            url.path.rsplit("/", 1)[-1],
            "POST",
            dict(self.headers.items()),
            dict(parse_qsl(url.query)),
            body,
            secrets=LOCAL,
            config=IngressConfig(),
            now=datetime.now(UTC),
        )
        raw = json.dumps(outcome.body).encode()
        self.send_response(outcome.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture()
def ingress() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Ingress)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("channel", CHANNELS)
def test_built_requests_are_accepted_and_normalised(channel):
    # GIVEN a delivery built for a group room and a named user
    now = datetime.now(UTC)
    room = {"chatwork": "555", "line": "Cgroup", "slack": "C77", "http": "room-9"}[channel]
    path, headers, body = build_request(
        channel, "会議室を予約して", org="acme", room=room, user="U5", event_id="E1", secrets=LOCAL, now=now
    )
    # WHEN the ingress logic handles it
    outcome = handle_webhook(
        channel, "POST", headers, {}, body, secrets=LOCAL, config=IngressConfig(), now=now
    )
    # THEN it becomes one addressed message in that room, from that user
    assert path == f"/webhooks/{channel}"
    [msg] = outcome.messages
    assert (msg.room_id, msg.user_id, msg.text, msg.addressed) == (room, "U5", "会議室を予約して", True)


@pytest.mark.parametrize("channel", CHANNELS)
def test_same_event_id_gives_the_same_body(channel):
    now = datetime.now(UTC)
    first = build_request(channel, "hi", event_id="E1", secrets=LOCAL, now=now)
    again = build_request(channel, "hi", event_id="E1", secrets=LOCAL, now=now)
    other = build_request(channel, "hi", secrets=LOCAL, now=now)
    assert first == again
    assert other[2] != first[2]


def test_signing_needs_a_secret():
    with pytest.raises(ValueError, match="slack"):
        build_request("slack", "hi", secrets=ChannelSecrets.from_env({"CHARTER_ENV": "prod"}))
    with pytest.raises(ValueError, match="unknown channel"):
        build_request("teams", "hi", secrets=LOCAL)


@pytest.mark.parametrize("channel", CHANNELS)
def test_send_posts_to_the_ingress(ingress, channel):
    result = send(ingress, channel, "hello", secrets=LOCAL)
    assert (result.status, result.body) == (200, {"ok": True, "accepted": 1, "ignored": 0})


def test_command_line_prints_status_and_response(ingress, capsys, monkeypatch):
    monkeypatch.setenv("CHARTER_ENV", "test")
    for name in (
        "SLACK_SIGNING_SECRET",
        "LINE_CHANNEL_SECRET",
        "CHATWORK_WEBHOOK_TOKEN",
        "HTTP_WEBHOOK_SECRET",
    ):
        monkeypatch.delenv(name, raising=False)
    code = webhook_sender.main(
        ["--channel", "slack", "--url", ingress, "--text", "今日の予定", "--room", "C1"]
    )
    assert code == 0
    assert capsys.readouterr().out.strip() == '200 {"ok": true, "accepted": 1, "ignored": 0}'
    # AND a refused delivery exits 1
    code = webhook_sender.main(
        ["--channel", "line", "--url", ingress, "--text", "x", "--path", "/webhooks/teams"]
    )
    assert code == 1
    assert capsys.readouterr().out.startswith("404 ")
