"""Executor layer: fixed-logic tool handlers, each effect exactly once.

It runs only what the deciding layers let through (guardian allow/modify, authorization
allowed, no kill switch) and re-checks authorization right before execution. A delegated job's
turn runs nothing once its job is no longer live (cancelled or timed out between its steps); a
step that delegated a job publishes the job's turn once its effect committed. Each call is
executed by ``shared_lib.tools.execution.ToolExecutor``: parameters re-validated with the
tool's own model, a receipt ``(turn_id, step, call index)`` claimed with the effect, the
stored result returned on redelivery, a per-tool timeout, typed catalogue errors. Shadow
turns dry-run: validate and preview, write and send nothing.

An announcement (a result with ``announcement_id``) is delivered right after its outbox
document commits, to each recipient once (``shared_lib.tools.delivery``); the counts go into
the call's result, so the reply says how many were reached. A redelivered run replays the
call from its receipt and resumes the delivery where it stopped.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from shared_lib import tracing
from shared_lib.brain.vault import restore_parameters
from shared_lib.errors import BrainError
from shared_lib.layers.authorizer import gate
from shared_lib.layers.base import Layer, Outcome
from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.privacy.sealing import REVEALED
from shared_lib.tools import delivery
from shared_lib.tools.execution import CallRequest, ToolExecutor
from shared_lib.tools.execution import receipt_path as call_receipt_path
from shared_lib.turn.envelope import ExecutionSection, ToolResult, Turn

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


def call_id(turn: Turn, index: int) -> str:
    return f"{turn.turn_id}-{turn.step}-{index}"


def receipt_path(turn: Turn, index: int) -> str:
    return call_receipt_path(turn.org_id, call_id(turn, index))


def _skip_reason(turn: Turn) -> str | None:
    if turn.flags.kill_switch:
        return "kill_switch"
    if turn.proposal.proposal is None or not turn.proposal.proposal.tool_calls:
        return "no_tool_call"
    if turn.guardian is None or turn.guardian.action not in ("allow", "modify"):
        return f"guardian.{turn.guardian.action if turn.guardian else 'missing'}"
    if turn.authorization is None or turn.authorization.result != "allowed":
        return "authorization"
    return None


def executor_for(rt: Runtime) -> ToolExecutor:
    return ToolExecutor(
        rt.store,
        rt.registry,
        tasks=rt.task_backend,
        clock=rt.clock,
        retention=rt.settings.retention,
        embedder=rt.embedder,
        vault=rt.vault,
    )


def run(turn: Turn, rt: Runtime) -> Outcome:
    """The executor stage (``rt.stages["executor"]``: its answer steps, ``core``, its after steps)."""
    turn.execution = ExecutionSection(dry_run=turn.shadow)  # a later step starts clean (turn.loop has it)
    return rt.stages["executor"].run(turn, rt)


def skipped(turn: Turn, reason: str, reason_code: str | None = None) -> Outcome:
    """The stage ran nothing, for ``reason`` (recorded on the execution section)."""
    turn.execution.skipped_reason = reason
    return Outcome("skipped", reason_code=reason_code or reason)


def core(turn: Turn, rt: Runtime) -> Outcome:
    sec = turn.execution
    reason = _skip_reason(turn)
    if reason:
        return skipped(turn, reason)
    assert turn.proposal.proposal is not None
    recheck = gate(turn, rt, turn.proposal.proposal)
    if recheck.result != "allowed":
        return skipped(turn, "authorization_recheck", recheck.reason_code)
    engine = executor_for(rt)
    for index, call in enumerate(turn.proposal.proposal.tool_calls):
        # masked values the user really gave are restored here, and only here
        params = restore_parameters(turn, dict(call.parameters), rt.store, cipher=rt.cipher(turn.org_id))
        if turn.guardian and turn.guardian.action == "modify" and turn.guardian.modified_parameters:
            params.update(turn.guardian.modified_parameters)
        t0, cid = time.perf_counter(), call_id(turn, index)
        with tracing.tool_span(call.tool_name, cid, dry_run=sec.dry_run):
            outcome = engine.execute(
                CallRequest(
                    tool_name=call.tool_name,
                    parameters=params,
                    org_id=turn.org_id,
                    user_id=turn.user_id,
                    room_id=turn.room_id,
                    conversation_key=turn.conversation_key,
                    call_id=cid,
                    dry_run=sec.dry_run,
                    confirmed=_confirmed(turn),
                    channel=turn.channel,
                    job_id=turn.job_id or "",
                )
            )
            result = dict(outcome.result)
            revealed = [str(v) for v in result.pop(REVEALED, None) or []]
            if outcome.ok and not sec.dry_run and "announcement_id" in result:
                result = {**result, "delivery": _deliver(turn, rt, str(result["announcement_id"]), params)}
            tracing.tool_outcome(ok=outcome.ok, error_code=outcome.error_code, replayed=outcome.replayed)
        if outcome.error_code:
            turn.add_error(
                BrainError.of(
                    outcome.error_code,
                    outcome.message,
                    layer="executor",
                    tool=call.tool_name,
                    call_index=index,
                    **outcome.details,
                )
            )
        sec.results.append(
            ToolResult(
                tool_name=call.tool_name,
                call_index=index,
                ok=outcome.ok,
                result=result,
                revealed=revealed,
                error_code=outcome.error_code,
                receipt_id=outcome.receipt_id,
                replayed=outcome.replayed,
                dry_run=sec.dry_run,
                duration_ms=round((time.perf_counter() - t0) * 1000, 3),
            )
        )
    ok = all(r.ok for r in sec.results)
    failed = next((r for r in sec.results if not r.ok), None)
    return Outcome(
        "executed" if ok else "failed",
        reason_code="ok" if failed is None else failed.error_code or "",
        detail=f"calls={len(sec.results)} replayed={sum(r.replayed for r in sec.results)}",
    )


def _deliver(turn: Turn, rt: Runtime, announcement_id: str, params: dict[str, object]) -> dict[str, object]:
    """Send the announcement to its recipients (the persona's frame around the real message)."""
    # the message as the user gave it (restored from the vault); a placeholder left is words
    message = Sanitizer.default().present(str(params.get("message", "")), own="")
    text = rt.persona.message(
        "announcement_message",
        sender=delivery.sender_name(rt.store, turn.org_id, turn.user_id),
        message=message,
    )
    done = delivery.deliver(
        rt.store,
        rt.channels,
        org_id=turn.org_id,
        announcement_id=announcement_id,
        text=text,
        prefer_channel=turn.channel,
        clock=rt.clock,
    )
    return done.summary()


def _confirmed(turn: Turn) -> frozenset[str]:
    """The guardian's reasons the user approved for the action being run (seed 000 §5.1.7), or
    that an auto-approve grant approved in their place (seed 002 §6.4)."""
    g = turn.guardian
    if g is not None and g.reason_code == "approval.auto_approved":
        return frozenset(str(r) for r in g.details.get("covers") or [g.details.get("auto_approved_from")])
    approval = turn.proposal.approval or {}
    return (
        frozenset(str(r) for r in approval.get("reasons") or []) if approval.get("approved") else frozenset()
    )


LAYER = Layer("executor", "executed", run)
