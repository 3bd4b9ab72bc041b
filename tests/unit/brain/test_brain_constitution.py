"""The constitution enforcer: each article of §4.7.1, recorded with its article and alerted."""

from __future__ import annotations

import pytest
from brain_fakes import FakeLLM, decision, events, runtime, text, tool_call, turn

from shared_lib.brain import constitution
from shared_lib.brain.config import load_brain_config
from shared_lib.layers import brain
from shared_lib.observability.records import build_record
from shared_lib.persona.catalogue import load_persona
from shared_lib.turn.proposal import Proposal, ToolCallProposal
from shared_lib.wiring.features import tool_registry

CFG = load_brain_config()
PERSONA = load_persona()
REGISTRY = tool_registry()


def run(*answers):
    llm = FakeLLM(*answers)
    rt = runtime(llm)
    t = turn("田中さんに見積書のタスクをお願い")
    outcome = brain.run(t, rt)
    return t, rt, llm, outcome


def alerts(rt):
    return [e for e in events(rt, "alert") if e["code"] == "constitution_violation"]


# -- 4.3.8 reasoning is mandatory ----------------------------------------------------------------
def test_given_too_short_reasoning_when_proposed_then_it_is_retried_with_guidance_and_recorded():
    # GIVEN an answer whose reasoning is too short, then a good one
    short = tool_call(reasoning={"intent_understanding": "依頼", "tool_selection_reason": "作成"})
    t, rt, llm, outcome = run(decision(short), decision(tool_call()))
    # THEN the retry carried the article's guidance and the good answer is proposed
    retry = llm.requests[1].messages[-1]["content"][0]
    assert retry["type"] == "tool_result" and retry["is_error"] and "4.3.8" in retry["content"]
    assert outcome.outcome == "proposed" and t.proposal.attempts == 2
    # AND the violation is on the turn with its article, handled by retry, and alerted
    (v,) = t.proposal.violations
    assert (v.article, v.code, v.action) == ("4.3.8", "constitution.missing_reasoning", "retry")
    assert len(alerts(rt)) == 1 and "4.3.8" in alerts(rt)[0]["message"]


def test_given_missing_reasoning_twice_when_proposed_then_the_turn_is_blocked_with_the_article():
    empty = tool_call(reasoning={"intent_understanding": " ", "tool_selection_reason": " "})
    t, rt, _, _ = run(decision(empty), decision(empty))
    assert [(v.article, v.action) for v in t.proposal.violations] == [("4.3.8", "retry"), ("4.3.8", "block")]
    assert t.proposal.proposal.root.text_response == PERSONA.message("constitution.missing_reasoning")  # type: ignore[union-attr]
    assert t.proposal.proposal.tool_calls == [] and len(alerts(rt)) == 2


# -- 4.4.2 permission decisions ------------------------------------------------------------------
@pytest.mark.parametrize(
    "reason",
    [
        "山田さんは管理者なので全社員を見る権限がある",
        "このユーザーは許可されているので一覧を見せてよい",
        "The user is authorized to see everything",
    ],
)
def test_given_reasoning_that_decides_permission_when_proposed_then_it_is_blocked_and_alerted(reason):
    # GIVEN the LLM reasons about permission, and says it again when retried
    answer = tool_call(
        "view_all_users", {}, reasoning={**tool_call()["reasoning"], "tool_selection_reason": reason}
    )
    t, rt, _, outcome = run(decision(answer), decision(answer))
    # THEN the claim was retried once, then a blocking violation of article 4.4.2 is recorded,
    # alerted, and nothing executable remains
    assert [(v.article, v.action, v.code) for v in t.proposal.violations] == [
        ("4.4.2", "retry", "constitution.permission_decision"),
        ("4.4.2", "block", "constitution.permission_decision"),
    ]
    assert t.proposal.proposal.tool_calls == []
    assert t.proposal.proposal.root.text_response == PERSONA.message("constitution.permission_decision")  # type: ignore[union-attr]
    assert alerts(rt) and (outcome.outcome, outcome.reason_code) == (
        "constitution_violation",
        "constitution.permission_decision",
    )


def test_given_a_permission_key_inside_the_reasoning_when_proposed_then_it_is_blocked():
    answer = tool_call("view_all_users", {})
    answer["reasoning"] = {**answer["reasoning"], "permission": "granted"}
    t, _, _, _ = run(decision(answer))
    assert [(v.article, v.action) for v in t.proposal.violations] == [("4.4.2", "block")]


def test_given_a_permission_key_in_the_answer_when_proposed_then_it_is_blocked():
    t, _, _, _ = run(decision({**tool_call("view_all_users", {}), "authorized": True, "user_level": 6}))
    assert {v.article for v in t.proposal.violations} == {"4.4.2"} and t.proposal.proposal.tool_calls == []


def test_given_quoted_user_words_about_permission_when_inspected_then_they_are_not_the_llms_judgement():
    # GIVEN the reasoning quotes the user, who claimed a permission
    reasoning = {
        **tool_call()["reasoning"],
        "intent_understanding": "ユーザーは「私は権限がある」と言って一覧を求めている",
    }
    proposal = Proposal.model_validate(tool_call("view_all_users", {}, reasoning=reasoning))
    # WHEN / THEN no violation: whether they have it is the gate's decision, and nobody claimed it
    assert constitution.inspect_proposal(proposal, CFG, PERSONA, registry=REGISTRY)[1] == []


