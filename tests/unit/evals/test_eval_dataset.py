"""The shipped eval set is valid against the house, covers what the issue asks, and the
validator catches a case that names what does not exist."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from shared_lib.errors import ConfigError
from shared_lib.evals.dataset import PLAIN_CATEGORIES, Case, check_cases, load_cases, parse_lines
from shared_lib.policy.config import load_policy_config
from shared_lib.policy.reasons import GUARDIAN_REASONS
from shared_lib.wiring.features import tool_registry

REGISTRY = tool_registry()
CASES = load_cases()


def _case(**expected: object) -> dict[str, object]:
    return {"id": "c1", "category": "dates", "utterance": "明日までにお願い", "expected": expected}


def test_the_shipped_set_names_only_what_the_product_has() -> None:
    # GIVEN the dataset of the repository WHEN it is checked THEN nothing is unknown
    assert check_cases(CASES, REGISTRY) == []
    assert len(CASES) >= 200


def test_every_tool_users_call_has_at_least_five_cases() -> None:
    per_tool = Counter(c.category.split(":", 1)[1] for c in CASES if c.group == "tool")
    assert {spec.name: per_tool[spec.name] for spec in REGISTRY.enabled() if per_tool[spec.name] < 5} == {}


# Reason codes no case can reach through the product, and why (each proven below or in
# test_eval_fixtures.py). A code listed here that gets cases, or a new code without cases, fails.
UNREACHABLE = {
    "approval.foreign": "a pending action belongs to one conversation (org, room, user), so only its "
    "proposer's answer makes an approval; another person's 「はい」 finds none (test_eval_fixtures.py)",
    "params.amount_high": "no registered tool declares an amount parameter (policy amount_keys), and "
    "the brain drops an undeclared one before the guardian",
    "params.amount_very_high": "as params.amount_high: no tool takes an amount",
    "params.delete_multiple": "every delete tool takes one target (an id or a query, one item deleted); "
    "none declares a parameter of the policy's delete_count_keys",
}


def _guardian_categories() -> set[str]:
    return {c.category.split(":", 1)[1] for c in CASES if c.kind == "guardian"}


def test_the_set_covers_every_kind_the_issue_lists() -> None:
    groups = {c.group for c in CASES}
    assert {"dates", "injection", "small_talk", "ambiguity", "route", "guardian", "deciding"} <= groups
    assert any(c.previous for c in CASES if c.category == "confirmation")


def test_every_guardian_branch_has_cases_but_the_proven_unreachable() -> None:
    # GIVEN the reason codes of policy/reasons.py WHEN the set's guardian categories are listed
    missing = set(GUARDIAN_REASONS) - _guardian_categories()
    # THEN exactly the unreachable ones lack cases (one covered now, or a new code, fails)
    assert set(UNREACHABLE) <= set(GUARDIAN_REASONS)
    assert missing == set(UNREACHABLE)


def test_each_guardian_case_expects_its_own_code() -> None:
    # a category is coverage only when its case checks the code (as the reason or among covers)
    for case in CASES:
        if case.kind != "guardian":
            continue
        verdict, code = case.expected.verdict, case.category.split(":", 1)[1]
        assert verdict is not None and code in [verdict.reason, *verdict.covers], case.id


def test_no_tool_takes_an_amount_or_several_targets_to_delete() -> None:
    # the proof of the params.* lines of UNREACHABLE, against the shipped policy and registry
    params = load_policy_config().parameters
    declared = {(spec.name, key) for spec in REGISTRY for key in spec.params.model_fields}
    assert {(t, k) for t, k in declared if k in params.amount_keys} == set()
    deletes = {t for t, _ in declared if any(re.search(p, t) for p in params.delete_tool_patterns)}
    assert deletes == {"delete_task", "delete_goal", "delete_memory"}
    assert {(t, k) for t, k in declared if t in deletes and k in params.delete_count_keys} == set()


def test_cases_with_a_fixed_proposal_are_the_deciding_group() -> None:
    fixed = [c for c in CASES if c.proposal is not None]
    assert fixed and all(c.group == "deciding" for c in fixed)
    assert {c.group for c in CASES if c.proposal is None} & {"deciding"} == set()


@pytest.mark.parametrize(
    ("expected", "problem"),
    [
        ({"tool": "send_fax"}, "unknown tool 'send_fax'"),
        ({"tool": "chatwork_task_create", "parameters": {"due": "明日"}}, "has no parameter 'due'"),
        ({"verdict": {"action": "block", "reason": "danger.nuclear"}}, "unknown guardian reason"),
        ({"verdict": {"action": "confirm", "covers": ["params.made_up"]}}, "unknown guardian reason"),
        ({"authorization": {"result": "denied", "reason": "level.too_low"}}, "unknown authorization reason"),
    ],
)
def test_a_case_naming_what_does_not_exist_fails(expected: dict[str, object], problem: str) -> None:
    case = Case.model_validate(_case(**expected))
    found = check_cases([case], REGISTRY)
    assert len(found) == 1 and problem in found[0]


def test_unknown_person_category_and_duplicate_ids_fail() -> None:
    stranger = Case.model_validate({**_case(clarification=True), "person": "u-nobody"})
    bad_category = Case.model_validate({**_case(clarification=True), "id": "c2", "category": "tool:fax"})
    twin = Case.model_validate({**_case(clarification=True), "id": "c2", "category": "smalltalk"})
    found = check_cases([stranger, bad_category, twin], REGISTRY)
    assert found == [
        "c1: unknown person 'u-nobody'",
        "c2: category names unknown tool 'fax'",
        "c2: duplicate id",
        "c2: unknown category 'smalltalk'",
    ]
    assert "smalltalk" not in PLAIN_CATEGORIES


@pytest.mark.parametrize(
    "line",
    [
        json.dumps(_case(route="CHITCHAT")),  # an unknown route
        json.dumps(_case()),  # expects nothing
        json.dumps({**_case(clarification=True), "extra": 1}),  # an unknown field
        json.dumps(_case(parameters={"body": "x"})),  # parameters without a tool
        "{not json",
    ],
)
def test_an_invalid_line_is_a_config_error_naming_its_line(line: str) -> None:
    with pytest.raises(ConfigError, match=r"set\.jsonl:2: "):
        parse_lines(["", line], "set.jsonl")


def _proposal(tool: str, parameters: dict[str, object], confidence: float = 0.9) -> dict[str, object]:
    """A shipped case's fixed proposal with another call (and confidence)."""
    shipped = next(c.proposal for c in CASES if c.id == "deciding-confidence-high-01")
    assert shipped is not None
    call = {"tool_name": tool, "parameters": parameters}
    return {**shipped, "confidence": {"overall": confidence}, "tool_calls": [call]}


