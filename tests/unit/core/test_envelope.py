"""The Turn envelope: serialisation, size guard, schema errors, section ownership."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.errors import EnvelopeError, EnvelopeTooLarge
from shared_lib.ids import new_turn_id
from shared_lib.turn.envelope import MAX_INLINE_BYTES, Turn
from shared_lib.turn.inbound import InboundMessage


def make_turn(text: str = "こんにちは") -> Turn:
    msg = InboundMessage(
        channel="http",
        org_id="acme",
        room_id="r1",
        user_id="u1",
        text=text,
        message_id="m1",
        event_id="e1",
        received_at=datetime(2026, 11, 22, tzinfo=UTC),
    )
    return Turn.from_inbound(msg, traceparent="00-" + "a" * 32 + "-" + "b" * 16 + "-01")


def test_round_trip_through_a_message_keeps_everything():
    # GIVEN a turn  WHEN it is serialised for the bus and decoded
    turn = make_turn()
    data, attrs = turn.to_message("ingress")
    back = Turn.from_message(data, attrs)
    # THEN it is equal, and the attributes carry the routing facts
    assert back == turn
    assert attrs["turn_id"] == turn.turn_id and attrs["layer"] == "ingress"
    assert attrs["schema_version"] == "1" and attrs["traceparent"] == turn.traceparent
    assert turn.conversation_key == "acme/r1/u1"


def test_turn_ids_sort_by_creation():
    ids = [new_turn_id() for _ in range(200)]
    assert ids == sorted(ids) and len(set(ids)) == 200 and all(len(i) == 26 for i in ids)


def test_large_body_is_offloaded_to_the_store_and_resolved():
    # GIVEN a turn whose context is bigger than the inline limit
    store = MemoryStore()
    turn = make_turn()
    turn.context.rendered = "x" * (MAX_INLINE_BYTES + 10)
    # WHEN it is serialised with a store
    data, attrs = turn.to_message("context", store)
    # THEN the message carries only a reference, and decoding restores the turn
    assert len(data) < 1000 and "body_ref" in attrs
    assert Turn.from_message(data, attrs, store).context.rendered == turn.context.rendered


def test_large_body_without_a_store_is_refused():
    turn = make_turn()
    turn.context.rendered = "x" * (MAX_INLINE_BYTES + 10)
    with pytest.raises(EnvelopeTooLarge):
        turn.to_message("context")


@pytest.mark.parametrize(
    "data,attrs",
    [
        (b"not json", {}),
        (b'{"turn_id": 1}', {}),
        (b"{}", {"schema_version": "99"}),
        (b'{"$ref": "orgs/acme/blobs/missing"}', {}),
    ],
)
def test_bad_messages_raise_envelope_errors(data, attrs):
    with pytest.raises(EnvelopeError):
        Turn.from_message(data, attrs, MemoryStore())


def test_unknown_fields_are_rejected_because_the_envelope_is_ours():
    turn = make_turn()
    raw = turn.model_dump(mode="json")
    raw["guardian_override"] = {"action": "allow"}
    with pytest.raises(EnvelopeError):
        Turn.from_message(__import__("json").dumps(raw).encode(), {})
