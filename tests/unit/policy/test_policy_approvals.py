"""Re-checking an approved action: same parameters and policy satisfy the confirmed reasons;
a block still blocks; a change asks again; only the proposer approves; double means twice."""

from __future__ import annotations

from typing import Any

from shared_lib.policy.effective import Policy
from shared_lib.policy.guardian import evaluate, proposal_hash
from shared_lib.tools.registry import ToolRegistry
from shared_lib.turn.decisions import Verdict
from shared_lib.turn.proposal import Proposal
from tests.unit.policy.policy_fakes import NOW, config, tool_call

EMPTY = ToolRegistry([])


def approval_for(
    proposal: Proposal,
    verdict: Verdict,
    *,
    by: str = "u1",
    proposer: str = "u1",
    confirmations: int = 1,
    **changes: Any,
) -> dict[str, Any]:
    """What the state layer puts on the turn when the proposer answers はい."""
    return {
        "approval_id": "ap-TEST01",
        "approved": True,
        "by": by,
        "proposer": proposer,
        "params_hash": proposal_hash(proposal),
        "policy_version": verdict.details["policy_version"],
        "reasons": verdict.details["covers"],
        "concerns": verdict.details["concerns"],
        "double": verdict.double_confirmation,
        "confirmations": confirmations,
        **changes,
    }


def judge(proposal: Proposal, approval: dict[str, Any] | None = None, **kw: Any) -> Verdict:
    return evaluate(proposal, registry=EMPTY, now=NOW, approval=approval, user_id="u1", **kw)


def test_an_approval_of_the_same_action_under_the_same_policy_passes():
    # GIVEN an action that needed a confirmation
    proposal = tool_call("save_memory", {"content": "x"}, confidence=0.6)
    first = judge(proposal)
    assert first.reason_code == "confidence.medium"
    # WHEN its proposer approves it unchanged
    verdict = judge(proposal, approval_for(proposal, first))
    # THEN it passes, naming the approval
    assert (verdict.action, verdict.reason_code) == ("allow", "pass")
    assert verdict.details["approval_id"] == "ap-TEST01"


def test_a_block_still_blocks_after_an_approval():
    # GIVEN a medium-risk deletion proposed with almost no confidence (the confirmation comes first)
    proposal = tool_call("delete_task", {"task_id": "t1"}, confidence=0.1)
    first = judge(proposal)
    assert first.reason_code == "danger.medium"
    # WHEN it is approved THEN the block below it still blocks
    verdict = judge(proposal, approval_for(proposal, first))
    assert (verdict.action, verdict.reason_code) == ("block", "confidence.too_low")


def test_changed_parameters_are_confirmed_again_under_a_new_approval():
    proposal = tool_call("pay", {"amount": 200_000})
    approval = approval_for(proposal, judge(proposal))
    tampered = tool_call("pay", {"amount": 900_000})
    verdict = judge(tampered, approval)
    assert (verdict.action, verdict.reason_code) == ("confirm", "params.amount_high")
    assert verdict.details["reconfirm"] == "params_changed"
    assert verdict.details["previous_approval_id"] == "ap-TEST01"


def test_changed_parameters_that_need_nothing_are_still_confirmed_again():
    proposal = tool_call("pay", {"amount": 200_000})
    approval = approval_for(proposal, judge(proposal))
    verdict = judge(tool_call("pay", {"amount": 10}), approval)
    assert (verdict.action, verdict.reason_code) == ("confirm", "approval.changed")


def test_a_changed_policy_is_confirmed_again():
    proposal = tool_call("save_memory", {"content": "x"}, confidence=0.6)
    approval = approval_for(proposal, judge(proposal))
    verdict = judge(proposal, approval, config=config(confidence={"medium": 0.65}))
    assert (verdict.action, verdict.details["reconfirm"]) == ("confirm", "policy_changed")


