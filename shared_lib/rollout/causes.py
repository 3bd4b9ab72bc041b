"""Who caused a verdict: the candidate brain, the user, or the system around both.

The rollback guard rolls the LLM arm back for what the brain causes, never for what the
user asked: a request for something forbidden is blocked by the policy whichever brain
proposed it, so rolling the brain back would change nothing and punish every tenant for
one user. ``VERDICT_CAUSES`` decides, for every reason code the guardian and the
authorizer can give (``shared_lib.policy.reasons``, and the brain's constitution codes
that the guardian blocks with; a test fails when a new code is not classified here):

brain   the proposal itself is wrong: a constitution violation, a confidence too low to
        act on, parameters the fixed logic had to correct, a confirmation the proposer asked
user    the request is what the policy refuses or questions: dangerous operations, NG
        patterns, confidential data sent out, company teachings, amounts, recipients,
        dates, an approval by someone else, an authorization denial
system  neither: the directory could not be read (the legacy arm would fail the same way)

Only blocks and denials reach the guard; confirmation codes are classified too, so that a
policy change turning one into a block is already decided. ``record_signals`` turns one
observability record into what the guard counts, brain-caused and excluded alike.

Errors the same way (``error_cause``): an LLM error of a call the brain made (it failed,
timed out, or gave no valid proposal) is the brain's; waiting is the system's: a turn whose
budget was spent before the brain started (``turn_backlog``), an LLM call never made because
the budget was already spent (the stages before it used it), a backlog. Those are counted
apart as ``infra_waits``, never tripping; the backlog itself is an operator alert.

>>> cause_of("security.ng_pattern"), cause_of("constitution.missing_reasoning")
('user', 'brain')
>>> error_cause({"code": "api_timeout", "message": "integration: turn budget spent (phrasing call not made)"})
'system'
"""

from __future__ import annotations

from typing import Any, Literal

from shared_lib.errors import CATALOGUE

Cause = Literal["brain", "user", "system"]

VERDICT_CAUSES: dict[str, Cause] = {
    # guardian, priority 1: the constitution (seed 000 ch. 4) and approvals
    "constitution.permission_decision": "brain",
    "constitution.missing_reasoning": "brain",
    # the brain's own constitution checks (``brain.constitution.ARTICLES``), blocking when escalated
    "constitution.execution_assertion": "brain",
    "constitution.db_decision": "brain",
    "constitution.log_decision": "brain",
    "approval.foreign": "user",
    "approval.changed": "user",
    # 2 security
    "security.ng_pattern": "user",
    "security.confidential": "user",
    # 3 dangerous operations
    "danger.critical": "user",
    "danger.blocked_operation": "user",
    "danger.high": "user",
    "danger.medium": "user",
    # 4 company teachings
    "teaching.violation": "user",
    "teaching.possible_violation": "user",
    # 5 confidence
    "confidence.too_low": "brain",
    "confidence.low": "brain",
    "confidence.medium": "brain",
    # 6 parameters
    "params.amount_very_high": "user",
    "params.amount_high": "user",
    "params.recipients_all": "user",
    "params.recipients_many_10": "user",
    "params.recipients_many": "user",
    "params.recipients_group": "user",
    "params.delete_multiple": "user",
    "params.delete_single": "user",
    # 7 consistency and dates
    "consistency.unfixable": "brain",
    "consistency.modified": "brain",
    "date.past": "user",
    "date.far_future": "user",
    # what the person said cannot be read as a date, or is read in doubt: the person is asked
    "date.unreadable": "user",
    "date.ambiguous": "user",
    # 8 confirmation requested by the proposer or the registry
    "confirmation.requested": "brain",
    # authorization denials
    "level.insufficient": "user",
    "data.no_access": "user",
    "department.no_access": "user",
    "directory.unavailable": "system",
}

# Catalogue codes of a failed LLM arm: the call failed, or no valid proposal came after
# the retry (``parse_error``; ``invalid_tool_call`` is the first attempt, which was retried).
LLM_FAILURE_CODES = frozenset(
    code
    for code, entry in CATALOGUE.items()
    if entry.category == "llm_error" and code not in ("invalid_tool_call", "constitution_violation")
)
EXECUTION_ERROR_CATEGORIES = ("system_error", "external_error")
# What ``llm_retry`` and ``continuation`` say of a call they never made: its budget was spent.
NOT_MADE = ("call not made", "spent before the call")

# What a served record of the LLM arm adds to its organisation's window. The first group
# is what the brain causes; ``user_blocks``, ``denials`` and ``user_tool_errors`` are the
# excluded verdicts, counted so that an operator sees what the guard left out.
SIGNALS = (
    "turns",
    "llm_errors",
    "constitution_violations",
    "blocks",
    "tool_calls",
    "tool_errors",
    "llm_calls",
    "llm_ms",
    "cost_usd",
    "user_blocks",
    "system_blocks",
    "denials",
    "user_tool_errors",
    "infra_waits",
)


def cause_of(code: str | None) -> Cause:
    """The cause of a reason code; an unknown code counts against the brain (fail toward safety)."""
    return VERDICT_CAUSES.get(code or "", "brain")


def error_cause(error: dict[str, Any]) -> Cause:
    """Who caused a recorded error (a record's ``errors`` row): ``brain`` for an LLM failure of a
    call the brain made, ``system`` for waiting (``turn_backlog``, a call never made), ``user``
    for the rest (not the brain's: execution errors are judged from the tool results)."""
    code, message = str(error.get("code") or ""), str(error.get("message") or "")
    if code == "turn_backlog" or (code in LLM_FAILURE_CODES and any(m in message for m in NOT_MADE)):
        return "system"
    return "brain" if code in LLM_FAILURE_CODES else "user"


def _is_execution_error(code: str | None) -> bool:
    entry = CATALOGUE.get(code or "")
    return entry is None or entry.category in EXECUTION_ERROR_CATEGORIES


def record_signals(record: dict[str, Any]) -> dict[str, float]:
    """What one served LLM-arm record adds to the window (``SIGNALS``)."""
    results = [
        r
        for r in record.get("execution_result") or []
        if isinstance(r, dict) and not r.get("dry_run") and not r.get("replayed")
    ]
    failed = [r for r in results if not r.get("ok")]
    usage = record.get("usage") or {}
    causes = [error_cause(e) for e in record.get("errors") or [] if isinstance(e, dict)]
    violations = record.get("constitution_violations") or []
    guardian_reason = str(record.get("guardian_reason") or "")
    block_cause = cause_of(guardian_reason) if record.get("guardian_action") == "block" else None
    return {
        "turns": 1,
        "llm_errors": 1 if "brain" in causes else 0,
        "constitution_violations": (
            1
            if guardian_reason.startswith("constitution.")
            or any(isinstance(v, dict) and v.get("action") == "block" for v in violations)
            else 0
        ),
        "blocks": 1 if block_cause == "brain" else 0,
        "tool_calls": len(results),
        "tool_errors": sum(1 for r in failed if _is_execution_error(r.get("error_code"))),
        "llm_calls": int(usage.get("llm_calls") or 0),
        "llm_ms": float(record.get("llm_duration_ms") or 0),
        "cost_usd": float(record.get("cost_usd") or 0),
        "user_blocks": 1 if block_cause == "user" else 0,
        "system_blocks": 1 if block_cause == "system" else 0,
        "denials": 1 if record.get("auth_result") == "denied" else 0,
        "user_tool_errors": sum(1 for r in failed if not _is_execution_error(r.get("error_code"))),
        "infra_waits": 1 if "system" in causes or record.get("backlogged") else 0,
    }
