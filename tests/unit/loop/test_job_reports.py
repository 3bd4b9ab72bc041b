"""A delegated job's report always arrives (issue 22): it goes where the parent's reply went (the
plain-HTTP ``callback_url``, the Slack thread), through the real reply clients over a fake
transport; a report whose send failed is sent once by the watchdog sweep, under the same key."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from loop_fakes import ORG, Chain, Clock, inbound, store_job, text, tool_call

from shared_lib.adapters.recording_channel import RecordingChannel
from shared_lib.channels.clients import build_channels
from shared_lib.features.jobs import state as agent_jobs
from shared_lib.features.jobs import steps as job_turns
from shared_lib.layers.ingress import accept
from shared_lib.ports import OutboundReply, SendResult

TASK = "営業チームの期限切れタスクを集めて要約して"
DELEGATE = tool_call("delegate_task", {"task": TASK})
CALLBACK = "https://client.example/cb?token=s3cret-callback-token"
CALLBACK_ADDRESS = "93.184.216.34"  # a public address: the mock transport answers, nothing leaves
DEFAULT_URL = "https://default.example/replies"
REPORT = "お願いされていた「"
NOW = datetime(2026, 11, 25, 3, 0, tzinfo=UTC)


class Provider:
    """The providers' side of the reply clients: every request, by URL."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.host == CALLBACK_ADDRESS:  # a callback is posted to its checked address, named by Host
            assert request.extensions.get("sni_hostname") == request.headers["host"]
            url = url.copy_with(host=request.headers["host"])
        self.requests.append((str(url), json.loads(request.content)))
        return httpx.Response(200, json={"ok": True, "ts": "1700.9"})

    def texts_to(self, url: str) -> list[str]:
        return [body["text"] for u, body in self.requests if u == url]


def real_channels(chain: Chain) -> Provider:
    provider = Provider()
    chain.rt.channels = build_channels(
        {"CHARTER_ENV": "test", "CHARTER_HTTP_REPLY_URL": DEFAULT_URL, "SLACK_BOT_TOKEN": "xoxb-test"},
        client=httpx.Client(transport=httpx.MockTransport(provider)),
        sleep=lambda _s: None,
        resolve=lambda host, _port: [CALLBACK_ADDRESS] if host == "client.example" else [],
    )
    return provider


def the_job(chain: Chain) -> dict[str, Any]:
    (job,) = agent_jobs.list_jobs(chain.rt.store, ORG)
    return job


def test_a_job_delegated_over_plain_http_reports_to_the_callback_and_keeps_its_token_sealed():
    # GIVEN a plain-HTTP client that asks for replies at its own callback URL
    chain = Chain([DELEGATE, text("期限切れは2件ウル🐺")])
    provider = real_channels(chain)
    # WHEN it delegates a task
    accept(chain.rt, inbound(TASK, "e-cb").model_copy(update={"reply_handle": {"callback_url": CALLBACK}}))
    # THEN the callback receives the started reply and then the report, once; nothing goes elsewhere
    received = provider.texts_to(CALLBACK)
    assert len(received) == 2 and sum(t.startswith(REPORT) for t in received) == 1
    assert provider.texts_to(DEFAULT_URL) == []
    # AND the job keeps the callback sealed, never its token in the clear
    job = the_job(chain)
    assert job["status"] == "succeeded" and job["report_pending"] is False
    assert "s3cret" not in json.dumps(job, default=str) and job["reply_handle_sealed"]


def test_a_job_delegated_in_a_slack_channel_reports_in_the_thread_the_parent_answered_in():
    # GIVEN a top-level Slack message: the parent's reply goes into a thread on it (thread_ts)
    chain = Chain([DELEGATE, text("期限切れは2件ウル🐺")])
    provider = real_channels(chain)
    message = inbound(TASK, "e-slack").model_copy(
        update={"channel": "slack", "room_id": "C1", "reply_handle": {"channel": "C1", "thread_ts": "1700.1"}}
    )
    accept(chain.rt, message)
    # THEN the report is posted in that same thread, like the started reply
    posts = [body for url, body in provider.requests if url.endswith("/chat.postMessage")]
    assert len(posts) == 2 and [p["thread_ts"] for p in posts] == ["1700.1", "1700.1"]
    assert sum(p["text"].startswith(REPORT) for p in posts) == 1 and posts[1]["channel"] == "C1"


def test_a_line_reply_token_is_not_kept_the_report_is_pushed_to_the_group():
    handle = {"user_id": "U1", "to": "G1", "group_id": "G1", "reply_token": "rt-1"}
    kept = agent_jobs.keep_handle(handle, cipher=None)
    assert kept == {"reply_handle": {"user_id": "U1", "to": "G1", "group_id": "G1"}}
    assert agent_jobs.reply_handle(kept, cipher=None) == kept["reply_handle"]


