"""Ingress: verify, dedupe, publish, answer fast. It decides nothing about meaning.

``handle_http`` is the HTTP entry (functions-framework ``ingress`` target): the channel's
verification and normalisation (``shared_lib.channels.webhooks``), then ``accept``:
dedupe on the provider's event id (a ``create`` in the store) and publish to
``turns.received`` with the conversation as ordering key. The request is the span
``ingress`` (a caller's valid ``traceparent`` its parent), the root of the turn's one trace. If publishing fails the dedupe
record is removed and the provider gets a 503, so its retry is not lost.

A delivery with a valid signed smoke header (``shared_lib.rollout.smoke``) becomes a smoke
turn, published to the smoke twin of ``turns.received``; an invalid smoke header is a 401.

A plain-HTTP message is its tenant's person or nothing: ``user_id`` must be in the
organisation's directory (``orgs/{org}/users``), else the delivery is refused 403
``unknown_user`` and no turn is published; the display name is the directory's. A person
found is remembered for a short while (``Runtime.people``): a webhook from a known person
costs two round trips before its answer, the dedupe record and the publish.

A message of a channel with a debounce window (``settings.debounce_seconds``: ChatWork, LINE
and Slack by default) is also held in its sender's buffer in the room (``rt.hooks.inbound_buffer``,
lent by the debounce room: one transaction) before the publish; the context layer gathers
a burst into one turn. A text that reads as a yes or a no to a confirmation pending in its
conversation (the policy's reader first, then one read of the session only for such a text) is
written as a barrier instead, never gathered. Plain HTTP has no window by default: its callers are programs, one
request is one turn (and the burst bench measures the chain, not a wait).

While the admin's Pause holds intake (``shared_lib.delivery.intake``: read at most once per flags
lifetime while running, on every message once paused) an accepted message is stored as a held turn instead of published, never buffered:
the webhook gets its 200 and the turn is answered, in order, once Resume releases it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from shared_lib import tracing
from shared_lib.channels import DEDUPE_WINDOW
from shared_lib.delivery import intake
from shared_lib.delivery.topology import TOPOLOGY
from shared_lib.errors import CharterError
from shared_lib.observability.logs import log_event
from shared_lib.rollout.smoke import SmokeSignatureError, is_smoke
from shared_lib.tracing import SpanKind
from shared_lib.turn import budgets
from shared_lib.turn.envelope import Turn
from shared_lib.turn.inbound import InboundMessage

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


# How long a dedupe record outlives its delivery. A fixed span, not "the same date next
# year": ``replace(year=...)`` has no 29 February to land on three years in four. It is the
# window that bounds ChatWork and LINE replays (``shared_lib.channels``).
DEDUPE_RETENTION: timedelta = DEDUPE_WINDOW


def dedupe_path(msg: InboundMessage) -> str:
    key = f"{msg.channel}:{msg.org_id}:{msg.event_id}"
    return f"orgs/{msg.org_id}/webhook_events/{hashlib.sha256(key.encode()).hexdigest()[:40]}"


def accept(rt: Runtime, msg: InboundMessage, *, traceparent: str = "", smoke: bool = False) -> str | None:
    """Publish one inbound message as a new turn; ``None`` when it is a duplicate delivery.

    The turn's trace is the current span's (the request's, ``handle_http``), else the one
    ``traceparent`` names when it is valid, else a fresh one.
    """
    parent = tracing.extract({"traceparent": traceparent}) if traceparent else None
    with tracing.span(
        "ingress accept",
        kind=SpanKind.PRODUCER,
        parent=parent,
        attributes={
            "charter.layer": "ingress",
            "charter.org_id": msg.org_id,
            tracing.MESSAGING_SYSTEM: "gcp_pubsub",
            tracing.MESSAGING_OPERATION_TYPE: "send",
            tracing.MESSAGING_DESTINATION_NAME: TOPOLOGY.route("received", smoke=smoke),
        },
    ):
        return _accept(rt, msg, smoke=smoke)


def _accept(rt: Runtime, msg: InboundMessage, *, smoke: bool) -> str | None:
    path = dedupe_path(msg)
    now = rt.clock()
    turn = Turn.from_inbound(msg, traceparent=tracing.current_traceparent(), created_at=now)
    s = rt.settings  # the turn's processing budget counts work from here on, never its waits
    turn.budget = budgets.admit(now, seconds=s.turn_budget_seconds, backlog_seconds=s.backlog_seconds)
    turn.smoke, turn.ingress_revision = smoke, rt.settings.revision
    tracing.annotate({"charter.turn_id": turn.turn_id, "charter.step": 0})
    if not rt.store.create(path, {"turn_id": turn.turn_id, "at": now, "expires_at": now + DEDUPE_RETENTION}):
        log_event("webhook_duplicate", layer="ingress", channel=msg.channel, event_id=msg.event_id)
        return None
    # the admin's Pause: the turn is stored behind the held ones, answered on Resume (a smoke turn,
    # a deployment's check, is never held)
    if not smoke and rt.intake.holding(rt.store):
        try:
            if intake.hold(rt.store, turn, vault=rt.cipher(turn.org_id), now=now) is not None:
                return turn.turn_id
        except Exception:
            rt.store.delete(path)
            raise
    buffer, held = None, rt.hooks.inbound_buffer
    try:
        if held is not None and not smoke:  # a smoke turn is never gathered with a person's
            buffer = held.hold(rt, msg, entry_id=_entry_id(path), turn_id=turn.turn_id)
        data, attrs = turn.to_message("ingress", rt.store, blob_ttl_days=rt.settings.blob_ttl_days)
        rt.bus.publish(
            TOPOLOGY.route("received", smoke=smoke), data, attrs, ordering_key=turn.conversation_key
        )
    except Exception:
        if buffer and held is not None:
            held.release(rt, buffer, _entry_id(path))
        rt.store.delete(path)
        raise
    log_event("turn_received", turn=turn, layer="ingress", channel=msg.channel, smoke=smoke)
    return turn.turn_id


def _entry_id(dedupe: str) -> str:
    return dedupe.rsplit("/", 1)[-1]  # the event's: a retried delivery replaces its own entry


class UnknownPerson(CharterError):
    """A plain-HTTP message from someone the tenant's directory does not have (403)."""


def _directory_person(rt: Runtime, msg: InboundMessage) -> InboundMessage:
    """``msg`` with its sender checked against the organisation's directory (plain HTTP)."""
    if msg.channel != "http":
        return msg  # the provider names its own users; the mapping names the organisation
    person = rt.people.get(rt.store, msg.org_id, msg.user_id)
    if person is None:
        raise UnknownPerson("unknown_user")
    return msg.model_copy(update={"user_name": person.name})


def handle_http(
    rt: Runtime, channel: str, method: str, headers: Mapping[str, str], query: Mapping[str, str], body: bytes
) -> tuple[int, dict[str, Any]]:
    """One webhook request under the span ``ingress``: a child of the caller's valid
    ``traceparent`` header, else the root of a fresh trace (the turns' trace)."""
    with tracing.span(
        "ingress",
        kind=SpanKind.SERVER,
        parent=tracing.extract(headers),
        attributes={"charter.layer": "ingress", "charter.channel": channel, "http.request.method": method},
    ) as span:
        status, answer = _handle_http(rt, channel, method, headers, query, body)
        span.set_attribute("http.response.status_code", status)
        return status, answer


def _handle_http(
    rt: Runtime, channel: str, method: str, headers: Mapping[str, str], query: Mapping[str, str], body: bytes
) -> tuple[int, dict[str, Any]]:
    from shared_lib.channels.webhooks import handle_webhook

    outcome = handle_webhook(
        channel, method, headers, query, body, secrets=rt.channel_secrets, config=rt.ingress, now=rt.clock()
    )
    if outcome.rejection:
        log_event(
            "webhook_rejected",
            layer="ingress",
            severity="WARNING",
            channel=channel,
            status=outcome.status,
            reason=outcome.rejection,
        )
        return outcome.status, outcome.body
    try:
        smoke = is_smoke(channel, headers, body, rt.channel_secrets)
    except SmokeSignatureError:
        log_event(
            "webhook_rejected",
            layer="ingress",
            severity="WARNING",
            channel=channel,
            status=401,
            reason="bad_smoke_signature",
        )
        return 401, {"ok": False, "error": "unauthorized"}
    turn_ids = []
    try:
        messages = [_directory_person(rt, msg) for msg in outcome.messages]
    except UnknownPerson as exc:
        log_event(
            "webhook_rejected",
            layer="ingress",
            severity="WARNING",
            channel=channel,
            status=403,
            reason=str(exc),
        )
        return 403, {"ok": False, "error": str(exc)}
    except Exception as exc:
        log_event("directory_unavailable", layer="ingress", severity="ERROR", error=str(exc))
        return 503, {"error": "temporarily_unavailable"}
    try:
        for msg in messages:
            turn_id = accept(rt, msg, smoke=smoke)
            if turn_id:
                turn_ids.append(turn_id)
    except Exception as exc:
        log_event("publish_failed", layer="ingress", severity="ERROR", error=str(exc))
        return 503, {"error": "temporarily_unavailable"}
    body_out = dict(outcome.body)
    if turn_ids:
        body_out["turn_ids"] = turn_ids
    return outcome.status, body_out
