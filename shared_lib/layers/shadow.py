"""Brain-shadow layer: on ``turns.contextualized`` (its own subscription), runs the
candidate arm through brain, guardian, authorizer and a dry-run executor and responder.

It never executes an effect (the executor dry-runs: parameters are validated, handlers get
no transaction; a read has no effect and returns its real result), never writes session
state, never sends a message. The candidate takes its loop's steps here, in the worker:
after a step of reads only the loop controller decides as for a served turn (same limits),
until a step proposes an effect or the loop stops (``shadow.next_step``), so a request the
candidate does in two steps (search, then act) is compared by what it would have done. It runs on a deep
copy of the turn in a worker thread with its own timeout, so a slow or crashing
candidate is recorded (an error from ``brain_shadow`` on the candidate) and never raised
into, or waited on by, the served arm. The candidate envelope (``shadow=True``) goes to
``turns.shadow``, where the observer stores it and ``shared_lib.rollout.comparison``
compares it with the served turn.

A candidate is run only when the flags sampled this person (``shadow_candidate_arm``),
on the served turn's first step, without a pending confirmation (the served arm answers those from
state, whatever the brain), and only if the candidate arm can really run: an LLM
candidate without a configured LLM would fall back to the legacy brain and compare
legacy with itself, which would inflate the agreement.

On Pub/Sub the candidate has its own subscription and instances, so it cannot slow the
served arm. The embedded in-process bus delivers synchronously, so there the timeout is
what bounds the delay.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from shared_lib.errors import BrainError
from shared_lib.layers import authorizer, brain, executor, guardian, responder
from shared_lib.layers.base import Layer, LayerRunner, Outcome
from shared_lib.rollout.comparison import SHADOW_LAYER
from shared_lib.turn.envelope import Turn

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime

log = logging.getLogger(__name__)
CANDIDATE_LAYERS = (brain.LAYER, guardian.LAYER, authorizer.LAYER, executor.LAYER, responder.LAYER)


def timeout_seconds(rt: Runtime) -> float:
    """``CHARTER_SHADOW_TIMEOUT`` (45 s by default: below the subscription's 60 s ack deadline)."""
    return rt.settings.shadow_timeout_seconds


def skip_reason(turn: Turn, rt: Runtime) -> str | None:
    if turn.shadow:
        return "already_candidate"
    if turn.step > 0:
        return "later_step"
    if turn.job is not None:  # a delegated job's turn is not a person's request: nothing to compare
        return "job"
    if not turn.candidate_expected():
        if turn.route.local_only and turn.flags.shadow_candidate_arm and not turn.context.pending_action:
            return "local_only"
        return "pending_action" if turn.context.pending_action else "off"
    if turn.flags.shadow_candidate_arm == "llm" and rt.llm is None:
        return "llm_unconfigured"
    return None


def _run_candidate(candidate: Turn, rt: Runtime) -> None:
    """The candidate's loop, every step in this worker thread: a step of reads only may be
    followed by another (``shadow.next_step`` in the stage table answers ``continue``); a step
    that proposes an effect, or the controller's stop, ends it. Never published between steps."""
    while _run_step(candidate, rt) == "continue":
        pass


def _run_step(candidate: Turn, rt: Runtime) -> str:
    outcome = ""
    for layer in CANDIDATE_LAYERS:
        try:
            outcome = LayerRunner(layer, rt).run(candidate).outcome
        except Exception as exc:  # recorded, never raised into the served arm
            log.warning("shadow candidate failed in %s: %s", layer.name, exc)
            candidate.add_error(
                BrainError.of(
                    "execution_error",
                    f"shadow {layer.name}: {type(exc).__name__}: {exc}",
                    layer=SHADOW_LAYER,
                    failed_layer=layer.name,
                    step=candidate.step,
                )
            )
            return "failed"
    return outcome


def run(turn: Turn, rt: Runtime) -> Outcome:
    reason = skip_reason(turn, rt)
    if reason:
        return Outcome("not_sampled", reason_code=f"shadow.{reason}", next_topic=None)
    candidate = turn.model_copy(deep=True)
    candidate.shadow = True
    worker = threading.Thread(
        target=_run_candidate, args=(candidate, rt), name=f"shadow-{turn.turn_id}", daemon=True
    )
    limit = timeout_seconds(rt)
    worker.start()
    worker.join(limit)
    if worker.is_alive():
        # The worker keeps its own copy; what it does after this point is never published.
        turn.shadow = True
        turn.add_error(
            BrainError.of(
                "execution_error",
                f"shadow candidate timed out after {limit:g} s",
                layer=SHADOW_LAYER,
                failure="timeout",
            )
        )
        return Outcome("candidate_timeout", reason_code="shadow.timeout")
    for name in Turn.model_fields:
        setattr(turn, name, getattr(candidate, name))
    failed = any(e.layer == SHADOW_LAYER for e in turn.errors)
    return Outcome(
        "candidate_failed" if failed else "candidate", reason_code=f"shadow.{turn.flags.shadow_candidate_arm}"
    )


def needs_claim(turn: Turn, rt: Runtime) -> bool:
    """Only a sampled turn calls the candidate's LLM; any other is answered ``not_sampled`` from
    the envelope and the flags it carries, publishing nothing: run again, it does nothing again."""
    return skip_reason(turn, rt) is None


def declines(attributes: dict[str, str]) -> str | None:
    """A turn its publisher marked as wanting no candidate (``Turn.wants_candidate``, the filter of
    brain-shadow-sub) is ``not_sampled`` without decoding it; unmarked (a publisher of an earlier
    revision), it is decoded and decided as ever."""
    return "not_sampled" if attributes.get("candidate") == "0" else None


LAYER = Layer("brain_shadow", "shadow", run, needs_claim=needs_claim, declines=declines)
