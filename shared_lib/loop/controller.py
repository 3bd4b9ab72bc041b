"""The loop controller (seed 002 §3): after a step's result, answer or take another step.

Fixed logic over what the deciding layers already decided; the model's ``loop`` block is a
proposal like any other. ``decide(turn, limits, now)`` reads the step that just ran (its
proposal, verdict, authorization and results) and returns ``continue`` only when all hold:

* the step ran tools, all of them succeeded, and nothing is waiting for the user: a
  CONFIRM pauses the turn (the confirmation message is the reply), a BLOCK or a deny ends it;
* the step's hand-over (``hand_over.HandOver``, strictly typed: an invalid one is
  ``worker.fail``) asks for a next step, with no questions for the user, ``risk`` not
  ``high`` and, on a consequential branch, a confidence of at least ``limits.min_confidence``;
* fewer than ``max_loops`` steps ran and less than ``max_millis`` went by since the first.

What a step says to the user is never lost: questions for the user or ``risk`` high stop the
loop with ``need_user_confirmation`` whatever else the step said (``needs_next_loop`` false,
a text answer, a re-route, a tool that failed, a brain that could not take another step), and
the responder sends the questions.

A re-route (§3.3, §3.4) is taken at most once per input: ``fit`` false with a valid
``suggested_route``, or the conversation model's ``propose_next_loop`` with a ``route``. It
never overrides the user's explicit command (``/chat …`` stays CHAT), and a re-route to CODE
needs what the router needs to adopt CODE (seed 003 §3.3, 002 §2.4): a confidence of at least
``CODE_MIN_CONFIDENCE`` and strong evidence the CODE rules find in the user's own input. A
re-route refused is recorded (``LoopDecision.reroute_refused``: ``explicit_command``,
``code_without_evidence``, …).
On a channel fixed to CHAT (LINE, seed 002 §2.6) a reply's DELEGATE block is the
step's re-route request (``routing.delegate``; a broken block is a ``worker.fail``).

Error recovery (seed 004 §6.3: a step that ends in ERROR goes back to planning; seed 002 §10.1
``retry_max = 2`` 連続リトライ回数制限): a step whose failed calls were all the model's own
mistakes, refused by the charter's checks before any effect (``RECOVERABLE``,
``MODEL_MISTAKES``: malformed parameters, an id that does not exist), is followed by a recovery
step, in which the model sees the failure and
plans again, within the loop's limits. At most ``limits.retry_max`` recovery steps in a row:
the next failure stops the loop with ``worker_failure`` (``retry_max 2``). A failure whose
effect may have happened (a timeout, a provider's error) is never retried by the loop.

Stop reasons: ``done``, ``blocked``, ``denied``, ``worker_failure`` (also: the retry limit),
``need_user_confirmation``
(``confirm``: the turn pauses; or the step's questions, risk or low confidence),
``max_loops``, ``max_millis``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from pydantic import ValidationError

from shared_lib.loop.hand_over import hand_over_problem
from shared_lib.routing import delegate
from shared_lib.routing.config import RoutingConfig, load_routing_config
from shared_lib.routing.rules import code_evidence
from shared_lib.turn.envelope import WorkerOutput
from shared_lib.turn.proposal import ClarificationProposal, TextResponseProposal

CODE_MIN_CONFIDENCE = 0.8
# A failed call the loop recovers from: the charter's checks refused the model's own parameters
# before anything ran (``validation_error`` of the schema, ``fields``; or an id the model made up),
# so planning again is safe and may succeed. What the person said that cannot be found or read
# (「山田さん」 not in the directory, a date that does not exist) is theirs to fix: no retry.
RECOVERABLE = frozenset({"validation_error"})
MODEL_MISTAKES = frozenset({"item_unknown", "item_index", "person_unknown_id", "person_id_mismatch"})
ROUTES = frozenset({"CHAT", "PLAN", "ANALYZE", "OPS", "RESEARCH", "CODE"})
CODE_WORKERS = frozenset({"CODE1", "CODE2", "CODE3"})


@dataclass(frozen=True)
class LoopLimits:
    max_loops: int = 3
    max_millis: int = 90_000
    min_confidence: float = 0.7  # below it, a step that acts again asks the user first
    retry_max: int = 2  # recovery steps in a row after a failed step (seed 002 §10.1)


@dataclass(frozen=True)
class LoopDecision:
    action: Literal["continue", "stop"]
    reason: str  # the stop reason, or ``continue`` / ``reroute``
    worker: WorkerOutput
    detail: str = ""
    error: str = ""  # why the step's hand-over failed (``worker.fail``)
    reroute: str | None = None  # the route the next step takes
    reroute_refused: str | None = None  # ``ROUTE: why`` when the step asked for a re-route refused
    events: list[dict[str, Any]] = field(default_factory=list)


def worker_output(turn: Any) -> tuple[WorkerOutput, str]:
    """The step's hand-over, validated (seed 002 §4.4, §5); ``(output, error)``. A tool that
    failed or an invalid block is a failure, and a failure never asks for another step."""
    p = turn.proposal.proposal
    results = turn.execution.results
    summary = "; ".join(
        f"{r.tool_name}:{'ok' if r.ok else r.error_code or 'failed'}"
        + (f" count={r.result['count']}" if isinstance(r.result.get("count"), int) else "")
        for r in results
    )
    confidence = p.confidence if p is not None else 0.0
    raw = dict(p.root.loop or {}) if p is not None else {}
    if problem := hand_over_problem(raw):
        return WorkerOutput(result=summary[:500], confidence=confidence), f"invalid_worker_output: {problem}"
    raw.pop("result", None)
    if "propose_next_loop" in raw or "route" in raw:  # §3.4, the conversation model's interface
        proposed = raw.pop("propose_next_loop", False)
        route = raw.pop("route", None)
        raw.pop("confidence", None)
        if proposed is True and isinstance(route, str):
            raw.setdefault("fit", False)
            raw.setdefault("suggested_route", route)
    raw.pop("reason", None)
    delegation = delegation_of(turn)
    if delegation.error:
        return (
            WorkerOutput(result=summary[:500], confidence=confidence),
            f"invalid_worker_output: delegate: {delegation.error}"[:200],
        )
    if delegation.delegation is not None:
        raw.update(fit=False, suggested_route=delegation.delegation.route.value)
    try:
        out = WorkerOutput.model_validate(
            {**raw, "result": summary[:500], "confidence": confidence}, strict=True
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first.get("loc", ()))
        return (
            WorkerOutput(result=summary[:500], confidence=confidence),
            f"invalid_worker_output: {where}: {first.get('msg', '')}"[:200],
        )
    asks = [q.strip() for q in out.questions_for_user if q.strip()]  # a blank question asks nothing
    out = out.model_copy(update={"questions_for_user": asks})
    failed = next((r for r in results if not r.ok), None)
    if failed is not None:
        out = out.model_copy(update={"needs_next_loop": False})
        return out, f"tool_failed: {failed.tool_name}: {failed.error_code or 'failed'}"
    return out, ""


def delegation_of(turn: Any) -> delegate.Reading:
    """The DELEGATE block of the step's reply, read only where the channel fixed the input to
    CHAT and the one re-route is still to be taken (elsewhere the lines are plain text)."""
    root = turn.proposal.proposal.root if turn.proposal.proposal is not None else None
    if not getattr(turn.route, "forced", None) or turn.loop.reroute_used:
        return delegate.Reading()
    if not isinstance(root, TextResponseProposal):
        return delegate.Reading()
    return delegate.read(root.text_response)


def done(turn: Any, detail: str) -> LoopDecision:
    """Stop after this step whatever it asked (a shadow candidate's dry run is one step)."""
    worker, error = worker_output(turn)
    return LoopDecision("stop", "done", worker, detail=detail, error=error)


def decide(
    turn: Any,
    limits: LoopLimits,
    now: datetime,
    *,
    can_continue: bool = True,
    routing: RoutingConfig | None = None,
) -> LoopDecision:
    """What follows the step that just ran (see the module docstring). ``can_continue`` false:
    no brain could take another step (the legacy arm, local-only, the kill switch);
    ``routing``: the rule dictionary a re-route to CODE is checked with (the configured one)."""
    worker, error = worker_output(turn)
    number = len(turn.loop.steps) + 1  # this step's place in the loop
    p, g, a = turn.proposal.proposal, turn.guardian, turn.authorization
    reroute, refused = _reroute(turn, worker, routing) if p is not None else (None, None)

    def stop(reason: str, detail: str = "") -> LoopDecision:
        return LoopDecision("stop", reason, worker, detail=detail, error=error, reroute_refused=refused)

    def go(reason: str, detail: str = "") -> LoopDecision:
        return LoopDecision(
            "continue", reason, worker, detail=detail, reroute=reroute, reroute_refused=refused
        )

    asks_user = bool(worker.questions_for_user) or worker.risk == "high"
    if p is None:
        return stop("done", "no proposal")
    if not can_continue and not asks_user:
        return stop("done", "single step")
    if g is not None and g.blocked:
        return stop("blocked", g.reason_code)
    if a is not None and a.result == "denied":
        return stop("denied", a.reason_code)
    if g is not None and g.action == "confirm" and p.tool_calls:
        return stop("need_user_confirmation", f"confirm:{g.reason_code}")
    if isinstance(p.root, ClarificationProposal):
        return stop("need_user_confirmation", "clarification")
    if error.startswith("invalid_worker_output"):
        return stop("worker_failure", error)
    # what the step says to the user reaches the user, whatever else it said (seed 002 §3.2)
    if worker.questions_for_user:
        return stop("need_user_confirmation", "questions_for_user")
    if worker.risk == "high":
        return stop("need_user_confirmation", "risk=high")
    if not p.tool_calls or not turn.execution.results:
        if reroute and number < limits.max_loops:
            return go("reroute", f"route {reroute}")
        return stop("done", p.output_type)
    if error:
        return _recover(turn, limits, now, worker, error, number)
    if not worker.needs_next_loop and reroute is None:
        return stop("done", "needs_next_loop=false")
    if worker.confidence < limits.min_confidence:
        return stop("need_user_confirmation", f"confidence {worker.confidence:.2f}")
    if number >= limits.max_loops:
        return stop("max_loops", f"{number} steps")
    elapsed_ms = (now - started_at(turn)).total_seconds() * 1000
    if elapsed_ms >= limits.max_millis:
        return stop("max_millis", f"{elapsed_ms:.0f} ms")
    return go("reroute" if reroute else "continue")


def _recover(
    turn: Any, limits: LoopLimits, now: datetime, worker: WorkerOutput, error: str, number: int
) -> LoopDecision:
    """After a failed step: a recovery step while the seed's retry limit allows, else the stop."""

    def stop(reason: str, detail: str) -> LoopDecision:
        return LoopDecision("stop", reason, worker, detail=detail, error=error)

    if not recoverable(turn):
        return stop("worker_failure", error)
    if (retries := failed_in_a_row(turn)) >= limits.retry_max:
        return stop("worker_failure", f"retry_max {limits.retry_max}: {error}")
    if number >= limits.max_loops:
        return stop("max_loops", f"{number} steps")
    elapsed_ms = (now - started_at(turn)).total_seconds() * 1000
    if elapsed_ms >= limits.max_millis:
        return stop("max_millis", f"{elapsed_ms:.0f} ms")
    return LoopDecision("continue", "recover", worker, detail=f"retry {retries + 1}", error=error)


def recoverable(turn: Any) -> bool:
    """Every failed call of the step ran nothing and asks no one to clarify (see the docstring)."""
    failed = [r for r in turn.execution.results if not r.ok]
    return bool(failed) and all(_models_mistake(r) for r in failed)


def _models_mistake(r: Any) -> bool:
    if r.error_code not in RECOVERABLE or r.result.get("clarification"):  # a choice is the person's
        return False
    return bool(r.result.get("fields")) or r.result.get("error_key") in MODEL_MISTAKES


def failed_in_a_row(turn: Any) -> int:
    """How many of the finished steps, counted back from the last, failed (each was recovered)."""
    count = 0
    for step in reversed(turn.loop.steps):
        if not any(not r.ok for r in step.results):
            break
        count += 1
    return count


def started_at(turn: Any) -> datetime:
    """When the loop's first step began, on the runtime's clock (its first layer's start)."""
    if turn.loop.started_at is not None:
        return turn.loop.started_at  # type: ignore[no-any-return]
    starts = [t.started_at for t in turn.timings.values()]
    return min(starts) if starts else turn.created_at  # type: ignore[no-any-return]


def _reroute(turn: Any, worker: WorkerOutput, routing: RoutingConfig | None) -> tuple[str | None, str | None]:
    """``(route, refused)``: the route of the re-route the step asks for when the charter takes
    it, else why it is refused (``ROUTE: reason``); ``(None, None)`` when none was asked for."""
    route = (worker.suggested_route or "").strip().upper()
    route = "CODE" if route in CODE_WORKERS else route  # seed 002 §3.4: CODE1-3 are CODE's workers
    if worker.fit is not False or not route or route == turn.route.route:
        return None, None  # no re-route asked for (staying on the route is none)
    if route not in ROUTES:
        return None, f"{route[:20]}: unknown_route"
    if turn.loop.reroute_used:
        return None, f"{route}: reroute_used"  # seed 003: once per input
    if turn.route.source == "command":
        return None, f"{route}: explicit_command"  # the user's command is stronger than the model
    if route == "CODE":
        if turn.route.local_only:
            return None, "CODE: local_only"
        if worker.confidence < CODE_MIN_CONFIDENCE:
            return None, f"CODE: low_confidence {worker.confidence:.2f}"
        if code_evidence(user_text(turn), routing or load_routing_config()) is None:
            return None, "CODE: no_strong_evidence"
    return route, None


def user_text(turn: Any) -> str:
    """What the user asked in this loop: the paused request of a resumed loop, else the input
    after its leading commands (the model's own words are never evidence)."""
    request = str(getattr(turn.loop, "request", "") or "")
    return request or str(turn.brain_text())
