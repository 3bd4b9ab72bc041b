"""Disclosure, not vocabulary (issue 34): a confidential topic announced to everyone is confirmed
as any announcement is; a value about a person, a credential's value or a deal's terms is blocked
with the reason code it always had.

Every pair of ``disclosure_cases`` runs through ``charter policy check`` itself (a level-6 person
announcing to everyone, and the same words as an answer), and through the brain's constitution
enforcer, which must find no permission decision in either: the words decide nothing about
permissions, and what blocks a disclosure is the guardian's security tier alone.
"""

from __future__ import annotations

import io
import json
import sys
from typing import Any

import pytest

from shared_lib.brain import constitution as enforcer
from shared_lib.brain.config import load_brain_config
from shared_lib.cli import main
from shared_lib.persona.catalogue import load_persona
from shared_lib.turn.proposal import Proposal
from shared_lib.wiring.features import tool_registry
from tests.unit.policy.disclosure_cases import CONFIDENTIAL, PAIRS
from tests.unit.policy.policy_fakes import REASONING, TEXT_REASONING

HR_HEAD = {"user_id": "u6", "org_id": "acme", "level": 6, "department_id": "hr"}
NOW = "2025-11-19T10:00:00+09:00"
BENIGN = [benign for benign, _, _ in PAIRS]
DISCLOSING = [(disclosing, code) for _, disclosing, code in PAIRS]


def announcement(message: str, tool: str = "send_to_all", **params: Any) -> dict[str, Any]:
    return {
        "output_type": "tool_call",
        "reasoning": {
            "intent_understanding": "全社員へのお知らせを送ってほしいという依頼だと理解した",
            "tool_selection_reason": "全員に同じ内容を届ける依頼なので、一斉送信のツールを選んだ",
        },
        "confidence": {"overall": 0.95},
        "tool_calls": [{"tool_name": tool, "parameters": {"message": message, **params}}],
    }


def answer(text: str) -> dict[str, Any]:
    return {
        "output_type": "text_response",
        "reasoning": TEXT_REASONING,
        "confidence": {"overall": 0.9},
        "text_response": text,
    }


def policy_check(proposal: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys) -> dict[str, Any]:
    case = {"proposal": proposal, "user": HR_HEAD, "now": NOW}
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(case, ensure_ascii=False)))
    main(["policy", "check"])
    out = json.loads(capsys.readouterr().out)
    return out["guardian"]


def permission_blocks(proposal: dict[str, Any]) -> list[str]:
    _, found = enforcer.inspect_proposal(
        Proposal.model_validate(proposal), load_brain_config(), load_persona(), registry=tool_registry()
    )
    return [v.code for v in found if v.action == "block"]


def test_the_table_has_the_pairs_it_promises():
    assert len(PAIRS) >= 150 and len(set(BENIGN)) == len(BENIGN)
    assert {code for _, code in DISCLOSING} == {CONFIDENTIAL, "security.ng_pattern"}


@pytest.mark.parametrize("sentence", BENIGN)
def test_a_topic_announced_to_everyone_is_confirmed_as_an_announcement(sentence, monkeypatch, capsys):
    # GIVEN a level-6 person announcing a sentence about a confidential topic to everyone
    proposal = announcement(sentence)
    # WHEN it is checked as an operator would
    verdict = policy_check(proposal, monkeypatch, capsys)
    # THEN the dangerous-operation rule asks as for any announcement: nothing was disclosed
    assert (verdict["action"], verdict["reason_code"]) == ("confirm", "danger.high")
    # AND the same words as an answer pass, and the constitution finds no permission decision
    assert policy_check(answer(sentence), monkeypatch, capsys)["reason_code"] == "pass"
    assert permission_blocks(proposal) == [] and permission_blocks(answer(sentence)) == []


@pytest.mark.parametrize(("sentence", "code"), DISCLOSING)
def test_a_disclosed_value_is_blocked_wherever_it_goes(sentence, code, monkeypatch, capsys):
    # GIVEN the same person announcing a value: a grade, an amount, a verdict, a credential, a deal
    verdict = policy_check(announcement(sentence), monkeypatch, capsys)
    # THEN it is blocked with the reason code disclosures always had
    assert (verdict["action"], verdict["reason_code"]) == ("block", code)
    # AND so is the same value in an answer
    assert policy_check(answer(sentence), monkeypatch, capsys)["reason_code"] == code
    # AND the block is the security tier's: the constitution sees no permission decision in it
    assert permission_blocks(announcement(sentence)) == []


