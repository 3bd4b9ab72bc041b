"""Announcement delivery: each recipient gets an announcement once, through the channel clients.

**Shape, and why this one.** The ``announce`` / ``send_to_all`` handler writes the outbox
document (``orgs/{org}/announcements/{id}``: recipients as user ids, ``queued``) in the
executor's effect transaction; right after that commit the executor layer calls ``deliver``
in the same run. No new layer: the executor's run is already claimed per (turn, layer, step),
so whatever interrupts a delivery (a Pub/Sub redelivery, a process killed after k of N sends)
runs it again; the tool call then replays from its receipt (no second outbox document) and
``deliver`` goes on where it stopped. A separate layer would add a topic, a function and its
Terraform wiring for the same guarantees; its one gain, delivering after the reply, would
cost the reply its truth (it could only say 「送る予定」, not how many were reached).
The cost is time inside the executor's run: one provider call per recipient, in order,
while the layer's heartbeat keeps its claim.

**Exactly once per recipient** (ARCHITECTURE.md "External effect", as the responder's send
receipt): a receipt ``orgs/{org}/announcement_receipts/{announcement}-{user}`` is claimed
``sending`` before the call and completed ``sent`` after it, and the channel gets the
stable idempotency key ``{announcement}-{user}``. A recipient whose receipt is ``sent`` is
never sent to again. A process killed between the call and the completion sends again on
redelivery under the same key (the plain-HTTP receiver and LINE's retry key drop it): that
is the one at-least-once window. A send the channel refuses (``SendResult.ok`` false, after
the client's own retries) is recorded ``failed`` and counted, and a later delivery of the
same announcement tries that recipient again; an exception is a crash and propagates, so
the layer is redelivered.

**Where a person is reached**: the directory user document's ``channels`` (channel name ->
reply handle, e.g. ``{"chatwork": {"room_id": "123"}, "line": {"to": "U…"}}``); the
announcing turn's channel first, then any other the process has a client for. A recipient
with no address is counted failed (``no_address``, on the outbox document: no receipt, as
nothing was sent), never skipped silently.

The outbox document ends ``delivered`` (everyone), ``partially_delivered`` or
``undelivered``, with ``delivered_count``, ``failed_count`` and ``failures`` (user id ->
reason).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from shared_lib import collections
from shared_lib.delivery.idempotency import Claims, ClaimState
from shared_lib.ports import Channel, OutboundReply, Store
from shared_lib.tools.directory import get_person

RECEIPT_TTL = timedelta(days=30)


@dataclass(frozen=True)
class Delivery:
    """What ``deliver`` achieved for one announcement."""

    announcement_id: str
    recipients: int
    delivered: int
    failures: dict[str, str] = field(default_factory=dict)  # user id -> reason code

    @property
    def failed(self) -> int:
        return len(self.failures)

    @property
    def status(self) -> str:
        if self.delivered == self.recipients:
            return "delivered"
        return "partially_delivered" if self.delivered else "undelivered"

    def summary(self) -> dict[str, Any]:
        """The part of the tool result the reply is phrased from."""
        return {
            "status": self.status,
            "recipients": self.recipients,
            "delivered": self.delivered,
            "failed": self.failed,
        }


def announcement_path(org_id: str, announcement_id: str) -> str:
    return collections.path("announcements", org=org_id, id=announcement_id)


def receipt_key(announcement_id: str, user_id: str) -> str:
    return f"{announcement_id}-{user_id}"


def _receipts(store: Store) -> Claims:
    return Claims(store, ttl=RECEIPT_TTL, in_progress="sending", completed="sent")


def _address(
    person: Mapping[str, Any] | None, channels: Mapping[str, Channel], prefer: str
) -> tuple[str, dict[str, str]] | None:
    """The channel and reply handle that reach ``person``; ``None`` when there is none."""
    known = (person or {}).get("channels")
    if not isinstance(known, Mapping):
        return None
    order = [prefer, *sorted(c for c in known if c != prefer)]
    for name in order:
        handle = known.get(name)
        if name in channels and isinstance(handle, Mapping):
            return name, {str(k): str(v) for k, v in handle.items() if v is not None}
    return None


def deliver(
    store: Store,
    channels: Mapping[str, Channel],
    *,
    org_id: str,
    announcement_id: str,
    text: str,
    prefer_channel: str,
    clock: Callable[[], datetime],
) -> Delivery:
    """Send ``text`` to every recipient of the announcement not yet sent to; record the outcome."""
    path = announcement_path(org_id, announcement_id)
    doc = store.get(path) or {}
    recipients = [str(r) for r in doc.get("recipients") or []]
    directory = dict(store.query(f"orgs/{org_id}/users"))  # one read for every address
    receipts = _receipts(store)
    delivered, failures = 0, dict[str, str]()
    for user_id in recipients:
        target = _address(directory.get(user_id), channels, prefer_channel)
        if target is None:  # nothing was or can be sent: the outbox document records it
            failures[user_id] = "no_address"
            continue
        key = receipt_key(announcement_id, user_id)
        receipt = collections.path("announcement_receipts", org=org_id, id=key)
        fields = {"announcement_id": announcement_id, "user_id": user_id, "at": clock()}
        # No lease (as the send receipt): a delivery finding 'sending' sends again, same key.
        claim = receipts.claim(receipt, now=clock(), lease=timedelta(0), fields=fields)
        if claim.state is ClaimState.COMPLETED:
            delivered += 1
            continue
        name, handle = target
        result = channels[name].send(
            OutboundReply(
                channel=name,
                org_id=org_id,
                room_id=handle.get("room_id") or handle.get("channel") or handle.get("to") or user_id,
                user_id=user_id,
                reply_handle=handle,
                text=text,
                idempotency_key=key,
            )
        )
        if not result.ok:
            receipts.fail(receipt, error=result.error or f"status {result.status}")
            failures[user_id] = result.error or "send_failed"
            continue
        receipts.complete(
            receipt,
            now=clock(),
            fields={**fields, "channel": name, "provider_message_id": result.provider_message_id},
        )
        delivered += 1
    outcome = Delivery(announcement_id, len(recipients), delivered, failures)
    store.set(
        path,
        {
            "status": outcome.status,
            "delivered_count": outcome.delivered,
            "failed_count": outcome.failed,
            "failures": outcome.failures,
            "delivered_at": clock(),
        },
        merge=True,
    )
    return outcome


def sender_name(store: Store, org_id: str, user_id: str) -> str:
    person = get_person(store, org_id, user_id)
    return person.name if person else ""
