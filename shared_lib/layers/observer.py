"""Observer layer: records every turn once, events, dead-lettered turns and alerts.

It subscribes to ``turns.completed`` (the final envelope: one observability record per
turn, written with ``create`` so redelivery never duplicates it), ``turns.events``
(alerts and notable events), ``turns.shadow`` (comparisons) and ``turns.deadletter``
(turns that a layer could not process; always alerts).
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from shared_lib.envelope import Turn
from shared_lib.errors import EnvelopeError
from shared_lib.logs import log_event
from shared_lib.observability import observability_record
from shared_lib.sanitizer import Sanitizer

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


def record_turn(rt: Runtime, turn: Turn) -> bool:
    created = rt.store.create(f"orgs/{turn.org_id}/observability/{turn.turn_id}", observability_record(turn))
    for err in turn.errors:
        if err.alert_admin:
            rt.emit_alert(turn, err.code, err.message, publish=False)
    log_event("turn_recorded", turn=turn, layer="observer", created=created, outcome=turn.response.kind)
    return created


def record_event(rt: Runtime, payload: dict[str, Any]) -> bool:
    org = str(payload.get("org_id") or "default")
    event_id = str(payload.get("event_id"))
    created = rt.store.create(f"orgs/{org}/events/{event_id}", payload)
    if created and payload.get("kind") == "alert":
        rt.store.create(f"alerts/{event_id}", payload)
    return created


def record_dead_letter(rt: Runtime, data: bytes, attributes: dict[str, str]) -> bool:
    """A turn that a layer could not process: record it (even if undecodable) and alert."""
    try:
        turn: Turn | None = Turn.from_message(data, attributes, rt.store)
    except EnvelopeError:
        turn = None
    org = turn.org_id if turn else "unknown"
    turn_id = turn.turn_id if turn else attributes.get("turn_id") or hashlib.sha256(data).hexdigest()[:26]
    layer = attributes.get("layer", "?")
    doc = {"turn_id": turn_id, "org_id": org, "produced_by": layer,
           "subscription": attributes.get(DEAD_LETTER_ATTR, ""),
           "attributes": Sanitizer.default().mask_obj(attributes), "at": rt.clock(),
           "conversation_key": turn.conversation_key if turn else None,
           "input_message": Sanitizer.default().mask_text(turn.inbound.text) if turn else None}
    created = rt.store.create(f"orgs/{org}/failures/{turn_id}-{layer}-{attributes.get('step', '0')}", doc)
    if created:
        rt.store.create(f"alerts/dlq-{turn_id}-{layer}", {**doc, "kind": "alert", "code": "layer_failed",
                                                          "severity": "critical"})
        log_event("dead_letter", layer="observer", severity="ERROR", turn_id=turn_id, produced_by=layer)
    return created


DEAD_LETTER_ATTR = "CloudPubSubDeadLetterSourceSubscription"


def handle(rt: Runtime, data: bytes, attributes: dict[str, str]) -> str:
    """Dispatch on the message itself (push deliveries do not name their topic)."""
    if DEAD_LETTER_ATTR in attributes:
        return "dead_letter" if record_dead_letter(rt, data, attributes) else "duplicate"
    if attributes.get("kind") == "event":
        return "event" if record_event(rt, json.loads(data)) else "duplicate"
    turn = Turn.from_message(data, attributes, rt.store)
    if turn.shadow:
        rt.store.create(f"orgs/{turn.org_id}/shadow_candidates/{turn.turn_id}-{turn.step}",
                        observability_record(turn))
        return "shadow"
    return "recorded" if record_turn(rt, turn) else "duplicate"
