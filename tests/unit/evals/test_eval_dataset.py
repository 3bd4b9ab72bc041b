"""The shipped eval set is valid against the house, covers what the issue asks, and the
validator catches a case that names what does not exist."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from shared_lib.errors import ConfigError
from shared_lib.evals.dataset import PLAIN_CATEGORIES, Case, check_cases, load_cases, parse_lines
from shared_lib.tools.builtin import builtin_registry

REGISTRY = builtin_registry()
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


def test_the_set_covers_every_kind_the_issue_lists() -> None:
    groups = {c.group for c in CASES}
    assert {"dates", "injection", "small_talk", "ambiguity", "route", "guardian"} <= groups
    reasons = {c.category.split(":", 1)[1] for c in CASES if c.group == "guardian"}
    # the branches of policy/reasons.py a user's words reach with the shipped policy
    assert {
        "security.ng_pattern",
        "security.confidential",
        "danger.blocked_operation",
        "danger.high",
        "danger.medium",
        "params.recipients_all",
        "params.recipients_many",
        "params.delete_single",
        "date.past",
        "date.far_future",
        "consistency.unfixable",
        "consistency.modified",
    } <= reasons
    assert any(c.previous for c in CASES if c.category == "confirmation")


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