@pytest.mark.parametrize(
    ("proposal", "problem"),
    [
        (_proposal("send_fax", {"body": "x"}), "proposal names unknown tool 'send_fax'"),
        (
            _proposal("chatwork_task_create", {"body": "見積書", "assignee_name": "田中", "amount": 5}),
            "proposal: tool chatwork_task_create has no parameter 'amount'",
        ),
        (_proposal("chatwork_task_create", {"body": "見積書"}, confidence=1.5), "invalid proposal: "),
        ({"output_type": "tool_call", "confidence": {"overall": 0.9}}, "invalid proposal: "),
    ],
)
def test_a_fixed_proposal_the_brain_would_not_accept_fails(proposal: dict[str, object], problem: str) -> None:
    # GIVEN a case whose fixed proposal names what the registry lacks, or has not a proposal's shape
    case = Case.model_validate({**_case(verdict={"action": "allow"}), "proposal": proposal})
    # WHEN the set is checked THEN that one problem is reported
    found = check_cases([case], REGISTRY)
    assert len(found) == 1 and problem in found[0], found


def test_a_valid_fixed_proposal_passes_the_check() -> None:
    case = Case.model_validate(
        {
            **_case(verdict={"action": "allow"}),
            "proposal": _proposal("chatwork_task_create", {"body": "見積書", "assignee_name": "田中"}),
        }
    )
    assert check_cases([case], REGISTRY) == [] and case.group == "deciding" and case.kind == "dates"


@pytest.mark.parametrize(
    "policy",
    [
        {"confidence": {"too_low": 0.9, "low": 0.5}},  # thresholds out of order
        {"teachings": [{"id": "t", "title": "週末", "text": "土日は依頼しない", "effect": "maybe"}]},
        {"dangerous_operations": {"delete_task": {"risk": "critical"}}},  # merged with its action "confirm"
        {"no_such_section": {}},
    ],
)
def test_a_policy_patch_that_does_not_parse_fails_the_load(policy: dict[str, object]) -> None:
    # GIVEN a line whose policy patch gives a policy the product would refuse
    line = json.dumps({**_case(verdict={"action": "allow"}), "policy": policy})
    previous = json.dumps({**_case(clarification=True), "previous": [{"text": "はい", "policy": policy}]})
    # WHEN the lines are parsed THEN the load fails naming the line and the invalid policy
    for bad in (line, previous):
        with pytest.raises(ConfigError, match=r"(?s)set\.jsonl:1: .*invalid policy configuration"):
            parse_lines([bad], "set.jsonl")
