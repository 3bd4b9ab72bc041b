"""The ingress never acknowledges a webhook it could not publish (issue 33): while Pub/Sub is
down (the emulator killed, the service unreachable) the channel gets a 503 and no delivery
record is left, so its retry after Pub/Sub is back becomes the turn — nothing accepted is lost."""

from __future__ import annotations

from typing import Any

from ops_fakes import ORG, ROOM, USER, make_runtime, replies

from infra.webhook_sender import build_request
from shared_lib.layers.ingress import handle_http

TEXT = "明日10時からの定例、会議室Bに変更になったので皆に伝えといて〜"


class FlakyBus:
    """The runtime's bus behind a switch: while ``down``, every publish fails as a dead emulator's does."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.down, self.refused = inner, True, 0

    def publish(self, topic_key: str, data: bytes, attributes: dict[str, str], ordering_key: str = "") -> str:
        if self.down:
            self.refused += 1
            raise ConnectionError("failed to connect to all addresses; last error: 127.0.0.1:8085 refused")
        return str(self.inner.publish(topic_key, data, attributes, ordering_key))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_webhook_whose_publish_failed_is_503_and_its_retry_becomes_the_turn():
    # GIVEN the ingress of a runtime whose Pub/Sub is down
    rt = make_runtime()
    bus = FlakyBus(rt.bus)
    rt.bus = bus  # type: ignore[misc]
    _path, headers, body = build_request(
        "http", TEXT, org=ORG, room=ROOM, user=USER, event_id="ev-kaigi-0001", secrets=rt.channel_secrets
    )
    # WHEN the channel delivers THEN it is told to retry (5xx), and nothing claims the event
    status, answer = handle_http(rt, "http", "POST", headers, {}, body)
    assert (status, answer) == (503, {"error": "temporarily_unavailable"}) and bus.refused == 1
    assert rt.store.query("webhook_events", group=True) == []
    # WHEN Pub/Sub is back and the channel sends the same delivery again
    bus.down = False
    status, answer = handle_http(rt, "http", "POST", headers, {}, body)
    # THEN it is accepted as one turn and answered; a third copy is a duplicate, not a second turn
    assert status == 200 and len(answer["turn_ids"]) == 1
    assert len(replies(rt)) == 1
    status, again = handle_http(rt, "http", "POST", headers, {}, body)
    assert status == 200 and "turn_ids" not in again and len(replies(rt)) == 1
