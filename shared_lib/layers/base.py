"""What every layer shares: the ``Layer`` description and the idempotent runner.

``LayerRunner.handle(data, attributes)`` is what a push handler (functions-framework) or
the in-process bus calls. It decodes the turn, claims ``(turn_id, layer, step)``, runs
the layer, publishes the result with the conversation as ordering key (a smoke turn to the
smoke twin of the topic: ``Topology.route``), and completes the claim. Any exception propagates: the push handler answers 5xx and Pub/Sub redelivers,
then dead-letters.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from shared_lib import idempotency
from shared_lib.callctx import call_context
from shared_lib.decisions import DEFAULT, Outcome

__all__ = ["DEFAULT", "FaultInjected", "Layer", "LayerRunner", "Outcome"]
from shared_lib.envelope import Turn
from shared_lib.errors import LayerRetry
from shared_lib.logs import log_event
from shared_lib.topology import TOPOLOGY

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Layer:
    """A layer over the ``Turn`` envelope (``run``), or one that reads its messages itself.

    ``receive`` replaces the runner's decode-claim-run-publish for a layer whose messages
    are not all turns (the observer: events, dead letters, records); it must be idempotent.
    """

    name: str
    output_topic: str | None
    run: Callable[[Turn, Runtime], Outcome] | None = None
    receive: Callable[[Runtime, bytes, dict[str, str]], str] | None = None


class FaultInjected(RuntimeError):
    """Raised only when CHARTER_FAULT_INJECTION is on and the turn asks for it (tests)."""


class LayerRunner:
    def __init__(self, layer: Layer, runtime: Runtime) -> None:
        self.layer = layer
        self.rt = runtime

    def handle(self, data: bytes, attributes: dict[str, str]) -> str:
        rt = self.rt
        if self.layer.receive is not None:
            return self.layer.receive(rt, data, attributes)
        turn = Turn.from_message(data, attributes, rt.store)
        self._maybe_fail(turn)
        path = idempotency.claim_path(
            turn.org_id, turn.turn_id, self.layer.name, turn.step, shadow=turn.shadow
        )
        claims = idempotency.layer_claims(rt.store)
        claim = claims.claim(path, now=rt.clock(), lease=timedelta(seconds=rt.settings.lease_seconds))
        if claim.state is idempotency.ClaimState.COMPLETED:
            log_event("duplicate_delivery", turn=turn, layer=self.layer.name)
            return "duplicate"
        if claim.state is idempotency.ClaimState.BUSY:
            raise LayerRetry(f"{self.layer.name}: turn {turn.turn_id} is being processed")
        try:
            outcome = self.run(turn)
            self.forward(turn, outcome)
        except Exception:
            claims.release(path)
            raise
        now = rt.clock()
        claims.complete(path, now=now, result={"outcome": outcome.outcome}, fields={"completed_at": now})
        return outcome.outcome

    def run(self, turn: Turn) -> Outcome:
        started = self.rt.clock()
        t0 = time.perf_counter()
        if self.layer.run is None:
            raise TypeError(f"layer {self.layer.name} has no run function")
        with call_context(turn, self.layer.name):
            outcome = self.layer.run(turn, self.rt)
        ms = (time.perf_counter() - t0) * 1000
        turn.record(
            self.layer.name,
            outcome.outcome,
            reason_code=outcome.reason_code,
            started=started,
            duration_ms=ms,
            detail=outcome.detail,
            revision=self.rt.settings.revision,
        )
        log_event(
            "layer_done",
            turn=turn,
            layer=self.layer.name,
            outcome=outcome.outcome,
            reason_code=outcome.reason_code,
            duration_ms=round(ms, 2),
        )
        return outcome

    def forward(self, turn: Turn, outcome: Outcome) -> None:
        topic = self.layer.output_topic if outcome.next_topic == DEFAULT else outcome.next_topic
        if topic is None:
            return
        data, attrs = turn.to_message(
            self.layer.name, self.rt.store, blob_ttl_days=self.rt.settings.blob_ttl_days
        )
        # a smoke turn goes to the twin topic: only the candidate revisions read it
        self.rt.bus.publish(
            TOPOLOGY.route(topic, smoke=turn.smoke), data, attrs, ordering_key=turn.conversation_key
        )

    def _maybe_fail(self, turn: Turn) -> None:
        if self.rt.settings.fault_injection and f"[[fail:{self.layer.name}]]" in turn.inbound.text:
            raise FaultInjected(f"injected failure in {self.layer.name}")
