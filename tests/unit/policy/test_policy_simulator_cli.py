"""``charter policy check``: every example of the seed's decision tree (§5.3.3b) through the
operators' simulator, plus the authorization side and malformed input."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from shared_lib.cli import main
from tests.unit.policy.policy_fakes import REASONING, TEXT_REASONING

ROOT = Path(__file__).resolve().parents[3]
NOW = "2025-01-15T10:00:00+09:00"
USER = {"user_id": "u1", "org_id": "acme", "level": 3, "department_id": "sales"}
DIRECTORY = {
    "departments": {
        "hq": {"parent": None},
        "sales": {"parent": "hq"},
        "sales_east": {"parent": "sales"},
        "sales_east_tokyo": {"parent": "sales_east"},
        "dev": {"parent": "hq"},
    },
    "users": {"u9": {"department_id": "dev", "level": 2}, "u8": {"department_id": "sales_east", "level": 2}},
}


def call(
    tool: str, params: dict[str, Any] | None = None, confidence: float = 0.95, **extra: Any
) -> dict[str, Any]:
    return {
        "output_type": "tool_call",
        "reasoning": {**REASONING, **extra.pop("reasoning", {})},
        "confidence": {"overall": confidence},
        "tool_calls": [{"tool_name": tool, "parameters": params or {}}],
        **extra,
    }


def text(answer: str, confidence: float = 0.9) -> dict[str, Any]:
    return {
        "output_type": "text_response",
        "reasoning": TEXT_REASONING,
        "confidence": {"overall": confidence},
        "text_response": answer,
    }


NIGHT_TEACHING = {
    "id": "night",
    "title": "深夜に全員へ連絡しない",
    "text": "22時以降は全員宛てに送らない",
    "effect": "block",
    "when": {"tools": ["send_message"], "time_windows": [{"start": "22:00", "end": "07:00"}]},
}
SPEND_TEACHING = {
    "id": "spend",
    "title": "5万円超は慎重に",
    "text": "上長と相談する",
    "effect": "confirm",
    "when": {"tools": ["pay"], "parameters": [{"key": "amount", "op": "gt", "value": 50000}]},
}

# (example, input overrides, action, reason code, authorization result)
TREE_EXAMPLES = [
    (
        "1 LLM decides permission",
        {
            "proposal": call(
                "save_memory", {"content": "x"}, reasoning={"tool_selection_reason": "権限があるので実行する"}
            )
        },
        "block",
        "constitution.permission_decision",
        "not_applicable",
    ),
    (
        "1 no reasoning",
        {
            "proposal": call(
                "save_memory",
                {"content": "x"},
                reasoning={"intent_understanding": "", "tool_selection_reason": ""},
            )
        },
        "block",
        "constitution.missing_reasoning",
        "not_applicable",
    ),
    (
        "2 NG pattern",
        {"proposal": text("暗証番号は 1234 です")},
        "block",
        "security.ng_pattern",
        "not_applicable",
    ),
    (
        "2 confidential in the answer",
        {"proposal": text("来期のM&Aの件ウル")},
        "block",
        "security.confidential",
        "not_applicable",
    ),
    (
        "3 critical",
        {"proposal": call("send_confidential", {"message": "x"})},
        "block",
        "danger.critical",
        "not_applicable",
    ),
    (
        "3 high, explicit block",
        {"proposal": call("change_permission", {"target_user_name": "山田", "new_level": 6})},
        "block",
        "danger.blocked_operation",
        "not_applicable",
    ),
    ("3 high", {"proposal": call("delete_memory", {"memory_id": "m1"})}, "confirm", "danger.high", "allowed"),
    ("3 medium", {"proposal": call("delete_task", {"task_id": "t1"})}, "confirm", "danger.medium", "allowed"),
    (
        "4 clear violation",
        {
            "proposal": call("send_message", {"message": "x", "recipients": ["a"]}),
            "now": "2025-01-15T23:00:00+09:00",
            "teachings": [NIGHT_TEACHING],
        },
        "block",
        "teaching.violation",
        "not_applicable",
    ),
    (
        "4 possible violation",
        {"proposal": call("pay", {"amount": 60000}), "teachings": [SPEND_TEACHING]},
        "confirm",
        "teaching.possible_violation",
        "allowed",
    ),
    (
        "5 < 0.3",
        {"proposal": call("save_memory", {"content": "x"}, 0.2)},
        "block",
        "confidence.too_low",
        "not_applicable",
    ),
    (
        "5 < 0.5",
        {"proposal": call("save_memory", {"content": "x"}, 0.4)},
        "confirm",
        "confidence.low",
        "allowed",
    ),
    (
        "5 < 0.7",
        {"proposal": call("save_memory", {"content": "x"}, 0.6)},
        "confirm",
        "confidence.medium",
        "allowed",
    ),
    (
        "6 amount > 100,000",
        {"proposal": call("pay", {"amount": 150000})},
        "confirm",
        "params.amount_high",
        "allowed",
    ),
    (
        "6 amount > 1,000,000",
        {"proposal": call("pay", {"amount": 1500000})},
        "confirm",
        "params.amount_very_high",
        "allowed",
    ),
    (
        "6 three or more recipients",
        {"proposal": call("send_message", {"message": "x", "recipients": ["a", "b", "c"]})},
        "confirm",
        "params.recipients_many",
        "allowed",
    ),
    (
        "6 ten or more recipients",
        {"proposal": call("send_message", {"message": "x", "recipients": list("abcdefghij")})},
        "confirm",
        "params.recipients_many_10",
        "allowed",
    ),
    (
        "6 everyone",
        {"proposal": call("send_message", {"message": "x", "recipients": "all"})},
        "confirm",
        "params.recipients_all",
        "allowed",
    ),
    (
        "6 single deletion",
        {"proposal": call("delete_file", {"ids": ["f1"]})},
        "confirm",
        "params.delete_single",
        "allowed",
    ),
    (
        "6 multiple deletion",
        {"proposal": call("delete_file", {"ids": ["f1", "f2"]})},
        "confirm",
        "params.delete_multiple",
        "allowed",
    ),
    (
        "7 fixable",
        {"proposal": call("save_memory", {"content": " コーヒー "})},
        "modify",
        "consistency.modified",
        "allowed",
    ),
    (
        "7 not fixable",
        {"proposal": call("create_event", {"date": "2025-13-01"})},
        "confirm",
        "consistency.unfixable",
        "allowed",
    ),
    (
        "7 past date",
        {"proposal": call("create_event", {"date": "2025-01-14"})},
        "confirm",
        "date.past",
        "allowed",
    ),
    (
        "7 far future",
        {"proposal": call("create_event", {"date": "2026-06-01"})},
        "confirm",
        "date.far_future",
        "allowed",
    ),
    (
        "all passed",
        {"proposal": call("save_memory", {"content": "コーヒーはブラック"})},
        "allow",
        "pass",
        "allowed",
    ),
    ("a text answer", {"proposal": text("こんにちはウル")}, "allow", "pass", "not_applicable"),
]


def run_check(
    payload: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, dict[str, Any] | None, str]:
    raw = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
    monkeypatch.setattr(sys, "stdin", io.StringIO(raw))
    code = main(["policy", "check", *args])
    out = capsys.readouterr()
    return code, (json.loads(out.out) if out.out.strip() else None), out.err


@pytest.mark.parametrize(
    ("overrides", "action", "code", "auth"), [e[1:] for e in TREE_EXAMPLES], ids=[e[0] for e in TREE_EXAMPLES]
)
def test_every_decision_tree_example(overrides, action, code, auth, monkeypatch, capsys):
    # GIVEN one example of the tree as an operator writes it
    payload = {"user": USER, "directory": DIRECTORY, "now": NOW, **overrides}
    # WHEN it is checked
    exit_code, out, _ = run_check(payload, monkeypatch, capsys)
    # THEN the simulator answers with the verdict and the gate's result
    assert exit_code == 0 and out is not None
    assert (out["guardian"]["action"], out["guardian"]["reason_code"]) == (action, code)
    assert out["authorization"]["result"] == auth
    assert set(out["guardian"]) >= {"action", "reason_code", "priority", "message", "modified_parameters"}
    assert set(out["authorization"]) >= {"result", "reason_code"}


def test_modified_parameters_are_printed(monkeypatch, capsys):
    payload = {"proposal": call("save_memory", {"content": " コーヒー "}), "user": USER, "now": NOW}
    _, out, _ = run_check(payload, monkeypatch, capsys)
    assert out["guardian"]["modified_parameters"] == {"content": "コーヒー"}


@pytest.mark.parametrize(
    ("user", "params", "result", "code"),
    [
        ({**USER, "level": 2}, {"target_department_id": "sales_east"}, "denied", "department.no_access"),
        ({**USER, "level": 3}, {"target_department_id": "sales_east"}, "allowed", "pass"),
        (
            {**USER, "level": 3},
            {"target_department_id": "sales_east_tokyo"},
            "denied",
            "department.no_access",
        ),
        ({**USER, "level": 4}, {"target_department_id": "sales_east_tokyo"}, "allowed", "pass"),
        ({**USER, "level": 4}, {"target_user_id": "u9"}, "denied", "data.no_access"),
        ({**USER, "level": 5}, {"target_user_id": "u9"}, "allowed", "pass"),
        ({**USER, "level": 2}, {}, "allowed", "pass"),
    ],
)
def test_the_authorization_side_uses_the_hypothetical_directory(
    user, params, result, code, monkeypatch, capsys
):
    payload = {
        "proposal": call("query_memory", {"query": "x", **params}),
        "user": user,
        "directory": DIRECTORY,
        "now": NOW,
    }
    _, out, _ = run_check(payload, monkeypatch, capsys)
    assert (out["authorization"]["result"], out["authorization"]["reason_code"]) == (result, code)


def test_the_level_comes_from_the_user_not_the_proposal(monkeypatch, capsys):
    claims = call(
        "view_all_users", reasoning={"intent_understanding": "この人はレベル6の代表だと名乗っている"}
    )
    claims["tool_calls"][0]["parameters"] = {"level": 6}
    _, out, _ = run_check({"proposal": claims, "user": {**USER, "level": 2}, "now": NOW}, monkeypatch, capsys)
    assert (out["authorization"]["result"], out["authorization"]["user_level"]) == ("denied", 2)


def test_the_level_can_come_from_the_directory(monkeypatch, capsys):
    user = {"user_id": "u9", "org_id": "acme"}
    _, out, _ = run_check(
        {"proposal": call("view_all_users"), "user": user, "directory": DIRECTORY, "now": NOW},
        monkeypatch,
        capsys,
    )
    assert (out["authorization"]["reason_code"], out["authorization"]["user_level"]) == (
        "level.insufficient",
        2,
    )


@pytest.mark.parametrize(
    ("payload", "says"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "one JSON object"),
        ({"user": USER}, "proposal"),
        ({"proposal": call("save_memory", {"content": "x"})}, "user"),
        ({"proposal": {"output_type": "tool_call"}, "user": USER}, "proposal"),
        (
            {"proposal": call("save_memory", {"content": "x"}), "user": USER, "now": "2025-01-15T10:00:00"},
            "now",
        ),
        ({"proposal": call("save_memory", {"content": "x"}), "user": {**USER, "level": 9}}, "user.level"),
    ],
)
def test_malformed_input_exits_2_with_a_clear_error(payload, says, monkeypatch, capsys):
    exit_code, out, err = run_check(payload, monkeypatch, capsys)
    assert exit_code == 2 and out is None
    assert says in err


def test_another_policy_file_can_be_checked(tmp_path, monkeypatch, capsys):
    from tests.unit.policy.policy_fakes import policy_data

    path = tmp_path / "strict.json"
    path.write_text(json.dumps(policy_data(confidence={"medium": 0.99})), encoding="utf-8")
    payload = {"proposal": call("save_memory", {"content": "x"}), "user": USER, "now": NOW}
    _, out, _ = run_check(payload, monkeypatch, capsys, "--policy", str(path))
    assert out["guardian"]["reason_code"] == "confidence.medium"
