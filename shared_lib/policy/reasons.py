"""The reason-code catalogue of the deciding layers (a public contract: add codes, never rename).

Each guardian code has a fixed action and tree priority (seed 000 §5.3.3b); the human
message comes from the policy configuration (``messages``), never from code. Codes the
issue did not list are marked "added".

>>> GUARDIAN_REASONS["danger.high"].action, GUARDIAN_REASONS["danger.high"].double
('confirm', True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from shared_lib.turn.decisions import GuardianAction


@dataclass(frozen=True)
class Reason:
    """``answerable``: whether 「はい」 settles it. A question (``date.unreadable``: the user must
    say a value) is never settled by an approval nor by an auto-approve grant."""

    action: GuardianAction
    priority: int
    double: bool = False
    answerable: bool = True


GUARDIAN_REASONS: dict[str, Reason] = {
    # 1 constitution (seed 000 ch. 4)
    "constitution.permission_decision": Reason("block", 1),
    "constitution.missing_reasoning": Reason("block", 1),
    "approval.foreign": Reason("block", 1),  # added: an approval not given by the proposing user
    "approval.changed": Reason("confirm", 1),  # added: parameters or policy changed since confirmation
    # 2 security
    "security.ng_pattern": Reason("block", 2),
    "security.confidential": Reason("block", 2),
    # 3 dangerous operations
    "danger.critical": Reason("block", 3),
    "danger.blocked_operation": Reason("block", 3),
    "danger.high": Reason("confirm", 3, double=True),
    "danger.medium": Reason("confirm", 3),
    # 4 company teachings
    "teaching.violation": Reason("block", 4),
    "teaching.possible_violation": Reason("confirm", 4),
    # 5 confidence
    "confidence.too_low": Reason("block", 5),
    "confidence.low": Reason("confirm", 5),
    "confidence.medium": Reason("confirm", 5),
    # 6 parameters
    "params.amount_very_high": Reason("confirm", 6, double=True),
    "params.amount_high": Reason("confirm", 6),
    "params.recipients_all": Reason("confirm", 6, double=True),
    "params.recipients_many_10": Reason("confirm", 6),
    "params.recipients_many": Reason("confirm", 6),
    "params.recipients_group": Reason("confirm", 6),
    "params.delete_multiple": Reason("confirm", 6),
    "params.delete_single": Reason("confirm", 6),
    # 7 consistency
    "consistency.unfixable": Reason("confirm", 7),
    "date.past": Reason("confirm", 7),
    "date.far_future": Reason("confirm", 7),
    "date.unreadable": Reason("confirm", 7, answerable=False),  # added: a question, issue 34
    "date.ambiguous": Reason("confirm", 7),  # added: a reading in doubt, shown with why
    "consistency.modified": Reason("modify", 7),
    # 8 added: the proposer or the registry asked for a confirmation (only ever stricter)
    "confirmation.requested": Reason("confirm", 8),
}

PASS = "pass"

# Catalogue messages that are parts of a verdict's message (the ``{problem}`` of consistency.unfixable).
PART_MESSAGES = (
    "consistency.problem.unreadable_amount",
    "consistency.problem.negative_amount",
    "consistency.problem.invalid_date",
    "consistency.problem.range_reversed",
    "consistency.problem.several_calls",
    "date.ambiguous.weekday",
    "date.ambiguous.next_year",
)


def is_question(codes: list[str] | tuple[str, ...]) -> bool:
    """Whether a confirmation covering ``codes`` asks for a value 「はい」 cannot give."""
    return any(c in GUARDIAN_REASONS and not GUARDIAN_REASONS[c].answerable for c in codes)


AuthReason = Literal[
    "pass",
    "level.insufficient",
    "data.no_access",
    "department.no_access",
    "directory.unavailable",
    "not_applicable",
]
AUTH_REASONS: tuple[AuthReason, ...] = (
    "pass",
    "level.insufficient",
    "data.no_access",
    "department.no_access",
    "directory.unavailable",
    "not_applicable",
)
