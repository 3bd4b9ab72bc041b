"""The brain layer with a scripted LLM: retry with guidance, parse_error fallback, catalogue
errors, fast path, model choice, accounting, degraded mode and the legacy fallback."""

from __future__ import annotations

import pytest
from brain_fakes import (
    FAST,
    MODEL,
    FakeLLM,
    clarification,
    decision,
    events,
    runtime,
    text,
    text_answer,
    tool_call,
    turn,
    usage,
)

from shared_lib.brain import vault
from shared_lib.errors import LLMError
from shared_lib.layers import brain
from shared_lib.persona.catalogue import load_persona
from shared_lib.telemetry.llm_calls import LLMCallLog
from shared_lib.turn.callctx import call_context
from shared_lib.turn.proposal import ClarificationProposal, ToolCallProposal

PERSONA = load_persona()
TASK = "田中さんに見積書のタスクを明日までにお願い"


def test_given_a_valid_answer_when_proposed_then_the_proposal_usage_and_model_are_on_the_turn():
    # GIVEN
    llm = FakeLLM(decision(tool_call(), u=usage(1000, 200, cw=4000)))
    rt, t = runtime(llm), turn(TASK)
    rt.llm = LLMCallLog(llm, rt.store, prices=rt.prices)  # the runtime's wiring of the call log
    # WHEN
    with call_context(t, "brain"):
        outcome = brain.run(t, rt)
    # THEN
    assert outcome.outcome == "proposed" and outcome.reason_code == "tool_call"
    assert t.proposal.arm == "llm" and t.proposal.model == MODEL and t.proposal.attempts == 1
    assert (t.usage.input_tokens, t.usage.output_tokens, t.usage.cache_creation_input_tokens) == (
        1000,
        200,
        4000,
    )
    assert t.usage.llm_calls == 1
    assert t.usage.cost_usd == pytest.approx((1000 * 3 + 200 * 15 + 4000 * 3.75) / 1e6)
    # AND the one per-call record is the call log's entry, with the same numbers as the turn's total
    (call,) = [doc for _, doc in rt.store.query(f"orgs/{t.org_id}/llm_calls")]
    assert (call["turn_id"], call["layer"], call["call_type"], call["model"]) == (
        t.turn_id,
        "brain",
        "proposal",
        MODEL,
    )
    assert (call["prompt_tokens"], call["response_tokens"], call["cache_creation_input_tokens"]) == (
        1000,
        200,
        4000,
    )
    assert call["cost_usd"] == t.usage.cost_usd
    # AND nothing else records the call: no llm_call event is published
    assert events(rt, "llm_call") == []


def test_given_an_invalid_answer_then_a_valid_one_when_proposed_then_the_retry_carries_guidance():
    # GIVEN an unknown tool first
    llm = FakeLLM(decision(tool_call("format_disk", {})), decision(tool_call()))
    rt, t = runtime(llm), turn(TASK)
    # WHEN
    brain.run(t, rt)
    # THEN the second request replays the answer and returns the validator's guidance as a tool error
    retry = llm.requests[1]
    assert (
        retry.messages[1]["role"] == "assistant"
        and retry.messages[1]["content"][0]["name"] == "submit_proposal"
    )
    result = retry.messages[2]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_01" and result["is_error"]
    assert "'format_disk' is not a defined tool" in result["content"]
    assert isinstance(t.proposal.proposal.root, ToolCallProposal) and t.proposal.attempts == 2
    assert [e.code for e in t.errors] == ["invalid_tool_call"] and t.usage.llm_calls == 2


def test_given_two_invalid_answers_when_proposed_then_the_brain_asks_a_clarification_parse_error():
    # GIVEN a text instead of the decision tool, then parameters outside the schema
    llm = FakeLLM(text_answer("はいウル"), decision(tool_call(params={"body": "x"})))
    rt, t = runtime(llm), turn(TASK)
    # WHEN
    outcome = brain.run(t, rt)
    # THEN
    assert outcome.outcome == "parse_error"
    assert isinstance(t.proposal.proposal.root, ClarificationProposal)
    assert t.proposal.proposal.root.clarification_question == PERSONA.message("parse_error")
    assert [e.code for e in t.errors] == ["invalid_tool_call", "parse_error"]
    assert t.errors[-1].fallback == "request_clarification"
    assert llm.requests[1].messages[-1]["content"].startswith("前回の提出は受け付けられなかった")


@pytest.mark.parametrize("code", ["rate_limit", "api_timeout", "llm_unavailable"])
def test_given_the_llm_fails_when_proposing_then_the_persona_voices_the_catalogue_message(code):
    rt, t = runtime(FakeLLM(LLMError(code, "injected", retry_after=3.0))), turn(TASK)
    outcome = brain.run(t, rt)
    assert outcome.outcome == "llm_error" and outcome.reason_code == code
    assert t.proposal.proposal.root.text_response == PERSONA.message(code)  # type: ignore[union-attr]
    (error,) = t.errors
    assert error.code == code and error.category == "llm_error" and error.layer == "brain"


