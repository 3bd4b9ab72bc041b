"""The observability record of a turn (seed 000 §9.1.1 fields plus runtime facts).

One definition serves the Firestore record and, in the cloud, the BigQuery stream.
"""

from __future__ import annotations

from typing import Any

from shared_lib.envelope import Turn
from shared_lib.sanitizer import Sanitizer


def observability_record(turn: Turn) -> dict[str, Any]:
    s = Sanitizer.default()
    p = turn.proposal.proposal
    total_ms = sum(t.duration_ms for t in turn.timings.values())
    tool_ms = sum(r.duration_ms for r in turn.execution.results)
    failed = [r for r in turn.execution.results if not r.ok]
    return {
        "record_id": f"{turn.turn_id}",
        "turn_id": turn.turn_id,
        "timestamp": turn.created_at,
        "user_id": turn.user_id,
        "organization_id": turn.org_id,
        "org_id": turn.org_id,
        "room_id": turn.room_id,
        "channel": turn.channel,
        "input_message": s.mask_text(turn.inbound.text),
        "context_summary": s.mask_text(turn.context.rendered[:1000]),
        "context_degraded": list(turn.context.degraded),
        "llm_model": turn.proposal.model or turn.proposal.arm,
        "llm_reasoning": s.mask_text(p.root.reasoning_text()) if p else "",
        "llm_confidence": p.confidence if p else 0.0,
        "output_type": p.output_type if p else None,
        "selected_tools": [{"tool_name": c.tool_name, "parameters": s.mask_obj(c.parameters)}
                           for c in (p.tool_calls if p else [])],
        "guardian_action": turn.guardian.action if turn.guardian else "none",
        "guardian_reason": turn.guardian.reason_code if turn.guardian else "",
        "auth_result": turn.authorization.result if turn.authorization else "none",
        "auth_reason": turn.authorization.reason_code if turn.authorization else "",
        "execution_success": bool(turn.execution.results) and not failed,
        "execution_result": s.mask_obj([r.model_dump(mode="json") for r in turn.execution.results]),
        "execution_error": failed[0].error_code if failed else None,
        "final_response": s.mask_text(turn.response.text),
        "response_kind": turn.response.kind,
        "total_duration_ms": round(total_ms, 3),
        "llm_duration_ms": round(turn.usage.llm_duration_ms, 3),
        "tool_duration_ms": round(tool_ms, 3),
        "self_critique_executed": turn.proposal.self_critique is not None,
        "self_critique_result": turn.proposal.self_critique,
        "arm": turn.proposal.arm,
        "flags_arm": turn.flags.arm,
        "flags_reason": turn.flags.reason,
        "flags_version": turn.flags.flags_version,
        "step": turn.step,
        "timings": {k: v.duration_ms for k, v in turn.timings.items()},
        "trail": [e.model_dump(mode="json") for e in turn.trail],
        "usage": turn.usage.model_dump(),
        "cost_usd": turn.usage.cost_usd,
        "errors": [e.model_dump(mode="json") for e in turn.errors],
        "occurred_at": turn.created_at,
    }
