"""The classification table of the rollback guard: who caused each verdict, and what one
record adds to the window (brain-caused signals, and the user's verdicts left out)."""

from __future__ import annotations

import pytest

from shared_lib.brain.constitution import ARTICLES
from shared_lib.errors import CATALOGUE
from shared_lib.policy.reasons import AUTH_REASONS, GUARDIAN_REASONS, PASS
from shared_lib.rollout.causes import LLM_FAILURE_CODES, VERDICT_CAUSES, cause_of, record_signals

EXPECTED = {
    "constitution.permission_decision": "brain",
    "constitution.missing_reasoning": "brain",
    "constitution.execution_assertion": "brain",
    "constitution.db_decision": "brain",
    "constitution.log_decision": "brain",
    "approval.foreign": "user",
    "approval.changed": "user",
    "security.ng_pattern": "user",
    "security.confidential": "user",
    "danger.critical": "user",
    "danger.blocked_operation": "user",
    "danger.high": "user",
    "danger.medium": "user",
    "teaching.violation": "user",
    "teaching.possible_violation": "user",
    "confidence.too_low": "brain",
    "confidence.low": "brain",
    "confidence.medium": "brain",
    "params.amount_very_high": "user",
    "params.amount_high": "user",
    "params.recipients_all": "user",
    "params.recipients_many_10": "user",
    "params.recipients_many": "user",
    "params.recipients_group": "user",
    "params.delete_multiple": "user",
    "params.delete_single": "user",
    "consistency.unfixable": "brain",
    "consistency.modified": "brain",
    "date.past": "user",
    "date.unreadable": "user",
    "date.ambiguous": "user",
    "date.far_future": "user",
    "confirmation.requested": "brain",
    "level.insufficient": "user",
    "data.no_access": "user",
    "department.no_access": "user",
    "directory.unavailable": "system",
}


def existing_codes() -> set[str]:
    """Every verdict code the policy and the brain's constitution can give (not the pass codes)."""
    return (
        set(GUARDIAN_REASONS)
        | {code for code, _ in ARTICLES.values()}
        | (set(AUTH_REASONS) - {PASS, "not_applicable"})
    )


def test_given_every_reason_code_that_exists_when_the_table_is_read_then_each_is_classified_once():
    # GIVEN the codes of shared_lib.policy.reasons and brain.constitution
    # THEN the table classifies exactly those (a new code fails here until it is classified)
    assert set(VERDICT_CAUSES) == existing_codes()
    assert set(EXPECTED) == existing_codes()


@pytest.mark.parametrize(("code", "cause"), sorted(EXPECTED.items()))
def test_given_a_reason_code_when_classified_then_its_cause_is_the_expected_one(code, cause):
    assert cause_of(code) == cause


def test_given_an_unknown_code_when_classified_then_it_counts_against_the_brain():
    assert cause_of("new.code.nobody.classified") == "brain"


def test_given_the_catalogue_when_llm_failures_are_listed_then_only_failures_after_retry_count():
    # THEN a failed call or no valid proposal after the retry counts; the retried first attempt does not
    assert {"api_timeout", "rate_limit", "parse_error", "llm_unavailable"} == LLM_FAILURE_CODES
    assert "invalid_tool_call" in CATALOGUE and "invalid_tool_call" not in LLM_FAILURE_CODES


def record(**fields) -> dict:
    return {"guardian_action": "allow", "guardian_reason": "pass", "auth_result": "allowed", **fields}


@pytest.mark.parametrize(
    ("fields", "signal"),
    [
        ({"guardian_action": "block", "guardian_reason": "danger.blocked_operation"}, "user_blocks"),
        ({"guardian_action": "block", "guardian_reason": "security.ng_pattern"}, "user_blocks"),
        ({"guardian_action": "block", "guardian_reason": "confidence.too_low"}, "blocks"),
        ({"guardian_action": "block", "guardian_reason": "directory.unavailable"}, "system_blocks"),
        ({"auth_result": "denied", "auth_reason": "level.insufficient"}, "denials"),
        ({"errors": [{"code": "llm_unavailable"}]}, "llm_errors"),
        ({"errors": [{"code": "invalid_tool_call"}, {"code": "parse_error"}]}, "llm_errors"),
        (
            {"constitution_violations": [{"code": "constitution.permission_decision", "action": "block"}]},
            "constitution_violations",
        ),
    ],
)
def test_given_a_record_when_its_signals_are_counted_then_the_verdict_lands_in_its_own_signal(fields, signal):
    counts = record_signals(record(**fields))
    assert counts[signal] == 1
    others = {"blocks", "user_blocks", "system_blocks", "denials", "llm_errors", "constitution_violations"}
    assert all(counts[name] == 0 for name in others - {signal})


def test_given_a_constitution_block_when_counted_then_it_is_a_violation_and_a_brain_block():
    counts = record_signals(
        record(guardian_action="block", guardian_reason="constitution.permission_decision")
    )
    assert (counts["constitution_violations"], counts["blocks"], counts["user_blocks"]) == (1, 1, 0)


def test_given_a_retry_that_succeeded_when_counted_then_it_is_no_llm_error():
    assert record_signals(record(errors=[{"code": "invalid_tool_call"}]))["llm_errors"] == 0


def test_given_a_suggest_violation_when_counted_then_it_is_not_a_blocking_violation():
    violation = {"code": "constitution.execution_assertion", "action": "suggest"}
    assert record_signals(record(constitution_violations=[violation]))["constitution_violations"] == 0


def test_given_tool_failures_when_counted_then_execution_errors_are_the_brains_and_bad_input_the_users():
    results = [
        {"tool_name": "t", "ok": False, "error_code": "execution_error"},
        {"tool_name": "t", "ok": False, "error_code": "external_api_error"},
        {"tool_name": "t", "ok": False, "error_code": "validation_error"},
        {"tool_name": "t", "ok": True},
        {"tool_name": "t", "ok": False, "error_code": "execution_error", "dry_run": True},
    ]
    counts = record_signals(record(execution_result=results))
    assert (counts["tool_calls"], counts["tool_errors"], counts["user_tool_errors"]) == (4, 2, 1)
