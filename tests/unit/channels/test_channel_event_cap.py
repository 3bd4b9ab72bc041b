"""One signed delivery never makes more turns than ``max_events_per_delivery`` (issue 33): a LINE
request with hundreds of message events is refused whole (413 ``too_many_events``), logged, and
publishes nothing; a real delivery of a few events makes its turns."""

from __future__ import annotations

import json
import logging

import pytest
from test_channel_webhooks import LOCAL, NOW, line_event, line_payload, sign

from shared_lib.channels import IngressConfig, handle_webhook
from shared_lib.layers.ingress import handle_http
from tests.unit.ops.ops_fakes import Clock, make_runtime

TEXTS = ["おはようございます☀️", "明日の会議って何時からでしたっけ？", "ｱｲｳｴｵ　テスト", "了解です！", "ok"]


def events(n: int) -> list[dict]:
    return [
        line_event(
            webhookEventId=f"01EV{i:04d}",
            message={"type": "text", "id": str(1000 + i), "text": TEXTS[i % len(TEXTS)]},
            source={"type": "user", "userId": f"U{i % 7:032d}"},
        )
        for i in range(n)
    ]


def delivery(n: int) -> tuple[dict[str, str], bytes]:
    body = json.dumps(line_payload(*events(n)), ensure_ascii=False).encode()
    return {"Content-Type": "application/json"} | sign("line", body), body


@pytest.mark.parametrize(("n", "limit"), [(200, 20), (21, 20), (4, 3)])
def test_a_delivery_over_the_cap_is_refused_whole_and_logged(n, limit, caplog):
    headers, body = delivery(n)
    with caplog.at_level(logging.WARNING):
        out = handle_webhook(
            "line",
            "POST",
            headers,
            {},
            body,
            secrets=LOCAL,
            config=IngressConfig(max_events_per_delivery=limit),
            now=NOW,
        )
    assert (out.status, out.rejection, out.messages) == (413, "too_many_events", [])
    assert any("webhook_too_many_events" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("n", [1, 3, 20])
def test_a_delivery_within_the_cap_makes_its_messages(n):
    headers, body = delivery(n)
    out = handle_webhook("line", "POST", headers, {}, body, secrets=LOCAL, config=IngressConfig(), now=NOW)
    assert out.status == 200 and len(out.messages) == n


def test_two_hundred_signed_line_events_publish_no_turn():
    # GIVEN the ingress of a runtime with the default cap and a signed LINE request of 200 events
    # (LINE's debounce window is waited out on the runtime's clock, which its sleep advances)
    clock = Clock(NOW)
    rt = make_runtime(clock=clock, sleep=lambda seconds: clock.advance(seconds=seconds))
    headers, body = delivery(200)
    # WHEN it arrives THEN it is refused and no turn is accepted (no delivery record, no reply)
    status, answer = handle_http(rt, "line", "POST", headers, {}, body)
    assert status == 413 and answer.get("error") == "too_many_events"
    assert rt.store.query("webhook_events", group=True) == []
    # AND the same events in a delivery within the cap are accepted as turns
    headers, body = delivery(3)
    status, answer = handle_http(rt, "line", "POST", headers, {}, body)
    assert status == 200 and len(answer["turn_ids"]) == 3