class FailsOnce(RecordingChannel):
    """The http channel, down for the first report it is asked to send."""

    def __init__(self) -> None:
        super().__init__("http")
        self.failures = 1

    def send(self, reply: OutboundReply) -> SendResult:
        if reply.text.startswith(REPORT) and self.failures:
            self.failures -= 1
            return SendResult(ok=False, error="http_503", status=503)
        return super().send(reply)


def reports(chain: Chain) -> list[OutboundReply]:
    return [r for r in chain.rt.channels["http"].sent if r.text.startswith(REPORT)]  # type: ignore[attr-defined]


def sweep_after(chain: Chain, wait: timedelta) -> dict[str, int]:
    clock: Clock = chain.rt.clock  # type: ignore[assignment]
    clock.now += wait
    return job_turns.sweep(chain.rt)


def test_a_report_whose_send_failed_is_sent_once_by_the_sweep_and_a_second_sweep_sends_nothing():
    # GIVEN the job's turn ran and answered, but the channel failed its report
    chain = Chain([DELEGATE, text("期限切れは2件ウル🐺")], clock=Clock(NOW))
    chain.rt.channels["http"] = FailsOnce()
    chain.say(TASK)
    job = the_job(chain)
    assert job["status"] == "succeeded" and job["report_pending"] is True and reports(chain) == []
    # WHEN the sweep runs within the job's own grace, then after it, then again
    assert sweep_after(chain, timedelta(seconds=10))["reported"] == 0
    first = sweep_after(chain, agent_jobs.REPORT_GRACE)
    second = sweep_after(chain, agent_jobs.REPORT_GRACE)
    # THEN exactly one report went, with the job's key and its answer; the second sweep found none
    assert (first["reports_due"], first["reported"]) == (1, 1)
    assert (second["reports_due"], second["reported"]) == (0, 0)
    (sent,) = reports(chain)
    assert sent.idempotency_key == f"{job['job_id']}-report" and "期限切れは2件" in sent.text
    assert the_job(chain)["report_pending"] is False


def cancelled_while_down(job_id: str) -> Chain:
    """A running job whose turn died, cancelled by an operator while the channel is down."""
    chain = Chain([], clock=Clock(NOW))
    chain.rt.channels["http"] = FailsOnce()
    store_job(chain.rt, job_id, "集めて", status="running", heartbeat_at=NOW)
    job_turns.cancel(chain.rt, ORG, job_id, by="ops")
    return chain


def test_an_operators_cancel_of_a_job_whose_turn_is_dead_is_reported_by_the_sweep_once():
    # GIVEN a running job whose turn died; the operator cancels it while the channel is down
    chain = cancelled_while_down("job-dead")
    assert chain.replies() == []
    # WHEN the sweep runs twice after the grace
    sweep_after(chain, agent_jobs.REPORT_GRACE)
    sweep_after(chain, agent_jobs.REPORT_GRACE)
    # THEN the requester is told of the cancel once
    assert chain.replies() == [chain.rt.persona.message("job_cancelled_operator", task="集めて")]


def test_a_report_still_due_after_a_day_is_given_up_not_sent():
    chain = cancelled_while_down("job-old")
    counts = sweep_after(chain, agent_jobs.REPORT_WINDOW)
    assert counts["reports_given_up"] == 1 and chain.replies() == []
    assert sweep_after(chain, timedelta(minutes=1))["reports_due"] == 0


def test_a_cancel_from_a_process_without_the_vault_key_leaves_the_report_to_the_sweep_never_the_default_url():
    # GIVEN a running job delegated over plain HTTP with a callback (kept sealed)
    chain = Chain([], clock=Clock(NOW))
    provider = real_channels(chain)
    kept = agent_jobs.keep_handle({"callback_url": CALLBACK}, chain.rt.cipher(ORG))
    store_job(chain.rt, "job-cb", "集めて", status="running", heartbeat_at=NOW, **kept)
    # WHEN an operator's process that has no vault key cancels it
    key, chain.rt.vault = chain.rt.vault, None
    job_turns.cancel(chain.rt, ORG, "job-cb", by="ops")
    assert provider.requests == []  # not to the default reply URL
    # THEN the sweep (which has the key) reports it at the callback, once
    chain.rt.vault = key
    sweep_after(chain, agent_jobs.REPORT_GRACE)
    sweep_after(chain, agent_jobs.REPORT_GRACE)
    told = chain.rt.persona.message("job_cancelled_operator", task="集めて")
    assert provider.texts_to(CALLBACK) == [told] and provider.texts_to(DEFAULT_URL) == []
