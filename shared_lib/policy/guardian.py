"""Guardian: the seven-priority decision tree of seed 000 §5.3.3b (first match wins).

Input is the validated proposal plus facts the charter owns (registry, configuration,
clock); output is a ``Verdict`` with a stable reason code. Nothing the LLM says can set
the verdict: fields such as ``needs_confirmation`` only ever make the outcome stricter.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from shared_lib.decisions import Verdict
from shared_lib.proposal import Proposal, ToolCallProposal
from shared_lib.tools.registry import ToolRegistry

MIN_REASONING_CHARS = 10


class GuardianConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    too_low: float = 0.3
    low: float = 0.5
    medium: float = 0.7


def evaluate(proposal: Proposal, *, registry: ToolRegistry, now: datetime,
             config: GuardianConfig | None = None, approval: dict[str, Any] | None = None) -> Verdict:
    cfg = config or GuardianConfig()
    p = proposal.root
    if len(p.reasoning_text().strip()) < MIN_REASONING_CHARS:
        return Verdict.block("constitution.missing_reasoning", priority=1, message="思考過程がありません")
    if not isinstance(p, ToolCallProposal):
        return Verdict.allow()
    for call in p.tool_calls:
        spec = registry.get(call.tool_name)
        if spec is None:
            continue
        if spec.danger == "critical" or spec.danger_action == "block":
            code = "danger.critical" if spec.danger == "critical" else "danger.blocked_operation"
            return Verdict.block(code, priority=3, message=f"{call.tool_name}は実行できない操作です")
    approved = bool(approval and approval.get("approved"))
    c = p.confidence.overall
    if c < cfg.too_low:
        return Verdict.block("confidence.too_low", priority=5, message="確信度が低すぎます")
    if not approved:
        if c < cfg.low:
            return Verdict.confirm("confidence.low", priority=5, message="内容を確認させてください")
        if c < cfg.medium:
            return Verdict.confirm("confidence.medium", priority=5, message="この内容で進めてよいですか？")
        for call in p.tool_calls:
            if call.parameters.get("recipients") == "all":
                return Verdict.confirm("params.recipients_all", priority=6, double=True,
                                       message="全員に送信します。よろしいですか？")
    return Verdict.allow()