def test_a_tampered_approval_that_would_block_blocks():
    proposal = tool_call("pay", {"amount": 200_000})
    approval = approval_for(proposal, judge(proposal))
    verdict = judge(tool_call("change_permission", {"new_level": 6}), approval)
    assert verdict.reason_code == "danger.blocked_operation"


def test_an_approval_from_someone_else_never_passes():
    proposal = tool_call("pay", {"amount": 200_000})
    first = judge(proposal)
    for approval in (
        approval_for(proposal, first, by="u2"),
        approval_for(proposal, first, proposer="u2", by="u2"),
    ):
        verdict = judge(proposal, approval)  # the turn's user is u1
        assert (verdict.action, verdict.reason_code) == ("block", "approval.foreign")


def test_a_double_confirmation_needs_two_answers():
    # GIVEN an action that needs a double confirmation
    proposal = tool_call("send_message", {"message": "全体連絡", "recipients": "all"})
    first = judge(proposal)
    assert first.double_confirmation and first.reason_code == "params.recipients_all"
    # WHEN the first はい arrives THEN the same approval asks the second time
    second = judge(proposal, approval_for(proposal, first, confirmations=1))
    assert (second.action, second.details["stage"], second.details["approval_id"]) == (
        "confirm",
        2,
        "ap-TEST01",
    )
    assert second.message == first.message
    # WHEN the second はい arrives THEN it passes
    assert judge(proposal, approval_for(proposal, first, confirmations=2)).action == "allow"


def test_a_concern_that_was_not_shown_asks_again():
    proposal = tool_call("pay", {"amount": 200_000}, confidence=0.6)
    first = judge(proposal)
    assert first.details["covers"] == ["confidence.medium", "params.amount_high"]
    partial = approval_for(proposal, first, reasons=["confidence.medium"])
    verdict = judge(proposal, partial)
    assert (verdict.action, verdict.reason_code) == ("confirm", "params.amount_high")
    assert verdict.details["satisfied"] == ["confidence.medium"]


def test_an_approved_action_with_corrections_runs_corrected():
    proposal = tool_call("create_event", {"date": "2025-01-10", "title": " 会議 "})
    first = judge(proposal)
    assert first.reason_code == "date.past"
    verdict = judge(proposal, approval_for(proposal, first))
    assert (verdict.action, verdict.modified_parameters) == (
        "modify",
        {"date": "2025-01-10", "title": "会議"},
    )
    assert verdict.details["approval_id"] == "ap-TEST01"


def test_a_denial_or_a_reminder_is_not_an_approval():
    proposal = tool_call("pay", {"amount": 200_000})
    for approval in (
        {"approval_id": "ap-TEST01", "approved": False},
        {"approval_id": "ap-TEST01", "reminder": True},
    ):
        assert judge(proposal, approval).reason_code == "params.amount_high"


def test_the_hash_covers_every_call():
    a = tool_call(
        "",
        calls=[
            {"tool_name": "pay", "parameters": {"amount": 1}},
            {"tool_name": "pay", "parameters": {"amount": 2}},
        ],
    )
    b = tool_call(
        "",
        calls=[
            {"tool_name": "pay", "parameters": {"amount": 1}},
            {"tool_name": "pay", "parameters": {"amount": 3}},
        ],
    )
    assert proposal_hash(a) != proposal_hash(b)
    assert Policy.build(config(), EMPTY).version == judge(a).details["policy_version"]


def test_a_new_concern_after_one_of_two_answers_keeps_the_double_confirmation():
    # GIVEN a broadcast with a high amount whose approval covered only the broadcast, answered once
    proposal = tool_call("send_message", {"message": "連絡", "recipients": "all", "amount": 200_000})
    first = judge(proposal)
    assert first.details["covers"] == ["params.amount_high", "params.recipients_all"]
    partial = approval_for(proposal, first, reasons=["params.recipients_all"], double=True, confirmations=1)
    # WHEN it is re-checked THEN the amount is asked about, and the new question is still a double one
    verdict = judge(proposal, partial)
    assert (verdict.reason_code, verdict.double_confirmation) == ("params.amount_high", True)
