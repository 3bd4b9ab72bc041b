"""Company teachings (priority 4): prompt text plus machine-checkable conditions."""

from __future__ import annotations

from datetime import datetime

import pytest

from shared_lib.policy.guardian import evaluate
from shared_lib.policy.teachings import Teaching, teachings_prompt, valid_teachings
from shared_lib.tools.registry import ToolRegistry
from tests.unit.policy.policy_fakes import JST, NOW, config, text_answer, tool_call

EMPTY = ToolRegistry([])
NO_NIGHT_BROADCAST = {
    "id": "night",
    "title": "深夜に全員へ連絡しない",
    "text": "22時から翌7時までは全員宛ての連絡をしない",
    "effect": "block",
    "when": {
        "tools": ["send_message"],
        "parameters": [{"key": "recipients", "op": "eq", "value": "all"}],
        "time_windows": [{"start": "22:00", "end": "07:00"}],
    },
}
BIG_SPEND = {
    "id": "spend",
    "title": "5万円を超える支出は慎重に",
    "text": "5万円を超える支出は上長と相談する",
    "effect": "confirm",
    "when": {"tools": ["pay"], "parameters": [{"key": "amount", "op": "gt", "value": 50000}]},
}
NO_COMPETITOR_TALK = {
    "id": "competitor",
    "title": "競合の話をしない",
    "text": "競合他社の評判は話題にしない",
    "effect": "block",
    "when": {"text_patterns": ["競合他社"]},
}
PROMPT_ONLY = {"id": "smile", "title": "笑顔で", "text": "いつも前向きな言葉を選ぶ"}
POLICY = config(teachings=[NO_NIGHT_BROADCAST, BIG_SPEND, NO_COMPETITOR_TALK, PROMPT_ONLY])


def at(hour: int, minute: int = 0) -> datetime:
    return NOW.replace(hour=hour, minute=minute)


@pytest.mark.parametrize(
    ("when", "action", "code"),
    [
        (at(23), "block", "teaching.violation"),
        (at(6, 59), "block", "teaching.violation"),
        (at(7), "confirm", "params.recipients_all"),  # outside the window the teaching is silent
        (at(21, 59), "confirm", "params.recipients_all"),
    ],
)
def test_a_time_window_crossing_midnight(when, action, code):
    # GIVEN a teaching forbidding broadcasts at night WHEN everyone is messaged at ``when``
    verdict = evaluate(
        tool_call("send_message", {"message": "会議", "recipients": "all"}),
        registry=EMPTY,
        now=when,
        config=POLICY,
    )
    # THEN
    assert (verdict.action, verdict.reason_code) == (action, code)


def test_a_possible_violation_asks_and_shows_the_teaching():
    verdict = evaluate(tool_call("pay", {"amount": 60000}), registry=EMPTY, now=NOW, config=POLICY)
    assert (verdict.action, verdict.reason_code) == ("confirm", "teaching.possible_violation")
    assert "5万円を超える支出は慎重に" in verdict.message and "上長と相談する" in verdict.message
    assert verdict.details["teaching_id"] == "spend"


def test_parameter_conditions_must_all_hold():
    assert (
        evaluate(tool_call("pay", {"amount": 50000}), registry=EMPTY, now=NOW, config=POLICY).action
        == "allow"
    )
    assert (
        evaluate(tool_call("refund", {"amount": 60000}), registry=EMPTY, now=NOW, config=POLICY).action
        == "allow"
    )


def test_a_text_pattern_teaching_applies_to_text_answers():
    verdict = evaluate(text_answer("競合他社の評判は悪いウル"), registry=EMPTY, now=NOW, config=POLICY)
    assert verdict.reason_code == "teaching.violation"


def test_a_clear_violation_outranks_a_possible_one():
    both = config(
        teachings=[
            BIG_SPEND,
            {
                **BIG_SPEND,
                "id": "hard",
                "title": "10万円超は禁止",
                "effect": "block",
                "when": {"tools": ["pay"], "parameters": [{"key": "amount", "op": "gt", "value": 55000}]},
            },
        ]
    )
    assert (
        evaluate(tool_call("pay", {"amount": 60000}), registry=EMPTY, now=NOW, config=both).reason_code
        == "teaching.violation"
    )


def test_weekday_windows_use_the_policy_time_zone():
    weekend = Teaching.model_validate(
        {
            "id": "w",
            "title": "週末連絡なし",
            "text": "週末は連絡しない",
            "effect": "block",
            "when": {"time_windows": [{"start": "00:00", "end": "23:59", "weekdays": ["sat", "sun"]}]},
        }
    )
    saturday_in_tokyo = datetime(2025, 1, 18, 8, 0, tzinfo=JST)
    assert weekend.when.time_windows[0].contains(saturday_in_tokyo)
    assert not weekend.when.time_windows[0].contains(NOW)


@pytest.mark.parametrize(
    ("op", "value", "actual", "holds"),
    [
        ("eq", "a", "a", True),
        ("ne", "a", "b", True),
        ("in", ["a", "b"], "b", True),
        ("contains", "会議", "定例会議", True),
        ("contains", "x", ["x", "y"], True),
        ("gte", 10, "10", True),
        ("lt", 10, 11, False),
        ("lte", 10, 10, True),
        ("regex", r"^\d+$", "123", True),
        ("regex", r"^\d+$", "12a", False),
        ("gt", 1, "abc", False),
    ],
)
def test_parameter_operators(op, value, actual, holds):
    t = Teaching.model_validate(
        {
            "id": "t",
            "title": "t",
            "text": "t",
            "when": {"parameters": [{"key": "k", "op": op, "value": value}]},
        }
    )
    assert t.when.parameters[0].holds({"k": actual}) is holds


def test_present_and_absent():
    t = Teaching.model_validate(
        {
            "id": "t",
            "title": "t",
            "text": "t",
            "when": {"parameters": [{"key": "k", "op": "present"}, {"key": "j", "op": "absent"}]},
        }
    )
    assert [c.holds({"k": 1}) for c in t.when.parameters] == [True, True]
    assert [c.holds({"j": 1}) for c in t.when.parameters] == [False, False]


def test_teachings_become_prompt_text_and_a_teaching_without_conditions_never_decides():
    prompt = teachings_prompt(POLICY.teachings)
    assert "笑顔で: いつも前向きな言葉を選ぶ" in prompt and "深夜に全員へ連絡しない" in prompt
    assert evaluate(text_answer("いつも元気ウル"), registry=EMPTY, now=NOW, config=POLICY).action == "allow"
    assert teachings_prompt([]) == ""


def test_teachings_from_the_context_are_used_when_well_formed():
    context = [NO_COMPETITOR_TALK, {"title": "形式の違う教え"}]
    teachings = valid_teachings(context)
    assert [t.id for t in teachings] == ["competitor"]
    verdict = evaluate(text_answer("競合他社の話ウル"), registry=EMPTY, now=NOW, teachings=teachings)
    assert verdict.reason_code == "teaching.violation"
