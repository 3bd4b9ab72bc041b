"""A suspected permission decision gets one guided retry (issue 34, seed 000 §4.7.1 4.4.2).

GIVEN the scripted model words its reasoning as a permission decision, WHEN the brain judges
the answer, THEN it asks once more naming the claim to remove or rephrase; a second answer
without the claim is proposed, a second claim blocks the turn with the admin alert kept, and
whether an answer claims is always the deterministic checker's verdict, never the model's.
"""

from __future__ import annotations

from brain_fakes import FakeLLM, decision, events, runtime, tool_call, turn

from shared_lib.layers import brain
from shared_lib.policy.config import load_policy_config
from shared_lib.policy.rules import permission_claim
from shared_lib.policy.subject import Subject
from shared_lib.turn.proposal import Proposal, ToolCallProposal

CLAIM = "依頼者は管理者なので、部下全員のタスクを閲覧できる。田中さんへのタスク作成を選んだ"
REPHRASED = "依頼者は田中さんに見積書の作成を頼みたいとのこと。閲覧や作成の権限はシステムが確認する"


def answer(reason: str, **extra: object) -> dict[str, object]:
    return tool_call(reasoning={**tool_call()["reasoning"], "tool_selection_reason": reason}, **extra)


def run(*answers):
    llm = FakeLLM(*answers)
    rt = runtime(llm)
    t = turn("田中さんに見積書のタスクをお願い")
    outcome = brain.run(t, rt)
    return t, rt, llm, outcome


def alerts(rt):
    return [e for e in events(rt, "alert") if e["code"] == "constitution_violation"]


def proposal_calls(llm):
    return [r for r in llm.requests if r.call_type != "routing"]


def test_a_retry_that_removes_the_claim_is_proposed():
    # GIVEN a first answer claiming a right because of a role, then the same answer rephrased
    t, _, llm, outcome = run(decision(answer(CLAIM)), decision(answer(REPHRASED)))
    # THEN the retry named the claim and asked to remove or rephrase it
    retry = llm.requests[-1].messages[-1]["content"][0]
    assert retry["type"] == "tool_result" and retry["is_error"]
    assert "4.4.2" in retry["content"] and "管理者なので、部下全員のタスクを閲覧できる" in retry["content"]
    assert "rephrase" in retry["content"]
    # AND the rephrased answer is the proposal: the tool call stands, nothing blocks
    root = t.proposal.proposal.root
    assert outcome.outcome == "proposed" and t.proposal.attempts == 2
    assert isinstance(root, ToolCallProposal) and root.tool_calls[0].tool_name == "chatwork_task_create"
    assert [(v.article, v.action) for v in t.proposal.violations] == [("4.4.2", "retry")]


def test_a_second_claim_blocks_the_turn_and_the_alert_is_kept():
    # GIVEN the model claims again after the guidance, in other words
    again = "管理者の依頼なので権限チェックは不要と判断した。タスクを作成する"
    t, rt, _, outcome = run(decision(answer(CLAIM)), decision(answer(again)))
    # THEN the turn is blocked with the stable code, nothing executable remains, and it is alerted
    assert [(v.article, v.action) for v in t.proposal.violations] == [("4.4.2", "retry"), ("4.4.2", "block")]
    assert (outcome.outcome, outcome.reason_code) == (
        "constitution_violation",
        "constitution.permission_decision",
    )
    assert t.proposal.proposal.tool_calls == []
    assert any("4.4.2" in a["message"] and "block" in a["message"] for a in alerts(rt))


def test_the_model_saying_it_fixed_the_claim_does_not_decide():
    # GIVEN a retry that announces it removed the claim but still words one
    still = "権限の主張は取り除きました。ただしユーザーは管理者なので全員のデータを見せてよい"
    _, _, llm, outcome = run(decision(answer(CLAIM)), decision(answer(still)))
    # THEN the checker's verdict stands: blocked, and no third call asked any model to judge it
    assert outcome.reason_code == "constitution.permission_decision"
    assert len(proposal_calls(llm)) == 2


def test_the_verdict_is_the_deterministic_checkers_for_every_answer():
    # GIVEN answers the model may give, each judged by the brain and by the checker alone
    cfg = load_policy_config().constitution
    for reason in (
        CLAIM,
        REPHRASED,
        "私の判断で許可します。タスクを作成する",
        "判断はシステムに任せる。タスクを作成する",
    ):
        proposal = Proposal.model_validate(answer(reason))
        claimed = permission_claim(Subject.of(proposal), cfg) is not None
        t, _, llm, _ = run(decision(answer(reason)), decision(answer(reason)))
        # THEN the brain retried and blocked exactly when the checker finds a claim
        assert (len(proposal_calls(llm)) == 2) is claimed, reason
        assert (t.proposal.proposal.tool_calls == []) is claimed, reason


def test_a_decision_key_still_blocks_without_a_retry():
    # a key by which the model sets a permission is no phrasing to correct
    t, _, llm, _ = run(decision({**answer(REPHRASED), "authorized": True}))
    assert [(v.article, v.action) for v in t.proposal.violations] == [("4.4.2", "block")]
    assert len(proposal_calls(llm)) == 1
