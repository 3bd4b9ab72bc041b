"""Alerts: deduplicated, always for violations and dead letters, delivered at least once."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any, ClassVar

import httpx
import pytest
from ops_fakes import ORG, TASK_CREATE, TASK_DONE, make_record, send

from shared_lib.adapters.recording_channel import RecordingChannel
from shared_lib.errors import ConfigError
from shared_lib.layers import observer
from shared_lib.ops import monitoring
from shared_lib.ops.metrics import Thresholds
from shared_lib.telemetry import alerts
from shared_lib.telemetry.notify import (
    Alert,
    ChannelRoomNotifier,
    EmailNotifier,
    NotifyError,
    RecordingNotifier,
    WebhookNotifier,
    notifiers_from_env,
    sign,
)
from shared_lib.turn.envelope import ConstitutionViolation, Turn


class FlakyNotifier(RecordingNotifier):
    def __init__(self, failures: int, name: str = "flaky") -> None:
        super().__init__(name=name)
        self.failures = failures

    def notify(self, alert: Alert) -> None:
        if self.failures:
            self.failures -= 1
            raise NotifyError("unreachable")
        super().notify(alert)


def stored_alerts(rt) -> list[dict]:
    return [doc for _, doc in rt.store.query("alerts")]


def test_the_same_alert_twice_is_stored_and_sent_once(rt, notifier):
    for _ in range(2):
        alerts.raise_alert(rt, "send_error", "room unreachable", alert_id="a-1", org_id=ORG)
    assert len(notifier.sent) == 1 and len(stored_alerts(rt)) == 1


def test_similar_alerts_in_one_window_are_folded_into_one_notification(rt, notifier):
    # GIVEN three different alerts of the same code and organisation within minutes, all inside
    # one fold window (windows are aligned to the clock, so start at a window's first minute)
    rt.clock.at = rt.clock.at.replace(minute=0, second=0)
    for i in range(3):
        alerts.raise_alert(rt, "send_error", f"attempt {i}", alert_id=f"a-{i}", org_id=ORG)
        rt.clock.advance(minutes=1)
    # THEN operators get one message; the others are stored, marked as folded
    assert [a.alert_id for a in notifier.sent] == ["a-0"]
    assert sorted(d.get("notification") for d in stored_alerts(rt)) == ["sent", "suppressed", "suppressed"]
    # AND a later window alerts again
    rt.clock.advance(minutes=alerts.DEDUPE_MINUTES)
    alerts.raise_alert(rt, "send_error", "again", alert_id="a-later", org_id=ORG)
    assert [a.alert_id for a in notifier.sent] == ["a-0", "a-later"]


@pytest.mark.parametrize(
    "code", ["constitution_violation", "layer_failed", "audit.reasoning.permission_claim"]
)
def test_violations_and_dead_letters_always_alert_once_per_turn(rt, notifier, code):
    for turn in ("T1", "T2", "T3"):
        alerts.raise_alert(rt, code, "bad", alert_id=f"{code}-{turn}", org_id=ORG, turn_id=turn)
    assert [a.turn_id for a in notifier.sent] == ["T1", "T2", "T3"]
    assert all(a.severity == "critical" for a in notifier.sent)


def test_a_failed_delivery_is_retried_only_where_it_failed(rt):
    # GIVEN two notifiers, one of them down for two attempts
    good, flaky = RecordingNotifier(name="room"), FlakyNotifier(2)
    rt.notifiers = [good, flaky]
    # WHEN an alert is raised (tried, then tried again by the observer for its copy on turns.events;
    # the failure is not raised: it must not stop a recording)
    alerts.raise_alert(rt, "send_error", "x", alert_id="a-1", org_id=ORG)
    assert "notification" not in stored_alerts(rt)[0]
    # AND the heartbeat's sweep retries it
    assert alerts.sweep(rt) == {"sent": 1}
    # THEN each notifier delivered it exactly once
    assert len(good.sent) == 1 and len(flaky.sent) == 1
    assert stored_alerts(rt)[0]["notification"] == "sent"


def test_a_notifier_that_is_down_does_not_keep_a_turn_from_being_recorded(rt):
    rt.notifiers = [FlakyNotifier(99)]
    turn_id = send(rt, TASK_CREATE)
    _, data, attrs, _ = [p for p in rt.bus.published if p[0] == "executed"][-1]
    observer.handle(rt, data, {**attrs, observer.DEAD_LETTER_ATTR: "responder-sub"})
    assert rt.store.get(f"orgs/{ORG}/observability/{turn_id}") is not None
    assert [d["code"] for d in stored_alerts(rt)] == ["layer_failed"]
    assert alerts.sweep(rt) == {"failed": 1}


def test_the_sweep_delivers_alerts_other_code_wrote_directly(rt, notifier):
    # GIVEN an alert the flags provider wrote straight into the store
    rt.store.create(
        "alerts/flags-x",
        {
            "event_id": "flags-x",
            "kind": "alert",
            "code": "flags_unusable",
            "severity": "critical",
            "message": "flags fail-safe",
            "at": rt.clock().isoformat(),
            "org_id": None,
            "turn_id": None,
        },
    )
    # WHEN the heartbeat sweeps THEN it is delivered, once
    assert alerts.sweep(rt) == {"sent": 1} and alerts.sweep(rt) == {}
    assert notifier.sent[0].code == "flags_unusable"


def test_without_a_notifier_the_alert_stays_stored_and_says_so(rt):
    rt.notifiers = []
    alerts.raise_alert(rt, "send_error", "x", alert_id="a-1", org_id=ORG)
    assert stored_alerts(rt)[0]["notification"] == "no_notifier"


def test_a_dead_lettered_turn_is_recorded_and_always_alerts(rt, notifier):
    # GIVEN a turn that a layer kept failing on, and an undecodable message
    send(rt, TASK_DONE)
    _, data, attrs, _ = [p for p in rt.bus.published if p[0] == "executed"][-1]
    dl_attrs = {**attrs, observer.DEAD_LETTER_ATTR: "responder-sub"}
    # WHEN both reach the dead-letter topic, the first one twice
    results = [
        observer.handle(rt, data, dl_attrs),
        observer.handle(rt, data, dl_attrs),
        observer.handle(rt, b"not json", {observer.DEAD_LETTER_ATTR: "context-sub", "layer": "ingress"}),
    ]
    # THEN each is one failure record and one critical alert
    assert results == ["dead_letter", "duplicate", "dead_letter"]
    assert (
        len(rt.store.query(f"orgs/{ORG}/failures")) == 1 and len(rt.store.query("orgs/unknown/failures")) == 1
    )
    assert [a.code for a in notifier.sent] == ["layer_failed", "layer_failed"]


def test_a_constitution_violation_on_a_turn_alerts(rt, notifier):
    # GIVEN a completed turn whose proposal carried a constitution violation
    send(rt, TASK_DONE)
    _, data, attrs, _ = [p for p in rt.bus.published if p[0] == "completed"][-1]
    turn = Turn.from_message(data, attrs, rt.store)
    turn = turn.model_copy(update={"turn_id": "01TESTVIOLATION0000000000A"})
    turn.proposal.violations.append(
        ConstitutionViolation(
            article="4.2", code="authority_claim", detail="権限があるので実行します", action="block"
        )
    )
    # WHEN it is recorded (twice: a redelivery)
    observer.handle(rt, *turn.to_message("responder", rt.store))
    observer.handle(rt, *turn.to_message("responder", rt.store))
    # THEN one critical alert names the turn
    sent = [a for a in notifier.sent if a.code == "constitution_violation"]
    assert len(sent) == 1 and sent[0].turn_id == turn.turn_id and sent[0].severity == "critical"


def test_threshold_crossings_alert_once_per_metric_scope_and_window(rt, notifier):
    # GIVEN an hour in which half the turns were blocked
    now = rt.clock()
    for i in range(4):
        doc = make_record(now - timedelta(minutes=10 + i), guardian_action="block" if i % 2 else "allow")
        rt.store.set(f"orgs/{ORG}/observability/{doc.record_id}", doc.store_doc())
    th = Thresholds(min_turns=2)
    # WHEN the check runs twice in the same window
    first = monitoring.check_thresholds(rt, th=th)
    second = monitoring.check_thresholds(rt, th=th)
    # THEN the block rate crossed for the organisation and overall, alerted once each
    assert {(b["scope"], b["metric"]) for b in first} == {(ORG, "block_rate"), ("all", "block_rate")}
    assert first == second
    assert sorted(a.code for a in notifier.sent) == ["metric.block_rate", "metric.block_rate"]


# --------------------------------------------------------------------------- adapters


def an_alert() -> Alert:
    return Alert(
        alert_id="a-1",
        code="layer_failed",
        severity="critical",
        message="turn dead-lettered",
        at="2026-11-23T00:00:00+00:00",
        org_id="acme",
        turn_id="T1",
    )


def test_the_room_notifier_posts_to_the_admin_room():
    channel = RecordingChannel("chatwork")
    ChannelRoomNotifier(channel, "acme", "admin-room").notify(an_alert())
    (reply,) = channel.sent
    assert (
        reply.room_id == "admin-room"
        and "layer_failed" in reply.text
        and reply.idempotency_key == "alert-a-1"
    )


def test_the_webhook_notifier_signs_its_body():
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(204)

    hook = WebhookNotifier(
        "https://hooks.example.com/x",
        "s3cret",
        client=httpx.Client(transport=httpx.MockTransport(handler)),
        clock=lambda: 1_700_000_000,
    )
    hook.notify(an_alert())
    (req,) = seen
    assert req.headers["X-Charter-Signature"] == sign("s3cret", "1700000000", req.content)
    assert json.loads(req.content)["alert"]["code"] == "layer_failed"


def test_the_webhook_notifier_reports_a_failed_delivery():
    hook = WebhookNotifier(
        "https://hooks.example.com/x",
        client=httpx.Client(transport=httpx.MockTransport(lambda r: httpx.Response(500))),
    )
    with pytest.raises(NotifyError):
        hook.notify(an_alert())


def test_the_webhook_must_be_https_except_to_loopback():
    with pytest.raises(ConfigError):
        WebhookNotifier("http://hooks.example.com/x")
    assert WebhookNotifier("http://127.0.0.1:9/x").url.startswith("http://127.0.0.1")


class FakeSMTP:
    sent: ClassVar[list[tuple[FakeSMTP, Any]]] = []

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port, self.tls, self.login_as = host, port, False, None

    def __enter__(self) -> FakeSMTP:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def starttls(self) -> None:
        self.tls = True

    def login(self, user: str, password: str) -> None:
        self.login_as = user

    def send_message(self, msg) -> None:  # type: ignore[no-untyped-def]
        FakeSMTP.sent.append((self, msg))


def test_the_email_notifier_sends_one_message_over_starttls():
    FakeSMTP.sent = []
    EmailNotifier(
        "smtp.example.com", ("ops@example.com",), username="bot", password="pw", smtp_factory=FakeSMTP
    ).notify(an_alert())
    ((smtp, msg),) = FakeSMTP.sent
    assert (
        smtp.tls
        and smtp.login_as == "bot"
        and msg["To"] == "ops@example.com"
        and "layer_failed" in msg["Subject"]
    )


def test_notifiers_come_from_the_environment():
    channels = {"chatwork": RecordingChannel("chatwork")}
    env = {
        "CHARTER_ALERT_ROOM": "chatwork:acme:admin",
        "CHARTER_ALERT_WEBHOOK_URL": "https://h.example.com/a",
        "CHARTER_ALERT_EMAIL_TO": "a@example.com, b@example.com",
        "CHARTER_SMTP_HOST": "smtp.example.com",
    }
    assert [n.name for n in notifiers_from_env(env, channels)] == ["room", "webhook", "email"]
    assert notifiers_from_env({}, channels) == []
    with pytest.raises(ConfigError):
        notifiers_from_env({"CHARTER_ALERT_ROOM": "teams:acme:x"}, channels)
    with pytest.raises(ConfigError):
        notifiers_from_env({"CHARTER_ALERT_EMAIL_TO": "a@example.com"}, channels)


def test_an_alert_quoting_personal_data_is_masked_in_the_store_the_event_and_the_notification(rt, notifier):
    # GIVEN an alert whose message and details quote what a user wrote
    said = "田中さん taro.suzuki@example.com 090-1234-5678 カード 4111 1111 1111 1111"
    alerts.raise_alert(
        rt,
        "constitution_violation",
        f"reasoning: {said}",
        alert_id="a-pii",
        org_id=ORG,
        details={"reasoning": said, "turn_id": "t-1"},
    )
    # THEN no value is in clear anywhere the alert went, and identifiers are kept
    stored = stored_alerts(rt)[0]
    event = rt.store.get(f"orgs/{ORG}/events/a-pii")
    for text in (
        json.dumps(stored, ensure_ascii=False),
        json.dumps(event, ensure_ascii=False),
        repr(notifier.sent),
    ):
        for value in ("taro.suzuki@example.com", "090-1234-5678", "4111 1111 1111 1111"):
            assert value not in text
    assert "[EMAIL]" in stored["message"] and stored["details"]["turn_id"] == "t-1"
