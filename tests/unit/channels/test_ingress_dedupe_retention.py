"""Ingress's dedupe record expires a fixed span after the delivery, on any date: the old
"same date next year" crashed every webhook received on 29 February."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from shared_lib.layers.ingress import accept, dedupe_path
from shared_lib.turn.inbound import InboundMessage
from shared_lib.wiring.composition import build_runtime


def message(received_at: datetime) -> InboundMessage:
    return InboundMessage(
        channel="http",
        org_id="acme",
        room_id="r1",
        user_id="u1",
        text="見積書のタスクをお願い",
        message_id="m1",
        event_id="e1",
        received_at=received_at,
    )


@pytest.mark.parametrize(
    ("now", "expires"),
    [
        (datetime(2028, 2, 29, 12, 0, tzinfo=UTC), datetime(2029, 2, 28, 12, 0, tzinfo=UTC)),
        (datetime(2027, 3, 1, 12, 0, tzinfo=UTC), datetime(2028, 2, 29, 12, 0, tzinfo=UTC)),
        (datetime(2026, 6, 15, 8, 30, tzinfo=UTC), datetime(2027, 6, 15, 8, 30, tzinfo=UTC)),
    ],
)
def test_a_webhook_accepted_on_any_date_gets_a_dedupe_record_expiring_365_days_later(now, expires):
    # GIVEN a clock frozen at ``now`` (29 February among them)
    rt = build_runtime({"CHARTER_ENV": "test", "CHARTER_LLM": "none"}, clock=lambda: now)
    msg = message(now)
    # WHEN a webhook message is accepted
    turn_id = accept(rt, msg)
    # THEN it becomes a turn, deduped until the expiry
    assert turn_id is not None
    assert rt.store.get(dedupe_path(msg)) == {"turn_id": turn_id, "at": now, "expires_at": expires}
    assert accept(rt, msg) is None
