"""The constitution checks of one observability record (seed 000 §4.8.2), as findings.

The observer runs them on every record it writes (and alerts on a critical one); the daily
audit (``shared_lib.ops.audit``) runs them over a period. See that module for the table.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from shared_lib.observability.records import ObservabilityRecord
from shared_lib.policy.claims import claim_in
from shared_lib.policy.config import load_policy_config

MIN_REASONING_CHARS = 50
PERMISSION_WORDS = ("権限がある", "アクセスできる")
EXECUTION_WORDS = ("実行します", "実行する")


@dataclass(frozen=True)
class Finding:
    code: str
    severity: str
    turn_id: str
    org_id: str
    at: str
    detail: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _claims(reasoning: str) -> bool:
    cfg = load_policy_config().constitution
    return any(
        claim_in(reasoning, p, cfg) is not None for p in cfg.permission_patterns if "reasoning" in p.scopes
    )


def findings_for(record: ObservabilityRecord) -> list[Finding]:
    """The audit findings of one record (empty when it is clean)."""
    out: list[Finding] = []

    def add(code: str, severity: str, detail: str) -> None:
        out.append(
            Finding(
                code,
                severity,
                record.turn_id or record.record_id,
                record.organization_id,
                record.timestamp.isoformat(),
                detail[:300],
            )
        )

    reasoning = record.llm_reasoning
    if record.is_llm and record.output_type:
        if len(reasoning.strip()) < MIN_REASONING_CHARS:
            add("reasoning.too_short", "warning", f"{len(reasoning.strip())} characters: {reasoning}")
        for word in PERMISSION_WORDS:
            if word in reasoning:
                # §4.8.2's query lists the word; it is critical (alerted) only where the
                # constitution reads a claim, not a report or a deferral (issue 34)
                claimed = _claims(reasoning)
                add(
                    "reasoning.permission_claim",
                    "critical" if claimed else "warning",
                    f"「{word}」: {reasoning}",
                )
        for word in EXECUTION_WORDS:
            if word in reasoning:
                add("reasoning.execution_claim", "critical", f"「{word}」: {reasoning}")
    if record.output_type and record.guardian_action == "none" and record.arm in ("llm", "legacy"):
        add("guardian.skipped", "critical", "a proposal was answered without a guardian verdict")
    ran = [r for r in record.execution_result if not r.get("dry_run")]
    if ran and record.auth_result != "allowed":
        add(
            "authorization.skipped",
            "critical",
            f"{len(ran)} tool execution(s) with authorization {record.auth_result!r}",
        )
    for v in record.constitution_violations:
        add("constitution.violation", "critical", f"{v.article} {v.code} ({v.action}): {v.detail}")
    return out