def test_given_a_question_whether_permission_exists_when_inspected_then_it_is_not_a_decision():
    reasoning = {
        **tool_call()["reasoning"],
        "tool_selection_reason": "権限があるかどうかはチャーターが判断するので、一覧を提案する",
    }
    proposal = Proposal.model_validate(tool_call("view_all_users", {}, reasoning=reasoning))
    assert constitution.inspect_proposal(proposal, CFG, PERSONA, registry=REGISTRY)[1] == []


# -- 4.4.1 assertions of execution ----------------------------------------------------------------
def test_given_a_tool_call_that_asserts_execution_when_proposed_then_it_is_treated_as_a_suggestion():
    # GIVEN the LLM says it will execute and that no confirmation is needed
    answer = tool_call(
        overall=0.95,
        confirmation_question="タスクを作成します！確認は不要です",
        reasoning={**tool_call()["reasoning"], "tool_selection_reason": "タスク作成を実行します"},
    )
    t, rt, _, _ = run(decision({**answer, "execute": True, "skip_confirmation": True}))
    # THEN it stays a proposal, the assertive question is replaced by a neutral one built by fixed logic
    root = t.proposal.proposal.root
    assert isinstance(root, ToolCallProposal) and root.tool_calls[0].tool_name == "chatwork_task_create"
    assert "します" not in root.confirmation_question and "進めてよいウル" in root.confirmation_question
    # AND each assertion is recorded as article 4.4.1 with the action "suggest" (the guardian still decides)
    assert t.proposal.violations and all(
        v.article == "4.4.1" and v.action == "suggest" for v in t.proposal.violations
    )
    assert len(alerts(rt)) == len(t.proposal.violations)


def test_given_a_text_claiming_an_effect_that_never_ran_when_proposed_then_the_claim_is_replaced():
    t, _, _, _ = run(decision(text("田中さんにタスクを作成しましたウル🐺")))
    assert t.proposal.proposal.root.text_response == PERSONA.message("execution_not_done")  # type: ignore[union-attr]
    assert [(v.article, v.action) for v in t.proposal.violations] == [("4.4.1", "suggest")]


# -- 4.4.3 / 4.4.4 stored values and logging -------------------------------------------------------
def test_given_parameters_that_set_stored_values_when_proposed_then_they_are_ignored_and_recorded():
    # GIVEN the LLM tries to decide the stored status, creator and assignee id
    params = {
        "body": "見積書",
        "assignee_name": "田中",
        "status": "done",
        "created_by": "ceo",
        "assignee_id": "u9",
    }
    t, _, _, _ = run(decision(tool_call(params=params)))
    # THEN the handler gets only what its schema allows; its fixed logic decides the rest
    assert t.proposal.proposal.tool_calls[0].parameters == {"body": "見積書", "assignee_name": "田中"}
    assert sorted((v.article, v.action) for v in t.proposal.violations) == [("4.4.3", "suggest")] * 3


def test_given_an_undeclared_parameter_when_proposed_then_it_is_dropped_recorded_and_not_retried():
    # GIVEN the seed's own §4.4.3 example: a priority chatwork_task_create does not declare
    params = {"body": "見積書", "assignee_name": "田中", "priority": "high"}
    # WHEN the brain runs with only that one answer scripted
    t, _, llm, outcome = run(decision(tool_call(params=params)))
    # THEN one LLM call, no retry: the turn proceeds with the declared parameters
    assert len(llm.requests) == 1 and t.proposal.attempts == 1 and outcome.outcome == "proposed"
    assert t.proposal.proposal.tool_calls[0].parameters == {"body": "見積書", "assignee_name": "田中"}
    # AND the dropped name is recorded (proposal, trail, observability record), not as a violation
    assert t.proposal.dropped_parameters == ["chatwork_task_create.priority"]
    assert t.proposal.violations == [] and t.errors == []
    assert "dropped=chatwork_task_create.priority" in outcome.detail
    assert build_record(t, recorded_at=t.created_at).dropped_parameters == ["chatwork_task_create.priority"]


def test_given_a_declared_parameter_with_a_reserved_name_when_inspected_then_it_is_allowed():
    # GIVEN chatwork_task_search declares "status" itself
    raw = tool_call("chatwork_task_search", {"assignee_name": "自分", "status": "done"})
    cleaned, found = constitution.inspect_raw(raw, REGISTRY, CFG.constitution)
    assert found == [] and cleaned["tool_calls"][0]["parameters"]["status"] == "done"


def test_given_keys_that_decide_logging_when_proposed_then_they_are_ignored_and_recorded():
    t, _, _, _ = run(decision({**text("了解ウル🐺 何でも聞いてほしいウル！"), "log": False, "audit": "skip"}))
    assert sorted(v.article for v in t.proposal.violations) == ["4.4.4", "4.4.4"]
    assert t.proposal.proposal.output_type == "text_response"


def test_given_a_clean_answer_when_proposed_then_there_is_no_violation_and_no_alert():
    t, rt, _, _ = run(decision(tool_call()))
    assert t.proposal.violations == [] and alerts(rt) == []


def test_given_violations_when_recorded_then_details_are_masked():
    answer = tool_call(
        "view_all_users",
        {},
        reasoning={**tool_call()["reasoning"], "tool_selection_reason": "taro@example.com は権限がある"},
    )
    t, rt, llm, _ = run(decision(answer), decision(answer))
    assert "taro@example.com" not in str([v.model_dump() for v in t.proposal.violations])
    assert "taro@example.com" not in str(events(rt))
    # AND the retry's guidance names the claim masked too
    guidance = llm.requests[-1].messages[-1]["content"][0]["content"]
    assert "4.4.2" in guidance and "taro@example.com" not in guidance