# -- to whom --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("sentence", "recipients"),
    [
        ("田中さんの今期の評価はBでした。面談で詳しく話しましょう", ["田中"]),
        ("佐藤さんの年収は650万円で確定です", ["佐藤さん"]),
        ("あなたの賞与は80万円です🎁", ["u42"]),
        ("鈴木部長の査定結果はAです", ["鈴木"]),
    ],
)
def test_a_value_told_to_its_subject_alone_is_no_disclosure(sentence, recipients, monkeypatch, capsys):
    # GIVEN an announcement of a person's value to that one person
    verdict = policy_check(announcement(sentence, "announce", recipients=recipients), monkeypatch, capsys)
    # THEN nothing is disclosed: one recipient is no dangerous operation either (seed 000 §5.3.3b)
    assert verdict["action"] == "allow" and not verdict["reason_code"].startswith("security.")


@pytest.mark.parametrize(
    ("sentence", "recipients"),
    [
        ("田中さんの今期の評価はBでした", ["佐藤"]),
        ("田中さんの今期の評価はBでした", ["田中", "佐藤"]),
        ("田中さんの今期の評価はBでした", ["全員"]),
        ("あなたの賞与は80万円です🎁", ["u42", "u43"]),
        ("あなたの賞与は80万円です🎁", ["all"]),
        ("A社の買収を来月発表します", ["A"]),
    ],
)
def test_the_same_value_to_anyone_else_is_blocked(sentence, recipients, monkeypatch, capsys):
    verdict = policy_check(announcement(sentence, "announce", recipients=recipients), monkeypatch, capsys)
    assert (verdict["action"], verdict["reason_code"]) == ("block", CONFIDENTIAL)


def test_a_credential_is_blocked_even_to_one_person(monkeypatch, capsys):
    # a password in chat is a secret whoever reads it
    sent = announcement("田中さんのPWは Tanaka#0807 です", "announce", recipients=["田中"])
    assert policy_check(sent, monkeypatch, capsys)["reason_code"] == "security.ng_pattern"


@pytest.mark.parametrize(
    ("content", "disclosed"),
    [
        ("田中さんの評価はB", True),  # a colleague's grade copied into the assistant's memory
        ("佐藤花子さんの年収は480万円って聞いた", True),
        ("覚えといて：鈴木課長、来月で降格らしい", True),
        ("私の年収は500万円", False),  # the speaker's own value, kept for the speaker
        ("自分の今期の評価はAだった🎉", False),
        ("田中さんの携帯は０９０－１２３４－５６７８", False),  # a contact: kept sealed for its author
        ("経費精算の締めは毎月25日", False),
    ],
)
def test_a_memory_keeps_the_speakers_own_values_and_contacts_never_a_colleagues_hr_value(
    content, disclosed, monkeypatch, capsys
):
    # GIVEN a value the person asks the assistant to keep (read back later, in any room)
    kept = {
        **announcement(""),
        "tool_calls": [{"tool_name": "save_memory", "parameters": {"content": content}}],
    }
    kept["reasoning"] = REASONING
    # THEN a colleague's grade or pay leaves the person who said it; their own value does not
    assert (policy_check(kept, monkeypatch, capsys)["reason_code"] == CONFIDENTIAL) is disclosed


def test_a_persons_masked_contact_sent_out_is_the_value_itself(monkeypatch, capsys):
    # GIVEN the model only saw the number masked, and the executor would put it back
    sent = announcement("青木さんの携帯番号は[PHONE_1]です。急ぎの人はこちらへ")
    # THEN it discloses as the number would
    assert policy_check(sent, monkeypatch, capsys)["reason_code"] == CONFIDENTIAL
    # AND the company's own number, masked the same way, is nobody's
    assert (
        policy_check(announcement("代表電話番号は[PHONE_1]です"), monkeypatch, capsys)["action"] == "confirm"
    )


@pytest.mark.parametrize(
    ("body", "assignee", "disclosed"),
    [
        ("鈴木さんの評価は「A」だったので本人に伝える", "田中", True),  # the assignee reads 鈴木's grade
        ("佐藤さんの年収650万の件、条件面を確認しといて", "山田", True),
        ("人事評価シートを金曜までに提出", "田中", False),  # a topic word, no value about anyone
        ("年収の壁の説明会の資料づくり📄", "鈴木", False),
    ],
)
def test_a_task_body_is_read_by_its_assignee(body, assignee, disclosed, monkeypatch, capsys):
    # GIVEN a task given to someone: its body leaves the person who asked for it
    task = {
        **announcement(""),
        "tool_calls": [
            {"tool_name": "chatwork_task_create", "parameters": {"body": body, "assignee_name": assignee}}
        ],
    }
    task["reasoning"] = REASONING
    # THEN a value about someone else in it is a disclosure; an instruction about a topic is not
    assert (policy_check(task, monkeypatch, capsys)["reason_code"] == CONFIDENTIAL) is disclosed
