"""Guardian: the seven-priority decision tree of seed 000 §5.3.3b (first match wins).

Input is the validated proposal plus facts the charter owns (registry, policy, clock, and
the approval the state layer read from the store); output is a ``Verdict`` with a stable
reason code. Nothing the LLM says can loosen the verdict: ``needs_confirmation`` only
ever adds a confirmation.

A confirmation verdict lists in ``details["covers"]`` every confirm-level concern the
tree finds before anything stricter, so one answer settles what the user was shown.
When the user approves (``approval["approved"]``), the pending action is re-checked:

* the approval must come from the user who proposed it (or a person the state layer found
  allowed to answer someone's job, ``approver_allowed``), else ``approval.foreign`` (block);
* if its parameters hash or the policy version differ from what was confirmed, the
  action is judged afresh and confirmed again under a new approval;
* otherwise confirm-level outcomes for the approved reasons are satisfied, any block
  still blocks, a new concern asks again, and a double confirmation needs its second
  answer before the verdict is ``pass`` (with ``details["approval_id"]``).

>>> from datetime import datetime, UTC
>>> from shared_lib.tools.builtin import builtin_registry
>>> p = Proposal.model_validate({"output_type": "tool_call",
...     "reasoning": {"intent_understanding": "山田さんの権限を管理者に変えたいという依頼",
...                   "tool_selection_reason": "権限変更の依頼なので change_permission を使う"},
...     "confidence": {"overall": 0.95},
...     "tool_calls": [{"tool_name": "change_permission", "parameters": {"target_user_name": "山田", "new_level": 6}}]})
>>> evaluate(p, registry=builtin_registry(), now=datetime(2025, 1, 6, tzinfo=UTC)).reason_code
'danger.blocked_operation'
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from shared_lib.policy.config import PolicyConfig
from shared_lib.policy.effective import Policy
from shared_lib.policy.reasons import GUARDIAN_REASONS
from shared_lib.policy.rules import findings
from shared_lib.policy.subject import Origin, Subject
from shared_lib.policy.teachings import Teaching
from shared_lib.tools.registry import ToolRegistry
from shared_lib.turn.decisions import Verdict
from shared_lib.turn.proposal import Proposal


def proposal_hash(proposal: Proposal) -> str:
    """A stable hash of every tool call (name and parameters) of a proposal."""
    calls = [{"tool": c.tool_name, "parameters": c.parameters} for c in proposal.tool_calls]
    body = json.dumps(calls, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(body.encode()).hexdigest()


@dataclass(frozen=True)
class Grant:
    """An approval as the state layer recorded it, checked against the action being judged."""

    approval_id: str
    reasons: tuple[str, ...]
    concerns: tuple[str, ...]
    double: bool
    confirmations: int
    foreign: bool
    changed: str | None  # "params_changed" / "policy_changed" when the approval is stale

    @classmethod
    def of(
        cls, approval: Mapping[str, Any] | None, proposal: Proposal, policy: Policy, user_id: str | None
    ) -> Grant | None:
        if not approval or approval.get("approved") is not True:
            return None
        by, proposer = approval.get("by"), approval.get("proposer")
        # the approver may be someone other than the proposer only when the state layer found them
        # allowed (the policy's approver level, seed 002 §10.2); it is always the turn's user
        others = approval.get("approver_allowed") is True
        foreign = by is None or (by != proposer and not others) or (user_id is not None and by != user_id)
        changed = None
        if approval.get("params_hash") != proposal_hash(proposal):
            changed = "params_changed"
        elif approval.get("policy_version") != policy.version:
            changed = "policy_changed"
        return cls(
            approval_id=str(approval.get("approval_id", "")),
            reasons=tuple(str(r) for r in approval.get("reasons") or ()),
            concerns=tuple(str(c) for c in approval.get("concerns") or ()),
            double=bool(approval.get("double")),
            confirmations=int(approval.get("confirmations") or 1),
            foreign=foreign,
            changed=changed,
        )


def evaluate(
    proposal: Proposal,
    *,
    registry: ToolRegistry | None,
    now: datetime,
    config: PolicyConfig | None = None,
    approval: Mapping[str, Any] | None = None,
    user_id: str | None = None,
    origin: Origin = "proposer",
    teachings: Iterable[Teaching] = (),
    policy: Policy | None = None,
) -> Verdict:
    """Judge a proposal; see the module docstring for how an approval is re-checked."""
    pol = policy or Policy.build(config, registry, teachings)
    subject = Subject.of(proposal, origin)
    grant = Grant.of(approval, proposal, pol, user_id)
    if grant is not None and grant.foreign:
        return pol.verdict("approval.foreign", details={"approval_id": grant.approval_id})
    if grant is None:
        return _first(findings(subject, pol, now), pol)
    if grant.changed:
        return _reconfirm(_first(findings(subject, pol, now), pol), grant, pol)
    return _approved(findings(subject, pol, now), grant, pol)


def _first(found: Iterator[Verdict], pol: Policy, satisfied: tuple[str, ...] = ()) -> Verdict:
    """First match wins; a confirmation also lists the confirm-level concerns that follow it."""
    for verdict in found:
        if verdict.action != "confirm":
            return verdict
        return _with_covers(verdict, found, satisfied)
    return Verdict.allow(details={"policy_version": pol.version})


def _with_covers(first: Verdict, rest: Iterator[Verdict], satisfied: tuple[str, ...]) -> Verdict:
    covers, concerns = [first.reason_code], [first.message]
    modified: dict[str, Any] | None = None
    asks = [str(first.details["key"])] if _asks(first) else []
    for verdict in rest:
        if verdict.action == "block":
            break
        if verdict.action == "modify":
            modified = verdict.modified_parameters
            break
        if verdict.reason_code not in covers and verdict.reason_code not in satisfied:
            covers.append(verdict.reason_code)
            concerns.append(verdict.message)
        if _asks(verdict):
            asks.append(str(verdict.details["key"]))
    double = any(GUARDIAN_REASONS[c].double for c in covers)
    details: dict[str, Any] = {"covers": covers, "concerns": concerns, "satisfied": list(satisfied)}
    if asks:  # the parameter a question asks for: the person's answer fills it
        details["asks"] = asks[0]
    if modified is not None:
        details["pending_modification"] = modified
    return first.model_copy(update={"double_confirmation": double, "details": {**first.details, **details}})


def _asks(verdict: Verdict) -> bool:
    reason = GUARDIAN_REASONS.get(verdict.reason_code)
    return reason is not None and not reason.answerable and "key" in verdict.details


def _reconfirm(fresh: Verdict, grant: Grant, pol: Policy) -> Verdict:
    """A stale approval never executes: block stays block, anything else is confirmed again."""
    info = {"reconfirm": grant.changed, "previous_approval_id": grant.approval_id}
    if fresh.action in ("block", "confirm"):
        return fresh.with_details(**info)
    changed = pol.verdict("approval.changed", details=info)
    if fresh.action == "modify":
        changed = changed.with_details(pending_modification=fresh.modified_parameters)
    return changed.with_details(covers=["approval.changed"], concerns=[changed.message], satisfied=[])


def _approved(found: Iterator[Verdict], grant: Grant, pol: Policy) -> Verdict:
    done = {"approval_id": grant.approval_id, "satisfied": list(grant.reasons)}
    for verdict in found:
        answerable = (
            verdict.reason_code in GUARDIAN_REASONS and GUARDIAN_REASONS[verdict.reason_code].answerable
        )
        if verdict.action == "confirm" and verdict.reason_code in grant.reasons and answerable:
            continue
        if verdict.action == "block":
            return verdict.with_details(**done)
        if verdict.action == "confirm":
            again = _with_covers(verdict, found, grant.reasons)
            # a double confirmation answered only once stays double under the new approval
            double = again.double_confirmation or (grant.double and grant.confirmations < 2)
            return again.model_copy(update={"double_confirmation": double}).with_details(
                previous_approval_id=grant.approval_id
            )
        return _second_answer(grant, pol) or verdict.with_details(**done)
    return _second_answer(grant, pol) or Verdict.allow(details={"policy_version": pol.version, **done})


def _second_answer(grant: Grant, pol: Policy) -> Verdict | None:
    """The first "yes" to a double confirmation asks the second time (same approval id)."""
    if not grant.double or grant.confirmations >= 2:
        return None
    code = next(
        (r for r in grant.reasons if r in GUARDIAN_REASONS and GUARDIAN_REASONS[r].double),
        "confirmation.requested",
    )
    base = pol.verdict(code)
    aligned = len(grant.concerns) == len(grant.reasons) and code in grant.reasons
    message = grant.concerns[grant.reasons.index(code)] if aligned else base.message
    return base.model_copy(
        update={
            "message": message,
            "double_confirmation": True,
            "details": {
                **base.details,
                "approval_id": grant.approval_id,
                "stage": 2,
                "covers": list(grant.reasons),
                "concerns": list(grant.concerns) or [message],
                "satisfied": list(grant.reasons),
            },
        }
    )
