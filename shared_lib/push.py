"""Glue between functions-framework and the layers: one cached runtime per process and
the decoding of Pub/Sub push deliveries (CloudEvents).

A layer error propagates, so functions-framework answers 500 and Pub/Sub redelivers
(then dead-letters). ``LayerRetry`` (another delivery holds the claim) does the same.
"""

from __future__ import annotations

import base64
import threading
from typing import Any

from shared_lib.errors import EnvelopeError
from shared_lib.layers import observer
from shared_lib.logs import log_event
from shared_lib.runtime import Runtime, build_runtime

_lock = threading.Lock()
_runtime: Runtime | None = None


def get_runtime() -> Runtime:
    global _runtime
    with _lock:
        if _runtime is None:
            _runtime = build_runtime()
        return _runtime


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
        if target == "observer":
            return observer.handle(rt, data, attributes)
        return rt.runner(target).handle(data, attributes)
    except Exception as exc:
        log_event("layer_failed", layer=target, severity="ERROR", error=f"{type(exc).__name__}: {exc}",
                  turn_id=attributes.get("turn_id"))
        raise
