"""What every layer shares: the ``Layer`` description and the idempotent runner.

``LayerRunner.handle(data, attributes)`` is what a push handler (functions-framework) or
the in-process bus calls. It decodes the turn, claims ``(turn_id, layer, step)``, runs
the layer, publishes the result with the conversation as ordering key (a smoke turn to the
smoke twin of the topic: ``Topology.route``), and completes the claim. Any exception propagates: the push handler answers 5xx and Pub/Sub redelivers,
then dead-letters.

Crashes (``shared_lib.delivery.idempotency``): the claim's short lease is renewed by a heartbeat
while the layer runs; a delivery that finds the claim held waits for the holder to finish
or for its lease to lapse (the holder died) instead of spending a delivery attempt; only
the holder releases or completes. The layer runs under what is left of the turn's processing
budget (``shared_lib.turn.budgets``: work, not the time the turn waited in a queue or for a claim),
which bounds every LLM call (``callctx.remaining``).
A step taken over more often than Pub/Sub delivers a message (every holder died while
working on it: a poison message) raises ``CrashLoop``, which dead-letters it.

A stage that nothing makes happen twice (``Layer.claimed`` false: the guardian, the authorizer)
runs without a claim: what it decides is a function of the envelope, the versioned configuration
and the clock, and what it writes is keyed by the turn (a create by a derived id, an event by a
derived id), so a redelivery runs it again and publishes the same turn and step, which the next
stage's claim (keyed by turn, layer and step, never by the message) absorbs. It saves the claim's
two writes a hop; a poison message in such a stage is dead-lettered by Pub/Sub's own count.

With ``CHARTER_FAULT_INJECTION`` a turn's text may ask a layer to fail (``[[fail:LAYER]]``,
before claiming) or to stall a few seconds while it holds its claim (``[[stall:LAYER]]``,
so a test can kill the worker mid-step), and the loop controller can be told that a turn is
already N seconds old (``[[late:N]]``: ``lateness``, the clock a test injects on the stack).
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING

from shared_lib import tracing
from shared_lib.delivery import idempotency, riders
from shared_lib.delivery.heartbeat import Heartbeat
from shared_lib.turn import budgets
from shared_lib.turn.callctx import call_context, turn_budget
from shared_lib.turn.decisions import DEFAULT, Outcome

__all__ = ["DEFAULT", "CrashLoop", "FaultInjected", "Layer", "LayerRunner", "Outcome", "lateness"]
from shared_lib.delivery.topology import TOPOLOGY
from shared_lib.errors import CharterError, LayerRetry
from shared_lib.observability.logs import log_event
from shared_lib.tracing import SpanKind
from shared_lib.turn.envelope import Turn

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Layer:
    """A layer over the ``Turn`` envelope (``run``), or one that reads its messages itself.

    ``receive`` replaces the runner's decode-claim-run-publish for a layer whose messages
    are not all turns (the observer: events, dead letters, records); it must be idempotent.
    ``claimed`` false runs the stage without a claim: only for a stage whose every write is
    keyed by the turn and whose output the next stage's claim dedupes (module docstring).
    ``needs_claim`` decides it per turn, from the envelope alone: a turn it answers ``False``
    for must be one the stage does nothing for (the shadow brain's turns it does not sample).
    ``declines`` answers a message from its attributes alone, before anything is decoded: the
    outcome for a message its subscription's filter (``topology.json``) keeps from it in the
    cloud, which the Pub/Sub emulator still pushes; ``None`` handles it.
    """

    name: str
    output_topic: str | None
    run: Callable[[Turn, Runtime], Outcome] | None = None
    receive: Callable[[Runtime, bytes, dict[str, str]], str] | None = None
    claimed: bool = True
    needs_claim: Callable[[Turn, Runtime], bool] | None = None
    declines: Callable[[dict[str, str]], str | None] | None = None


class FaultInjected(RuntimeError):
    """Raised only when CHARTER_FAULT_INJECTION is on and the turn asks for it (tests)."""


class CrashLoop(CharterError):
    """Every holder of this step died while working on it, as often as Pub/Sub delivers a message."""


STALL_SECONDS = 3.0
_LATE = re.compile(r"\[\[late:(\d{1,5})\]\]")


def lateness(turn: Turn, rt: Runtime) -> timedelta:
    """How much later than the clock a test says this turn runs (``[[late:N]]``; fault injection only)."""
    found = _LATE.search(turn.inbound.text) if rt.settings.fault_injection else None
    return timedelta(seconds=int(found.group(1))) if found else timedelta(0)


class LayerRunner:
    def __init__(self, layer: Layer, runtime: Runtime) -> None:
        self.layer = layer
        self.rt = runtime
        # the topics this layer consumes, for its span (the topology is fixed per process)
        self._topics = ",".join(
            sorted({s.topic for s in TOPOLOGY.all_subscriptions.values() if s.target == layer.name})
        )

    def handle(self, data: bytes, attributes: dict[str, str]) -> str:
        """Run one delivery under the span ``layer <name>``, a child of the publisher's span."""
        with tracing.span(
            f"layer {self.layer.name}",
            kind=SpanKind.CONSUMER,
            parent=tracing.extract(attributes),
            attributes=self._span_attributes(attributes),
        ) as span:
            result = self._handle(data, attributes)
            span.set_attribute("charter.outcome", result)
            return result

    def _span_attributes(self, attributes: dict[str, str]) -> dict[str, object]:
        step = attributes.get("step", "")
        return {
            "charter.turn_id": attributes.get("turn_id"),
            "charter.org_id": attributes.get("org_id"),
            "charter.step": int(step) if step.isdigit() else None,
            "charter.layer": self.layer.name,
            "charter.revision": self.rt.settings.revision,
            tracing.MESSAGING_SYSTEM: "gcp_pubsub",
            tracing.MESSAGING_OPERATION_TYPE: "process",
            tracing.MESSAGING_DESTINATION_NAME: self._topics,
        }

    def _handle(self, data: bytes, attributes: dict[str, str]) -> str:
        rt = self.rt
        if self.layer.declines is not None and (declined := self.layer.declines(attributes)):
            return declined
        if self.layer.receive is not None:
            return self.layer.receive(rt, data, attributes)
        turn = Turn.from_message(data, attributes, rt.store)
        tracing.annotate({"charter.org_id": turn.org_id, "charter.shadow": turn.shadow})
        self._maybe_fail(turn)
        path = idempotency.claim_path(
            turn.org_id, turn.turn_id, self.layer.name, turn.step, shadow=turn.shadow
        )
        if not self.layer.claimed or (self.layer.needs_claim and not self.layer.needs_claim(turn, rt)):
            return self._run_unclaimed(turn, path)
        claims = idempotency.layer_claims(rt.store)
        lease = timedelta(seconds=rt.settings.lease_seconds)
        claim = claims.await_claim(path, clock=rt.clock, lease=lease, wait=idempotency.claim_wait(lease))
        if claim.state is idempotency.ClaimState.COMPLETED:
            log_event("duplicate_delivery", turn=turn, layer=self.layer.name)
            return "duplicate"
        if claim.state is idempotency.ClaimState.BUSY:
            raise LayerRetry(f"{self.layer.name}: turn {turn.turn_id} is being processed")
        if claim.took_over:
            log_event("claim_taken_over", turn=turn, layer=self.layer.name, attempts=claim.attempts)
            if claim.attempts > TOPOLOGY.retry.max_delivery_attempts:  # kept held: a poison step stays so
                raise CrashLoop(f"{self.layer.name}: turn {turn.turn_id} started {claim.attempts - 1} times")
        lease_until = claim.record.get("lease_until")
        beat = Heartbeat(
            claims,
            path,
            holder=claim.holder,
            lease=lease,
            clock=rt.clock,
            held_until=lease_until if isinstance(lease_until, datetime) else None,
        )
        now = rt.clock()
        with (
            beat,
            turn_budget(budgets.begin(turn.budget, turn.deadline, now), now),
            riders.carrying() as carried,
        ):
            try:
                self._maybe_stall(turn)
                outcome = self.run(turn)
                self.forward(turn, outcome)
            except Exception:
                claims.release(path, holder=claim.holder)
                riders.flush(rt.store, carried)  # a failed attempt's call log is its evidence
                raise
        now = rt.clock()
        result = {"outcome": outcome.outcome}
        complete = partial(
            claims.complete, path, now=now, result=result, fields={"completed_at": now}, holder=claim.holder
        )
        try:  # the stage's call log entries ride on the completion's commit (``delivery.riders``)
            done = complete(held_until=beat.held_until, also=carried.take())
        except Exception as exc:  # never lost for its log: completed without the entries
            log_event(
                "llm_call_log_failed", layer="llm", severity="ERROR", error=f"{type(exc).__name__}: {exc}"
            )
            done = complete(held_until=beat.held_until)
        if not done:
            log_event("claim_superseded", turn=turn, layer=self.layer.name, lost_lease=beat.lost)
        return outcome.outcome

    def _run_unclaimed(self, turn: Turn, path: str) -> str:
        """A stage without a claim: run it and publish; a redelivery does the same again."""
        now = self.rt.clock()
        with turn_budget(budgets.begin(turn.budget, turn.deadline, now), now):
            if self._stalls(turn):
                self._show_stall(path, now)
                time.sleep(STALL_SECONDS)
            outcome = self.run(turn)
            self.forward(turn, outcome)
        return outcome.outcome

    def _show_stall(self, path: str, now: datetime) -> None:
        """Fault injection only: a stalled stage that holds no claim still shows where it is held,
        as a claim would (``in_progress`` and a holder), so a test can kill its worker mid-step."""
        holder = uuid.uuid4().hex
        self.rt.store.set(
            path,
            {
                "status": "in_progress",
                "holder": holder,
                "stalled": True,
                "expires_at": now + idempotency.CLAIM_TTL,
            },
        )

    def run(self, turn: Turn) -> Outcome:
        started, step = self.rt.clock(), turn.step  # the loop controller may move the turn on a step
        t0 = time.perf_counter()
        if self.layer.run is None:
            raise TypeError(f"layer {self.layer.name} has no run function")
        with call_context(turn, self.layer.name):
            outcome = self.layer.run(turn, self.rt.for_turn(turn))
        ms = (time.perf_counter() - t0) * 1000
        if turn.step == step:  # the loop controller gave the next step a fresh budget
            budgets.spend(turn.budget, started, self.rt.clock())
        turn.record(
            self.layer.name,
            outcome.outcome,
            reason_code=outcome.reason_code,
            started=started,
            duration_ms=ms,
            detail=outcome.detail,
            revision=self.rt.settings.revision,
            step=step,
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

    def _stalls(self, turn: Turn) -> bool:
        return self.rt.settings.fault_injection and f"[[stall:{self.layer.name}]]" in turn.inbound.text

    def _maybe_stall(self, turn: Turn) -> None:
        if self._stalls(turn):
            time.sleep(STALL_SECONDS)

    def _maybe_fail(self, turn: Turn) -> None:
        if self.rt.settings.fault_injection and f"[[fail:{self.layer.name}]]" in turn.inbound.text:
            raise FaultInjected(f"injected failure in {self.layer.name}")
