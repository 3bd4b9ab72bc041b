"""Glue between functions-framework and the layers: one cached runtime per process and
the decoding of Pub/Sub push deliveries (CloudEvents).

A layer error propagates, so functions-framework answers 500 and Pub/Sub redelivers
(then dead-letters). ``LayerRetry`` (another delivery held the claim longer than it could
wait) does the same.

The Pub/Sub emulator never dead-letters a subscription with message ordering (checked
on gcloud 528: after ``max_delivery_attempts`` it silently stops delivering). With
``CHARTER_DEADLETTER_FALLBACK=1`` (the local stack sets it) the handler counts failed
deliveries of a message in the store and, on the last allowed attempt, publishes it to
``turns.deadletter`` itself with the attributes Pub/Sub would add, then acknowledges it.
A worker killed mid-step answers nothing, so nothing counts that delivery here; the layer
claim does (each takeover is one more start of the step): ``CrashLoop`` is dead-lettered
at once. In the cloud the setting stays off and Pub/Sub's own dead-letter policy applies.
"""

from __future__ import annotations

import base64
import gc
import hashlib
import threading
from datetime import timedelta
from typing import Any

from shared_lib import collections
from shared_lib.delivery.idempotency import Claims
from shared_lib.delivery.topology import TOPOLOGY
from shared_lib.errors import EnvelopeError, LayerRetry
from shared_lib.layers.base import CrashLoop
from shared_lib.observability.logs import log_event
from shared_lib.runtime import Runtime
from shared_lib.settings import Settings
from shared_lib.settings.memory import EMBED_TARGETS
from shared_lib.wiring.composition import build_runtime, runner

_lock = threading.Lock()
_runtime: Runtime | None = None


def get_runtime() -> Runtime:
    global _runtime
    with _lock:
        if _runtime is None:
            # a served function never defaults to local: CHARTER_ENV must be said
            _runtime = build_runtime(settings=Settings.from_env().served())
            _warm_embedder(_runtime)
            settle_heap()
        return _runtime


def settle_heap() -> None:
    """Set what a serving process built at start (modules, clients, the runtime) apart from the
    collector (``gc.freeze``): it lives as long as the process, yet every full collection walked
    it again, turn after turn; frozen, a collection walks only what turns made. Called once, after
    the runtime is built (the in-process bench does the same, to measure what a function runs).
    A cycle among what is frozen is never collected: nothing built at start becomes garbage."""
    gc.collect()
    gc.freeze()


def _warm_embedder(rt: Runtime) -> None:
    """A service that embeds loads a local model at start, in the background, so its first
    search or memory save does not pay for it (a remote embedder has nothing to warm)."""
    warm = getattr(rt.embedder, "warm", None)
    if callable(warm) and rt.settings.target in EMBED_TARGETS:
        threading.Thread(target=warm, name="embedder-warm", daemon=True).start()


def decode_push(data: Any) -> tuple[bytes, dict[str, str]]:
    """The Pub/Sub message inside a push delivery (raw push body or CloudEvent data)."""
    if not isinstance(data, dict) or not isinstance(data.get("message"), dict):
        raise EnvelopeError("not a Pub/Sub push delivery")
    message = data["message"]
    try:
        raw = base64.b64decode(message.get("data") or "", validate=True)
    except (ValueError, TypeError) as exc:
        raise EnvelopeError(f"message data is not base64: {exc}") from exc
    attributes = {str(k): str(v) for k, v in (message.get("attributes") or {}).items()}
    if "deliveryAttempt" in data:
        attributes.setdefault("delivery_attempt", str(data["deliveryAttempt"]))
    return raw, attributes


def run_target(target: str, cloud_event: Any) -> str:
    rt = get_runtime()
    data, attributes = decode_push(cloud_event.data)
    try:
        return runner(rt, target).handle(data, attributes)
    except Exception as exc:
        log_event(
            "layer_failed",
            layer=target,
            severity="ERROR",
            error=f"{type(exc).__name__}: {exc}",
            turn_id=attributes.get("turn_id"),
        )
        if not isinstance(exc, LayerRetry) and dead_letter_fallback(
            rt, target, cloud_event, data, attributes, last=isinstance(exc, CrashLoop)
        ):
            return "dead_lettered"
        raise


# Longer than Pub/Sub keeps an unacknowledged message (7 days by default).
DELIVERY_ATTEMPTS_TTL = timedelta(days=8)


def dead_letter_fallback(
    rt: Runtime, target: str, cloud_event: Any, data: bytes, attributes: dict[str, str], *, last: bool = False
) -> bool:
    """Count this failed delivery; on the last allowed attempt (or ``last``), dead-letter it ourselves."""
    subscription = _subscription(cloud_event, target)
    if not rt.settings.deadletter_fallback or not TOPOLOGY.all_subscriptions[subscription].dead_letter:
        return False
    message_id = str(cloud_event.data["message"].get("messageId") or cloud_event["id"])
    key = hashlib.sha256(f"{target}:{message_id}:".encode() + data).hexdigest()[:40]
    path = collections.path("delivery_attempts", id=key)
    now = rt.clock()
    # Each failed delivery takes the leaseless claim over: its attempt count is the count.
    counter = Claims(rt.store, ttl=DELIVERY_ATTEMPTS_TTL)
    attempts = counter.claim(path, now=now, lease=timedelta(0), fields={"target": target, "at": now}).attempts
    if attempts < TOPOLOGY.retry.max_delivery_attempts and not last:
        return False
    rt.bus.publish(
        "deadletter",
        data,
        {
            **attributes,
            "CloudPubSubDeadLetterSourceSubscription": subscription,
            "CloudPubSubDeadLetterSourceDeliveryCount": str(attempts),
        },
        "",
    )
    log_event(
        "dead_lettered_by_handler",
        layer=target,
        severity="ERROR",
        turn_id=attributes.get("turn_id"),
        attempts=attempts,
    )
    return True


def _subscription(cloud_event: Any, target: str) -> str:
    """The subscription that pushed this delivery (push bodies name it), else the target's first."""
    named = str((cloud_event.data or {}).get("subscription") or "").rsplit("/", 1)[-1]
    if named in TOPOLOGY.all_subscriptions:
        return named
    return next(n for n, s in TOPOLOGY.subscriptions.items() if s.target == target)
