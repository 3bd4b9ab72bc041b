"""The confirmation message: seed 004 §8's five points in the persona's voice.

Intent (what the proposer understood), rationale (why this tool), impact (what each call
does and every concern the guardian raised), alternatives (what the proposer considered,
or simply not doing it) and a preview of exactly what will change — parameter by
parameter, with the guardian's corrections shown as ``old → new`` — then numbered
choices and the approval id. Every sentence comes from the persona's templates.
"""

from __future__ import annotations

import json
from typing import Any

from shared_lib.decisions import Verdict
from shared_lib.persona import Persona
from shared_lib.policy.effective import Policy
from shared_lib.proposal import ToolCallProposal

MAX_VALUE_CHARS = 200
GENERIC = "confirmation.requested"


def show(value: Any) -> str:
    if isinstance(value, list):
        text = "、".join(show(v) for v in value)
    elif isinstance(value, dict):
        text = json.dumps(value, ensure_ascii=False, default=str)
    else:
        text = str(value)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def preview(root: ToolCallProposal, modified: dict[str, Any] | None = None) -> str:
    """Exactly what will run: each call and each parameter (corrections as ``old → new``)."""
    lines = []
    single = len(root.tool_calls) == 1
    for call in root.tool_calls:
        lines.append(f"・{call.tool_name}")
        params = dict(call.parameters)
        fixed = modified if (single and modified) else params
        for key in sorted(set(params) | set(fixed)):
            old, new = params.get(key), fixed.get(key)
            shown = show(new) if old == new else f"{show(old)} → {show(new)}"
            lines.append(f"  - {key}: {shown}")
    return "\n".join(lines)


def summary(root: ToolCallProposal) -> str:
    """One line per call, for reminders."""
    return "\n".join(
        f"{c.tool_name}: " + "、".join(f"{k}={show(v)}" for k, v in c.parameters.items())
        for c in root.tool_calls
    )


def compose(
    persona: Persona,
    verdict: Verdict,
    root: ToolCallProposal,
    policy: Policy,
    *,
    approval_id: str,
    stage: int = 1,
) -> str:
    concerns = [str(c) for c in verdict.details.get("concerns") or [verdict.message]]
    codes = [str(c) for c in verdict.details.get("covers") or []]
    if len(codes) == len(concerns) > 1:  # "needs a confirmation" says nothing when there are real concerns
        concerns = [c for code, c in zip(codes, concerns, strict=True) if code != GENERIC] or concerns
    modified = verdict.details.get("pending_modification")
    values: dict[str, object] = {
        "reason": concerns[0],
        "approval_id": approval_id,
        "preview": preview(root, modified if isinstance(modified, dict) else None),
    }
    if stage >= 2:
        return persona.message("confirm_gate_second", **values)
    impact = []
    for call in root.tool_calls:
        description, writes = policy.describe(call.tool_name)
        impact.append(
            persona.message(
                "gate_impact_writes" if writes else "gate_impact_reads",
                tool=call.tool_name,
                description=description,
            )
        )
    if any(policy.irreversible(call.tool_name) for call in root.tool_calls):
        impact.append(persona.message("gate_irreversible"))
    impact += [persona.message("gate_impact_concern", concern=c) for c in concerns[1:]]
    alternatives = "／".join(root.reasoning.alternatives_considered) or persona.message(
        "gate_no_alternatives"
    )
    values.update(
        intent=root.reasoning.intent_understanding,
        rationale=root.reasoning.tool_selection_reason,
        impact="\n".join(impact),
        alternatives=alternatives,
    )
    return persona.message("confirm_gate_double" if verdict.double_confirmation else "confirm_gate", **values)
