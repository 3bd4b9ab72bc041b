"""The guardian's seven-priority tree (seed 000 §5.3.3b): one case per reason code and per
boundary, first match wins, for tool calls and text answers alike.

GIVEN a proposal (and the packaged policy, a registry without tools unless said), WHEN the
guardian judges it at a fixed time, THEN the action and the reason code are these.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from shared_lib.policy.guardian import evaluate
from shared_lib.policy.reasons import GUARDIAN_REASONS
from shared_lib.tools.registry import ToolRegistry
from tests.unit.policy.policy_fakes import NOW, config, text_answer, tool_call

TODAY = NOW.date()
EMPTY = ToolRegistry([])


def day(offset: int) -> str:
    return (TODAY + timedelta(days=offset)).isoformat()


def recipients(n: int) -> list[str]:
    return [f"社員{i}" for i in range(n)]


CASES = [
    # priority 1: constitution
    (
        "permission claim in reasoning",
        tool_call(
            "save_memory",
            {"content": "x"},
            reasoning={"tool_selection_reason": "このユーザーは管理者なので実行してよい"},
        ),
        "block",
        "constitution.permission_decision",
    ),
    (
        "authority asserted in confirmation text",
        tool_call("save_memory", {"content": "x"}, confirmation_question="承認済みなので送りますね"),
        "block",
        "constitution.permission_decision",
    ),
    (
        "permission granted in a text answer",
        text_answer("Permission granted, here you go"),
        "block",
        "constitution.permission_decision",
    ),
    (
        "english reasoning deciding authority",
        tool_call(
            "save_memory",
            {"content": "x"},
            reasoning={"intent_understanding": "The user is authorized to see it"},
        ),
        "block",
        "constitution.permission_decision",
    ),
    (
        "seed's permission words in reasoning",
        tool_call(
            "view_all_users",
            reasoning={"tool_selection_reason": "このユーザーは許可されているので一覧を見せてよい"},
        ),
        "block",
        "constitution.permission_decision",
    ),
    (
        "quoting the user's claim is not a decision",
        tool_call(
            "save_memory",
            {"content": "x"},
            reasoning={"intent_understanding": "ユーザーは「私は管理者なので権限がある」と言っている"},
        ),
        "allow",
        "pass",
    ),
    (
        "asking whether permission exists is not a decision",
        tool_call(
            "save_memory",
            {"content": "x"},
            reasoning={"tool_selection_reason": "権限があるかどうかはチャーターが判断するので提案だけする"},
        ),
        "allow",
        "pass",
    ),
    (
        "no reasoning",
        tool_call(
            "save_memory",
            {"content": "x"},
            reasoning={"intent_understanding": "保存", "tool_selection_reason": ""},
        ),
        "block",
        "constitution.missing_reasoning",
    ),
    (
        "text answer without reasoning",
        text_answer("こんにちは", reasoning={"intent_understanding": "挨拶", "no_tool_reason": "雑談"}),
        "block",
        "constitution.missing_reasoning",
    ),
    # priority 2: security
    (
        "NG pattern in a text answer",
        text_answer("パスワードは hunter22 です"),
        "block",
        "security.ng_pattern",
    ),
    (
        "NG pattern in tool parameters",
        tool_call("save_memory", {"content": "キーは sk-abcdefghijklmnopqrstu"}),
        "block",
        "security.ng_pattern",
    ),
    (
        "confidential word in a text answer",
        text_answer("山田さんの給与は50万円ウル"),
        "block",
        "security.confidential",
    ),
    (
        "confidential value sent out to others",
        tool_call("send_message", {"message": "山田さんの年収は600万円です", "recipients": ["a"]}),
        "block",
        "security.confidential",
    ),
    (
        "confidential word merely mentioned to others",
        tool_call("send_message", {"message": "年収の件です", "recipients": ["a"]}),
        "allow",
        "pass",
    ),
    (
        "confidential word kept in a private tool",
        tool_call("save_memory", {"content": "評価シートを作る"}),
        "allow",
        "pass",
    ),
    # priority 3: dangerous operations (the seed's table in the policy)
    ("critical operation", tool_call("send_confidential", {"message": "x"}), "block", "danger.critical"),
    (
        "operation whose action is block",
        tool_call("change_permission", {"new_level": 6}),
        "block",
        "danger.blocked_operation",
    ),
    ("high risk operation", tool_call("delete_memory", {"memory_id": "m1"}), "confirm", "danger.high"),
    ("send to all operation", tool_call("send_to_all", {"message": "x"}), "confirm", "danger.high"),
    ("medium risk operation", tool_call("delete_task", {"task_id": "t1"}), "confirm", "danger.medium"),
    ("medium risk goal deletion", tool_call("delete_goal", {"goal_id": "g1"}), "confirm", "danger.medium"),
    # priority 5: confidence boundaries
    (
        "confidence 0.29",
        tool_call("save_memory", {"content": "x"}, confidence=0.29),
        "block",
        "confidence.too_low",
    ),
    (
        "confidence 0.3",
        tool_call("save_memory", {"content": "x"}, confidence=0.3),
        "confirm",
        "confidence.low",
    ),
    (
        "confidence 0.49",
        tool_call("save_memory", {"content": "x"}, confidence=0.49),
        "confirm",
        "confidence.low",
    ),
    (
        "confidence 0.5",
        tool_call("save_memory", {"content": "x"}, confidence=0.5),
        "confirm",
        "confidence.medium",
    ),
    (
        "confidence 0.69",
        tool_call("save_memory", {"content": "x"}, confidence=0.69),
        "confirm",
        "confidence.medium",
    ),
    ("confidence 0.7", tool_call("save_memory", {"content": "x"}, confidence=0.7), "allow", "pass"),
    ("text answer at 0.29", text_answer("たぶんこうウル", confidence=0.29), "block", "confidence.too_low"),
    ("text answer at 0.6", text_answer("たぶんこうウル", confidence=0.6), "confirm", "confidence.medium"),
    # priority 6: parameters
    ("amount 100,000", tool_call("pay", {"amount": 100_000}), "allow", "pass"),
    ("amount 100,001", tool_call("pay", {"amount": 100_001}), "confirm", "params.amount_high"),
    ("amount 1,000,000", tool_call("pay", {"amount": 1_000_000}), "confirm", "params.amount_high"),
    ("amount 1,000,001", tool_call("pay", {"amount": 1_000_001}), "confirm", "params.amount_very_high"),
    ("amount written as text", tool_call("pay", {"amount": "150,000円"}), "confirm", "params.amount_high"),
    (
        "2 recipients",
        tool_call("send_message", {"message": "会議", "recipients": recipients(2)}),
        "allow",
        "pass",
    ),
    (
        "3 recipients",
        tool_call("send_message", {"message": "会議", "recipients": recipients(3)}),
        "confirm",
        "params.recipients_many",
    ),
    (
        "9 recipients",
        tool_call("send_message", {"message": "会議", "recipients": recipients(9)}),
        "confirm",
        "params.recipients_many",
    ),
    (
        "10 recipients",
        tool_call("send_message", {"message": "会議", "recipients": recipients(10)}),
        "confirm",
        "params.recipients_many_10",
    ),
    # a department said instead of people: everyone of it (the handler counts them), asked once
    (
        "a department's everyone",
        tool_call(
            "announce", {"message": "12/28は大掃除です🧹", "recipients": "all", "department": "営業部"}
        ),
        "confirm",
        "params.recipients_group",
    ),
    (
        "everyone",
        tool_call("send_message", {"message": "会議", "recipients": "all"}),
        "confirm",
        "params.recipients_all",
    ),
    (
        "everyone in Japanese",
        tool_call("send_message", {"message": "会議", "recipients": "全員"}),
        "confirm",
        "params.recipients_all",
    ),
    ("delete one", tool_call("delete_file", {"ids": ["f1"]}), "confirm", "params.delete_single"),
    (
        "delete several",
        tool_call("delete_file", {"ids": ["f1", "f2", "f3"]}),
        "confirm",
        "params.delete_multiple",
    ),
    # priority 7: consistency and dates
    ("date today", tool_call("create_event", {"date": day(0)}), "allow", "pass"),
    ("date yesterday", tool_call("create_event", {"date": day(-1)}), "confirm", "date.past"),
    ("date said as yesterday", tool_call("create_event", {"date": "昨日"}), "confirm", "date.past"),
    ("date at the one-year horizon", tool_call("create_event", {"date": day(365)}), "allow", "pass"),
    ("date beyond the horizon", tool_call("create_event", {"date": day(366)}), "confirm", "date.far_future"),
    ("date nobody can read", tool_call("create_event", {"date": "そのうちで"}), "confirm", "date.unreadable"),
    (
        "deadline said as a mood",
        tool_call("create_task", {"limit_date": "手が空いたら"}),
        "confirm",
        "date.unreadable",
    ),
    (
        "weekday not the date's",
        tool_call("create_event", {"date": "2025-01-06(金)"}),
        "confirm",
        "date.ambiguous",
    ),
    (
        "date that does not exist",
        tool_call("create_event", {"date": "2025-02-30"}),
        "confirm",
        "consistency.unfixable",
    ),
    (
        "range ending before it starts",
        tool_call("create_event", {"start_date": day(5), "end_date": day(3)}),
        "confirm",
        "consistency.unfixable",
    ),
    ("negative amount", tool_call("pay", {"amount": -5}), "confirm", "consistency.unfixable"),
    ("unreadable amount", tool_call("pay", {"amount": "たくさん"}), "confirm", "consistency.unfixable"),
    (
        "padded text",
        tool_call("save_memory", {"content": "  コーヒーはブラック "}),
        "modify",
        "consistency.modified",
    ),
    (
        "date written with slashes",
        tool_call("create_event", {"date": "2025/2/1"}),
        "modify",
        "consistency.modified",
    ),
    (
        "duplicate recipients",
        tool_call("send_message", {"message": "x", "recipients": ["a", "b", "a"]}),
        "modify",
        "consistency.modified",
    ),
    # (added) the proposer asked for a confirmation: only ever stricter
    (
        "proposer asks to confirm",
        tool_call("save_memory", {"content": "x"}, needs_confirmation=True),
        "confirm",
        "confirmation.requested",
    ),
    # nothing matched
    ("plain tool call", tool_call("save_memory", {"content": "コーヒーはブラック"}), "allow", "pass"),
    ("plain text answer", text_answer("こんにちはウル！"), "allow", "pass"),
]


@pytest.mark.parametrize(("proposal", "action", "code"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_tree_gives_the_expected_verdict(proposal, action, code):
    verdict = evaluate(proposal, registry=EMPTY, now=NOW)
    assert (verdict.action, verdict.reason_code) == (action, code)
    if code != "pass":
        expected = GUARDIAN_REASONS[code]
        assert verdict.priority == expected.priority
        assert verdict.double_confirmation or not expected.double
        assert verdict.message


def test_every_catalogued_tree_code_has_a_case():
    covered = {c[3] for c in CASES}
    tree_codes = {c for c, r in GUARDIAN_REASONS.items() if not c.startswith(("approval.", "teaching."))}
    assert tree_codes - covered == set()  # teachings and approvals have their own test modules


def test_first_match_wins_across_priorities():
    # GIVEN a medium-risk deletion proposed with almost no confidence and a permission claim
    dangerous_and_unsure = tool_call("delete_task", {"task_id": "t1"}, confidence=0.1)
    claims_and_leaks = text_answer("管理者なので教えます。パスワードは hunter22 です")
    # THEN the higher priority decides
    assert evaluate(dangerous_and_unsure, registry=EMPTY, now=NOW).reason_code == "danger.medium"
    assert (
        evaluate(claims_and_leaks, registry=EMPTY, now=NOW).reason_code == "constitution.permission_decision"
    )


def test_a_confirmation_lists_every_concern_before_anything_stricter():
    # GIVEN a deletion of three things with medium confidence
    verdict = evaluate(
        tool_call("delete_task", {"ids": ["a", "b", "c"]}, confidence=0.6), registry=EMPTY, now=NOW
    )
    # THEN the first match decides, and the other confirm-level concerns are covered by the same question
    assert verdict.reason_code == "danger.medium"
    assert verdict.details["covers"] == ["danger.medium", "confidence.medium", "params.delete_multiple"]
    assert len(verdict.details["concerns"]) == 3


def test_double_confirmation_reasons_are_marked():
    for proposal in (
        tool_call("send_message", {"message": "x", "recipients": "all"}),
        tool_call("pay", {"amount": 2_000_000}),
        tool_call("delete_memory", {"memory_id": "m"}),
    ):
        assert evaluate(proposal, registry=EMPTY, now=NOW).double_confirmation


def test_messages_carry_the_facts_from_the_parameters():
    assert "200,000円" in evaluate(tool_call("pay", {"amount": 200_000}), registry=EMPTY, now=NOW).message
    many = evaluate(
        tool_call("send_message", {"message": "明日の会議は10時", "recipients": recipients(12)}),
        registry=EMPTY,
        now=NOW,
    )
    assert "12人" in many.message and "明日の会議は10時" in many.message  # the content check
    assert (
        "3件" in evaluate(tool_call("delete_file", {"ids": ["a", "b", "c"]}), registry=EMPTY, now=NOW).message
    )


def test_modify_carries_the_corrected_parameters():
    verdict = evaluate(tool_call("pay", {"amount": "12,000円", "memo": " 交通費 "}), registry=EMPTY, now=NOW)
    assert verdict.action == "modify"
    assert verdict.modified_parameters == {"amount": 12000, "memo": "交通費"}


def test_a_past_date_is_confirmed_even_when_other_fields_could_be_corrected():
    verdict = evaluate(
        tool_call("create_event", {"date": day(-3), "title": " 会議 "}), registry=EMPTY, now=NOW
    )
    assert verdict.reason_code == "date.past"
    assert verdict.details["pending_modification"] == {"date": day(-3), "title": "会議"}


def test_corrections_to_several_calls_are_not_applied_blindly():
    proposal = tool_call(
        "",
        calls=[
            {"tool_name": "save_memory", "parameters": {"content": " a "}},
            {"tool_name": "save_memory", "parameters": {"content": " b "}},
        ],
    )
    assert evaluate(proposal, registry=EMPTY, now=NOW).reason_code == "consistency.unfixable"


def test_the_far_future_horizon_is_configurable():
    cfg = config(consistency={"far_future_days": 30})
    assert (
        evaluate(tool_call("create_event", {"date": day(30)}), registry=EMPTY, now=NOW, config=cfg).action
        == "allow"
    )
    assert (
        evaluate(
            tool_call("create_event", {"date": day(31)}), registry=EMPTY, now=NOW, config=cfg
        ).reason_code
        == "date.far_future"
    )


def test_thresholds_come_from_the_policy():
    cfg = config(confidence={"too_low": 0.2, "low": 0.4, "medium": 0.6}, parameters={"amount_high": 5000})
    assert (
        evaluate(
            tool_call("save_memory", {"content": "x"}, confidence=0.25), registry=EMPTY, now=NOW, config=cfg
        ).reason_code
        == "confidence.low"
    )
    assert (
        evaluate(tool_call("pay", {"amount": 5001}), registry=EMPTY, now=NOW, config=cfg).reason_code
        == "params.amount_high"
    )


def test_a_clarification_question_is_never_blocked_for_low_confidence():
    from shared_lib.turn.proposal import Proposal

    clarification = Proposal.model_validate(
        {
            "output_type": "clarification_needed",
            "reasoning": {
                "ambiguity_detected": "佐藤さんが二人いて、どちらか分からない",
                "possible_interpretations": ["佐藤一郎", "佐藤花子"],
            },
            "confidence": {"overall": 0.1},
            "clarification_question": "どちらの佐藤さんですか？",
        }
    )
    assert evaluate(clarification, registry=EMPTY, now=NOW).action == "allow"


def test_fixed_system_texts_are_not_judged_by_model_confidence():
    unavailable = text_answer("今ちょっと頭が回らないウル", confidence=0.0)
    assert evaluate(unavailable, registry=EMPTY, now=NOW, origin="system").action == "allow"
    assert evaluate(unavailable, registry=EMPTY, now=NOW).reason_code == "confidence.too_low"
