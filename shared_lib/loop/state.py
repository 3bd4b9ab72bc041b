"""What the loop controller writes on the turn: the finished step, the next one, the stop.

The responder calls these (it is the controller's layer): ``take_step`` moves the step that
just ran into ``turn.loop.steps`` and readies the envelope for the brain (``step + 1``, a
fresh per-step budget inside the loop's), ``stop`` records why the loop ended. Each writes
the seed 002 §7.1 events with the §7.2 fields on ``turn.loop.events`` (a CODE step's plan and
diff: ``coder.plan_generated``); the observer keeps
them in the record and ``charter turns show`` prints them.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from shared_lib.ids import short_id_for
from shared_lib.loop.controller import LoopDecision, delegation_of, started_at
from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.turn import budgets
from shared_lib.turn.envelope import Turn


def _event(turn: Turn, name: str, **fields: Any) -> None:
    turn.loop.events.append({"event": name, "step": len(turn.loop.steps) + 1, **fields})


def _worker_event(turn: Turn, decision: LoopDecision) -> None:
    if not turn.execution.results and not decision.error:
        return
    w = decision.worker
    _event(
        turn,
        "worker.fail" if decision.error else "worker.success",
        route=turn.route.route,
        needs_next_loop=w.needs_next_loop,
        risk=w.risk,
        fit=w.fit,
        confidence=w.confidence,
        error_reason=decision.error or None,
    )


def _refused(turn: Turn, decision: LoopDecision) -> None:
    """A re-route the step asked for and the controller refused is kept on the loop (the first
    one: a loop takes or refuses its one re-route) and said on the ``final.route`` event."""
    if decision.reroute_refused and turn.loop.reroute_refused is None:
        turn.loop.reroute_refused = decision.reroute_refused


def _coder_event(turn: Turn) -> None:
    """The Coder's plan and diff of a CODE step (seed 002 §5.1, §7.1 ``coder.plan_generated``), with
    the approval job it belongs to (the charter's id of this step's job, §6.2, §7.3), masked."""
    p = turn.proposal.proposal
    plan = p.root.coder if p is not None else None
    if plan is None or turn.route.route != "CODE":
        return
    masker = Sanitizer.default()
    _event(
        turn,
        "coder.plan_generated",
        route=turn.route.route,
        job_id=short_id_for("J", f"{turn.turn_id}:{turn.step}"),
        risk=plan.risk,
        need_approval=plan.need_approval,
        patch_lines=len(plan.patch.splitlines()),
        cost_hint=masker.mask_text(plan.cost_hint) if plan.cost_hint else None,
        coder_output=masker.mask_text(plan.summary()),
    )


def _delegated(turn: Turn) -> dict[str, Any]:
    """The DELEGATE hand-over behind a re-route, if one was (its task masked, seed 002 §7)."""
    found = delegation_of(turn).delegation
    if found is None:
        return {}
    return {"via": "DELEGATE", "coder": found.coder, "task": Sanitizer.default().mask_text(found.task)}


def take_step(
    turn: Turn, decision: LoopDecision, now: datetime, *, step_seconds: float, max_millis: int
) -> None:
    """Hand the turn back to the brain for its next step."""
    loop = turn.loop
    loop.started_at = started_at(turn)
    _worker_event(turn, decision)
    _refused(turn, decision)
    _coder_event(turn)
    if decision.reroute:
        _event(
            turn,
            "route.override",
            initial_route=turn.route.route,
            final_route=decision.reroute,
            **_delegated(turn),
        )
        loop.reroute_used = True
    loop.steps.append(turn.current_step(decision.worker))
    # the verdict and the gate belong to the step that is now in ``loop.steps``: the next step
    # has none until its own guardian and gate judge its own proposal, so the executor can never
    # run a later step's write on an earlier step's allow (seed 004 §9 "gate before any write")
    turn.guardian = turn.authorization = None
    if decision.reroute:
        # the router's source stays (its decision); the override is the route.override event
        turn.route = turn.route.model_copy(update={"route": decision.reroute})
    turn.step += 1
    # each step gets the per-step budget of work a first step gets, never more than the loop had
    # left when it handed the step on (the wait before the next step is not work: budgets.py)
    end = min(now + timedelta(seconds=step_seconds), loop.started_at + timedelta(milliseconds=max_millis))
    budgets.new_step(turn.budget, max(0.0, (end - now).total_seconds()))
    if turn.deadline is not None:  # an absolute bound (a job's, an older ingress's) moves on as before
        turn.deadline = max(turn.deadline, end)


def stop(turn: Turn, decision: LoopDecision) -> None:
    """The loop ends with this step: its events and the §7.2 summary."""
    loop = turn.loop
    _worker_event(turn, decision)
    _refused(turn, decision)
    _coder_event(turn)
    loop.stop_reason, loop.stop_detail, loop.worker = decision.reason, decision.detail, decision.worker
    initial_route = loop.steps[0].route if loop.steps else turn.route.route
    worker_calls = len(loop.steps) + (1 if turn.execution.results else 0)
    _event(
        turn,
        "loop.stop",
        stop_reason=decision.reason,
        detail=decision.detail,
        needs_next_loop=decision.worker.needs_next_loop,
        error_reason=decision.error or None,
    )
    _event(
        turn,
        "final.route",
        initial_route=initial_route,
        final_route=turn.route.route,
        classifier_route=getattr(turn.route, "classifier_route", None),
        classifier_confidence=getattr(turn.route, "classifier_confidence", None),
        worker_calls=worker_calls,
        needs_next_loop=decision.worker.needs_next_loop,
        risk=decision.worker.risk,
        fit=decision.worker.fit,
        reroute_used=loop.reroute_used,
        reroute_refused=loop.reroute_refused,
        stop_reason=decision.reason,
        error_reason=decision.error or None,
    )
