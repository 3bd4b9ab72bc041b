"""Executor layer: fixed-logic tool handlers, each effect exactly once.

A receipt ``(turn_id, step, call index)`` is created in the same transaction as the
handler's writes; a redelivered execution finds the receipt and returns the stored
result. Parameters are re-validated here with the tool's own model, and authorization
is checked again right before execution. Shadow turns dry-run: validate, write nothing.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from shared_lib.envelope import ToolResult, Turn
from shared_lib.errors import BrainError
from shared_lib.layers.base import Layer, Outcome
from shared_lib.policy.authorization import authorize
from shared_lib.ports import Transaction
from shared_lib.proposal import ToolCall
from shared_lib.tools.registry import ToolContext, ToolInputError

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


def receipt_path(turn: Turn, index: int) -> str:
    return f"orgs/{turn.org_id}/receipts/{turn.turn_id}-{turn.step}-{index}"


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


def run(turn: Turn, rt: Runtime) -> Outcome:
    sec = turn.execution
    sec.dry_run = turn.shadow
    reason = _skip_reason(turn)
    if reason:
        sec.skipped_reason = reason
        return Outcome("skipped", reason_code=reason)
    assert turn.proposal.proposal is not None
    recheck = authorize(turn.proposal.proposal, store=rt.store, org_id=turn.org_id, user_id=turn.user_id,
                        registry=rt.registry)
    if recheck.result != "allowed":
        sec.skipped_reason = "authorization_recheck"
        return Outcome("skipped", reason_code=recheck.reason_code)
    calls = turn.proposal.proposal.tool_calls
    for index, call in enumerate(calls):
        params = dict(call.parameters)
        if turn.guardian and turn.guardian.action == "modify" and turn.guardian.modified_parameters:
            params.update(turn.guardian.modified_parameters)
        sec.results.append(_execute(turn, rt, index, ToolCall(tool_name=call.tool_name, parameters=params)))
    ok = all(r.ok for r in sec.results)
    return Outcome("executed" if ok else "failed", reason_code="ok" if ok else (sec.results[-1].error_code or ""))


def _execute(turn: Turn, rt: Runtime, index: int, call: ToolCall) -> ToolResult:
    t0 = time.perf_counter()
    spec = rt.registry.get(call.tool_name)

    def result(ok: bool, data: dict[str, Any] | None = None, code: str | None = None, **kw: Any) -> ToolResult:
        return ToolResult(tool_name=call.tool_name, call_index=index, ok=ok, result=data or {}, error_code=code,
                          duration_ms=round((time.perf_counter() - t0) * 1000, 3), dry_run=turn.shadow, **kw)

    if spec is None or not spec.enabled:
        turn.add_error(BrainError.of("handler_not_found", call.tool_name, layer="executor"))
        return result(False, code="handler_not_found")
    try:
        params = spec.params.model_validate(call.parameters)
    except ValidationError as exc:
        turn.add_error(BrainError.of("validation_error", str(exc.errors()[:3]), layer="executor"))
        return result(False, {"detail": "パラメータが正しくありません"}, code="validation_error")
    ctx = ToolContext(store=rt.store, org_id=turn.org_id, user_id=turn.user_id, room_id=turn.room_id,
                      turn_id=f"{turn.turn_id}-{turn.step}-{index}", now=rt.clock(), dry_run=turn.shadow)
    path = receipt_path(turn, index)
    try:
        if turn.shadow:
            return result(True, spec.handler(params, ctx, None))

        def _txn(txn: Transaction) -> tuple[dict[str, Any], bool]:
            stored = txn.get(path)
            if stored is not None:
                return dict(stored.get("result", {})), True
            data = spec.handler(params, ctx, txn)
            txn.create(path, {"result": data, "tool": call.tool_name, "at": ctx.now,
                              "expires_at": ctx.now.replace(year=ctx.now.year + 1)})
            return data, False

        data, replayed = rt.store.run_transaction(_txn)
        return result(True, data, receipt_id=path.rsplit("/", 1)[-1], replayed=replayed)
    except ToolInputError as exc:
        turn.add_error(BrainError.of("validation_error", str(exc), layer="executor", field=exc.field))
        return result(False, {"detail": str(exc), "options": exc.options}, code="validation_error")
    except Exception as exc:
        turn.add_error(BrainError.of("execution_error", f"{type(exc).__name__}: {exc}", layer="executor"))
        return result(False, {"detail": "実行エラー"}, code="execution_error")


LAYER = Layer("executor", "executed", run)
