"""FakeChannelServer's admin API and command line (127.0.0.1 only)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from infra.fake_channels import FakeChannelServer

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def fake():
    with FakeChannelServer() as server:
        yield server


def test_admin_health_sent_and_reset(fake):
    with httpx.Client(base_url=fake.url) as client:
        # GIVEN a call to the fake Slack API
        assert client.get("/_admin/health").json() == {"ok": True}
        answer = client.post(
            "/slack/api/chat.postMessage",
            headers={"Authorization": "Bearer x"},
            json={"channel": "C1", "text": "hi"},
        )
        assert answer.json()["ok"] is True
        # WHEN the calls are listed THEN it is there with its parsed text
        [call] = client.get("/_admin/sent").json()
        assert (call["channel"], call["path"], call["text"], call["status"]) == (
            "slack",
            "/slack/api/chat.postMessage",
            "hi",
            200,
        )
        assert client.get("/_admin/sent", params={"channel": "line"}).json() == []
        # WHEN reset THEN nothing is recorded
        assert client.post("/_admin/reset").json() == {"ok": True}
        assert fake.sent() == []


def test_a_poller_reads_only_what_came_since_it_last_read(fake):
    with httpx.Client(base_url=fake.url) as client:
        # GIVEN three replies on two channels, a Monday night's worth of 「了解ウル🐺」
        client.post("/http/reply", json={"text": "了解ウル🐺"}, headers={"Idempotency-Key": "a-0"})
        client.post(
            "/slack/api/chat.postMessage",
            headers={"Authorization": "Bearer x"},
            json={"channel": "C1", "text": "ｓｌａｃｋ"},
        )
        client.post("/http/reply", json={"text": "明日9時ね👍"}, headers={"Idempotency-Key": "b-0"})
        # WHEN a poller that has read one HTTP reply asks for the rest of the HTTP replies
        rest = client.get("/_admin/sent", params={"channel": "http", "since": 1}).json()
        # THEN it gets the second HTTP reply only, counted within its channel
        assert [c["text"] for c in rest] == ["明日9時ね👍"]
        assert client.get("/_admin/sent", params={"channel": "http", "since": 2}).json() == []
        assert [c["text"] for c in fake.sent(since=2)] == ["明日9時ね👍"]
        assert len(client.get("/_admin/sent", params={"since": 0}).json()) == 3


def test_faults_are_set_over_http_and_used_up(fake):
    with httpx.Client(base_url=fake.url) as client:
        # GIVEN a fault for two calls
        assert (
            client.post(
                "/_admin/faults", json={"channel": "http", "status": 503, "times": 2, "retry_after": 0}
            ).status_code
            == 200
        )
        # WHEN three calls are made THEN two fail and the third succeeds
        statuses = [client.post("/http/reply", json={"text": "x"}).status_code for _ in range(3)]
        assert statuses == [503, 503, 200]
        assert [c["status"] for c in fake.sent(accepted_only=True)] == [200]
        assert client.get("/_admin/sent", params={"accepted": "1"}).json()[0]["status"] == 200


def test_an_http_reply_repeated_under_its_idempotency_key_is_delivered_once(fake):
    with httpx.Client(base_url=fake.url) as client:
        # GIVEN a reply the receiver accepted, and another reply under its own key
        reply = {"text": "タスクを作成したウル！", "room_id": "r1"}
        first = client.post("/http/reply", json=reply, headers={"Idempotency-Key": "t1-0"}).json()
        client.post("/http/reply", json={"text": "別の返事ウル"}, headers={"Idempotency-Key": "t2-0"})
        # WHEN a responder that died before its receipt sends the first again, under the same key
        again = client.post("/http/reply", json=reply, headers={"Idempotency-Key": "t1-0"})
        # THEN it gets the first answer, and is recorded as a repeat, not delivered twice
        assert again.status_code == 200 and again.json() == first
        assert [c["duplicate"] for c in fake.sent()] == [False, False, True]
        assert [c["text"] for c in fake.sent(accepted_only=True)] == [
            "タスクを作成したウル！",
            "別の返事ウル",
        ]


@pytest.mark.parametrize(
    "fault", [{"channel": "teams"}, {"channel": "line", "mode": "explode"}, {"nope": 1}, []]
)
def test_an_invalid_fault_is_a_400(fake, fault):
    with httpx.Client(base_url=fake.url) as client:
        assert client.post("/_admin/faults", json=fault).status_code == 400


def test_line_fake_checks_what_line_checks(fake):
    with httpx.Client(base_url=fake.url, headers={"Authorization": "Bearer t"}) as client:
        too_many = {"replyToken": "r", "messages": [{"type": "text", "text": "x"}] * 6}
        assert client.post("/line/v2/bot/message/reply", json=too_many).status_code == 400
        too_long = {"to": "U1", "messages": [{"type": "text", "text": "x" * 5001}]}
        assert client.post("/line/v2/bot/message/push", json=too_long).status_code == 400
        no_token = {"messages": [{"type": "text", "text": "x"}]}
        assert client.post("/line/v2/bot/message/reply", json=no_token).json() == {
            "message": "Invalid reply token"
        }
    unauthenticated = httpx.post(f"{fake.url}/line/v2/bot/message/push", json={"to": "U1", "messages": []})
    assert unauthenticated.status_code == 401


def test_unknown_paths_are_404(fake):
    assert httpx.get(f"{fake.url}/nope").status_code == 404
    assert httpx.post(f"{fake.url}/slack/api/chat.delete").status_code == 404


def test_url_needs_a_started_server():
    with pytest.raises(RuntimeError):
        _ = FakeChannelServer().url


def test_command_line_prints_its_address_and_serves():
    # GIVEN the fake started as the local stack starts it
    process = subprocess.Popen(
        [sys.executable, "-m", "infra.fake_channels", "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline().strip()
        # THEN it announces where it listens, and answers there
        assert line.startswith("fake-channels listening on http://127.0.0.1:")
        url = line.rsplit(" ", 1)[1]
        assert httpx.get(f"{url}/_admin/health").json() == {"ok": True}
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0
        process.stdout.close()
