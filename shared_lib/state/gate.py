"""The confirmation message: seed 004 §8's five points in the persona's voice.

Intent (what the proposer understood), rationale (why this tool), impact (what each call
does and every concern the guardian raised), alternatives (what the proposer considered,
or simply not doing it) and a preview of exactly what will change — parameter by
parameter, with the guardian's corrections shown as ``old → new`` — then numbered
choices and the approval id. Every sentence comes from the persona's templates.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from shared_lib.persona.catalogue import Persona
from shared_lib.policy.effective import Policy
from shared_lib.policy.reasons import is_question
from shared_lib.state.gate_text import for_user
from shared_lib.tools.display import parameter_lines
from shared_lib.tools.registry import ToolRegistry
from shared_lib.turn.decisions import Verdict
from shared_lib.turn.proposal import ToolCallProposal

GENERIC = "confirmation.requested"


def preview(
    root: ToolCallProposal,
    registry: ToolRegistry | None,
    modified: dict[str, Any] | None = None,
    *,
    today: date | None = None,
) -> str:
    """Exactly what will run, as a user reads it: each call by its display name and each
    parameter by its label (「担当者: 田中太郎」; corrections as ``old → new``)."""
    reg = registry or ToolRegistry()
    lines = []
    single = len(root.tool_calls) == 1
    for call in root.tool_calls:
        lines.append(f"・{reg.display_name(call.tool_name)}")
        params = dict(call.parameters)
        fixed = modified if (single and modified) else params
        shown = parameter_lines(reg, call.tool_name, fixed, today=today, before=params)
        lines += [f"  - {line}" for line in shown]
    return "\n".join(lines)


SUMMARY_LINES = 3  # seed 002 §6.3: the operation in one to three lines


def summary(root: ToolCallProposal, registry: ToolRegistry | None, *, today: date | None = None) -> str:
    """One line per call, for reminders: 「タスクの作成（担当者: 田中太郎、期限: 11月25日（水））」."""
    reg = registry or ToolRegistry()
    return "\n".join(
        reg.display_name(c.tool_name)
        + (
            f"（{'、'.join(parameter_lines(reg, c.tool_name, c.parameters, today=today))}）"
            if c.parameters
            else ""
        )
        for c in root.tool_calls
    )


def short_summary(text: str) -> str:
    """At most ``SUMMARY_LINES`` lines of a summary (the rest counted in the last)."""
    lines = text.splitlines()
    if len(lines) <= SUMMARY_LINES:
        return text
    return "\n".join(
        [*lines[: SUMMARY_LINES - 1], f"{lines[SUMMARY_LINES - 1]} ほか{len(lines) - SUMMARY_LINES}件"]
    )


def reversible(root: ToolCallProposal, policy: Policy) -> bool:
    """Whether every call can be taken back (a deletion or a message sent out cannot)."""
    return not any(policy.irreversible(call.tool_name) for call in root.tool_calls)


def impact_lines(persona: Persona, verdict: Verdict, root: ToolCallProposal, policy: Policy) -> list[str]:
    """What each call does, and every further concern the guardian raised."""
    lines = []
    for call in root.tool_calls:
        description, writes = policy.describe(call.tool_name)
        lines.append(
            persona.message(
                "gate_impact_writes" if writes else "gate_impact_reads",
                tool=policy.registry.display_name(call.tool_name) if policy.registry else "",
                description=description,
            )
        )
    return lines + [persona.message("gate_impact_concern", concern=c) for c in _concerns(verdict)[1:]]


def _concerns(verdict: Verdict) -> list[str]:
    concerns = [str(c) for c in verdict.details.get("concerns") or [verdict.message]]
    codes = [str(c) for c in verdict.details.get("covers") or []]
    if len(codes) == len(concerns) > 1:  # "needs a confirmation" says nothing when there are real concerns
        concerns = [c for code, c in zip(codes, concerns, strict=True) if code != GENERIC] or concerns
    return concerns


def compose(
    persona: Persona,
    verdict: Verdict,
    root: ToolCallProposal,
    policy: Policy,
    *,
    approval_id: str,
    stage: int = 1,
    today: date | None = None,
) -> str:
    modified = verdict.details.get("pending_modification")
    values: dict[str, object] = {
        "reason": _concerns(verdict)[0],
        "approval_id": approval_id,
        "summary": short_summary(summary(root, policy.registry, today=today)),
        "reversibility": persona.message(
            "gate_reversible" if reversible(root, policy) else "gate_irreversible"
        ),
        "preview": preview(
            root, policy.registry, modified if isinstance(modified, dict) else None, today=today
        ),
    }
    if stage >= 2:
        return persona.message("confirm_gate_second", **values)
    if is_question([verdict.reason_code, *(str(c) for c in verdict.details.get("covers") or [])]):
        return persona.message("confirm_gate_question", **values)  # a value to give, not a yes
    reg = policy.registry or ToolRegistry()
    said = [for_user(a, reg, persona, today=today) for a in root.reasoning.alternatives_considered]
    alternatives = "／".join(a for a in said if a) or persona.message("gate_no_alternatives")
    values.update(
        intent=for_user(root.reasoning.intent_understanding or "", reg, persona, today=today),
        rationale=for_user(root.reasoning.tool_selection_reason or "", reg, persona, today=today),
        impact="\n".join(impact_lines(persona, verdict, root, policy)),
        alternatives=alternatives,
    )
    return persona.message("confirm_gate_double" if verdict.double_confirmation else "confirm_gate", **values)