def test_given_a_greeting_when_the_fast_path_is_on_then_no_llm_is_called():
    llm = FakeLLM()
    rt, t = runtime(llm), turn("おはようございます！")
    outcome = brain.run(t, rt)
    assert outcome.outcome == "fast_path" and t.proposal.arm == "fast_path" and llm.requests == []
    assert t.proposal.proposal.root.text_response == PERSONA.message("fast_good_morning")  # type: ignore[union-attr]
    assert t.usage.llm_calls == 0


def test_given_a_greeting_when_the_fast_path_is_off_then_the_llm_answers():
    llm = FakeLLM(decision(text("おはようウル！")))
    rt, t = runtime(llm, fast_path=False), turn("おはようございます！")
    brain.run(t, rt)
    assert t.proposal.arm == "llm" and len(llm.requests) == 1


def test_given_a_simple_turn_when_proposing_then_the_fast_model_is_chosen_and_recorded():
    llm = FakeLLM(decision(text()), decision(tool_call()))
    rt = runtime(llm)
    simple, complex_ = turn("今日は暑いですね"), turn(TASK)
    first = brain.run(simple, rt)
    brain.run(complex_, rt)
    assert (simple.proposal.model, complex_.proposal.model) == (FAST, MODEL)
    assert [r.model for r in llm.requests] == [FAST, MODEL]
    assert "model=claude-haiku-4-5(simple)" in first.detail


def test_given_a_flags_model_when_proposing_then_it_is_used():
    llm = FakeLLM(decision(tool_call()))
    rt, t = runtime(llm), turn(TASK, model="claude-opus-4-5")
    brain.run(t, rt)
    assert t.proposal.model == "claude-opus-4-5" == llm.requests[0].model


def test_given_no_llm_configured_when_the_llm_arm_is_chosen_then_the_legacy_brain_answers():
    rt, t = runtime(None), turn(TASK)
    outcome = brain.run(t, rt)
    assert t.proposal.arm == "legacy" and outcome.reason_code == "legacy.no_llm"
    assert t.proposal.proposal.tool_calls[0].tool_name == "chatwork_task_create"


def test_given_the_kill_switch_when_proposing_then_no_llm_is_called():
    llm = FakeLLM()
    rt, t = runtime(llm), turn(TASK)
    t.flags = t.flags.model_copy(update={"kill_switch": True})
    brain.run(t, rt)
    assert t.proposal.arm == "kill_switch" and llm.requests == []


def test_given_the_store_unavailable_when_a_tool_is_proposed_then_the_answer_is_degraded_and_alerted():
    # GIVEN the context builder could not read the store
    llm = FakeLLM(decision(tool_call()))
    rt, t = runtime(llm), turn(TASK)
    t.context.degraded = ["user", "persons"]
    # WHEN
    outcome = brain.run(t, rt)
    # THEN the tool call cannot run: the seed's degraded message, an error and an admin alert
    assert outcome.outcome == "degraded"
    assert t.proposal.proposal.root.text_response == PERSONA.message("degraded_store")  # type: ignore[union-attr]
    assert "db_connection_error" in [e.code for e in t.errors]
    assert [e["code"] for e in events(rt, "alert")] == ["db_connection_error"]


def test_given_the_store_unavailable_when_answering_small_talk_then_the_llm_answer_is_kept():
    llm = FakeLLM(decision(text()))
    rt, t = runtime(llm), turn("今日は暑いですね")
    t.context.degraded = ["user", "session", "recent_messages", "persons"]
    assert brain.run(t, rt).outcome == "proposed" and t.proposal.proposal.output_type == "text_response"
    # AND the model is told which sources could not be read
    assert (
        "取得できなかった情報: ユーザー情報、現在のセッション、直近の会話、社内の人物"
        in llm.requests[0].system[1]["text"]
    )


def test_given_the_vault_cannot_be_written_when_a_tool_needs_a_masked_value_then_the_answer_is_degraded():
    # GIVEN a store whose transactions fail
    llm = FakeLLM(decision(tool_call(params={"body": "[EMAIL_1] に連絡", "assignee_name": "田中"})))
    rt, t = runtime(llm), turn("田中さんに taro@example.com に連絡するタスクをお願い")

    def broken(fn):
        raise ConnectionError("store down")

    rt.store.run_transaction = broken  # type: ignore[method-assign]
    assert brain.run(t, rt).outcome == "degraded"


def test_given_a_masked_message_when_proposing_then_the_vault_is_stored_encrypted_for_the_executor():
    llm = FakeLLM(decision(tool_call(params={"body": "[EMAIL_1] に連絡", "assignee_name": "田中"})))
    rt, t = runtime(llm), turn("田中さんに taro@example.com に連絡するタスクをお願い")
    brain.run(t, rt)
    doc = rt.store.get(vault.vault_path(t.org_id, t.turn_id))
    assert doc is not None and "taro@example.com" not in str(doc)
    params = t.proposal.proposal.tool_calls[0].parameters
    assert (
        vault.restore_parameters(t, params, rt.store, cipher=rt.cipher(t.org_id))["body"]
        == "taro@example.com に連絡"
    )


def test_given_a_clarification_when_proposed_then_it_is_the_proposal():
    rt, t = runtime(FakeLLM(decision(clarification()))), turn("佐藤さんにタスクをお願い")
    brain.run(t, rt)
    assert t.proposal.proposal.output_type == "clarification_needed"
