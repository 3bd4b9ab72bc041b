"""Response integration (§5.1 step ⑦, §17.5): LLM phrasing in the persona, fixed templates otherwise."""

from __future__ import annotations

from brain_fakes import MODEL, FakeLLM, events, runtime, text_answer, turn

from shared_lib.brain.integration import error_text, integrate
from shared_lib.brain.prompt import proposal_tools, stable_system
from shared_lib.errors import LLMError
from shared_lib.persona.catalogue import load_persona
from shared_lib.telemetry.llm_calls import LLMCallLog
from shared_lib.turn.callctx import call_context
from shared_lib.turn.envelope import ToolResult

PERSONA = load_persona()
DONE = ToolResult(
    tool_name="chatwork_task_create",
    call_index=0,
    ok=True,
    result={
        "task_id": "t-1",
        "body": "見積書を作成",
        "assignee": "田中",
        "limit_date": "2026-02-01",
        "note": "連絡先 taro@example.com",
    },
)


def executed(*results: ToolResult, arm: str = "llm"):
    t = turn("田中さんに見積書のタスクをお願い taro@example.com", arm=arm)
    t.proposal.arm = arm  # type: ignore[assignment]
    t.proposal.model = MODEL
    t.execution.results = list(results)
    return t


def test_given_results_of_an_llm_turn_when_integrating_then_a_second_call_phrases_them_in_the_persona():
    # GIVEN
    llm = FakeLLM(
        text_answer("田中さんにタスクを作ったウル🐺 期限は2月1日ウル。他にもあれば言ってほしいウル！")
    )
    rt, t = runtime(llm), executed(DONE)
    rt.llm = LLMCallLog(llm, rt.store, prices=rt.prices)  # the runtime's wiring of the call log
    # WHEN the responder integrates
    with call_context(t, "responder"):
        reply = integrate(t, rt)
    # THEN the phrased text is the reply, and the call is accounted on the turn and logged once
    assert reply.startswith("田中さんにタスクを作ったウル🐺")
    (request,) = llm.requests
    assert request.call_type == "integration" and request.model == MODEL
    (call,) = [doc for _, doc in rt.store.query(f"orgs/{t.org_id}/llm_calls")]
    assert t.usage.llm_calls == 1 and (call["layer"], call["call_type"]) == ("responder", "integration")
    assert call["cost_usd"] == t.usage.cost_usd and events(rt, "llm_call") == []
    # AND it reuses the proposal call's cached prefix (same tools, same first system block), tools disabled
    assert request.tools == proposal_tools(rt.registry) and request.tool_choice == {"type": "none"}
    assert request.system == [stable_system(rt.persona)]
    # AND results and message are masked, with the seed's style instructions
    prompt = request.messages[0]["content"]
    assert "taro@example.com" not in prompt and "[EMAIL_1]" in prompt and "3〜5文" in prompt
    assert '"body": "見積書を作成"' in prompt


def test_given_a_failed_result_when_integrating_then_a_fixed_template_and_no_llm_call():
    llm = FakeLLM()
    rt = runtime(llm)
    failed = ToolResult(
        tool_name="chatwork_task_create",
        call_index=0,
        ok=False,
        error_code="validation_error",
        result={"detail": "「佐藤」さんが複数います", "options": ["佐藤一郎", "佐藤花子"]},
    )
    reply = integrate(executed(failed), rt)
    assert reply == PERSONA.message(
        "validation_error", detail="「佐藤」さんが複数います（佐藤一郎／佐藤花子）"
    )
    assert llm.requests == []


def test_given_an_execution_error_when_integrating_then_the_catalogue_message():
    failed = ToolResult(tool_name="announce", call_index=0, ok=False, error_code="external_api_error")
    assert integrate(executed(failed), runtime(FakeLLM())) == PERSONA.message("external_api_error")


def test_given_a_legacy_turn_when_integrating_then_the_tools_fixed_template_is_filled():
    llm = FakeLLM()
    reply = integrate(executed(DONE, arm="legacy"), runtime(llm))
    assert (
        reply == "田中さんにタスク「見積書を作成」を作成したウル🐺（期限: 2月1日（日））"
        and llm.requests == []
    )


def test_given_list_results_when_templating_then_items_become_lines():
    search = ToolResult(
        tool_name="chatwork_task_search",
        call_index=0,
        ok=True,
        result={
            "assignee": "山田",
            "count": 2,
            "tasks": [{"task_id": "t1", "body": "見積書"}, {"task_id": "t2", "body": "請求書"}],
        },
    )
    reply = integrate(executed(search, arm="legacy"), runtime(FakeLLM()))
    assert reply == "山田さんのタスクは2件あるウル🐺\n- 見積書\n- 請求書"


def test_given_the_phrasing_call_fails_when_integrating_then_the_template_answers_and_the_error_is_kept():
    rt, t = runtime(FakeLLM(LLMError("rate_limit", "429"))), executed(DONE)
    reply = integrate(t, rt)
    assert reply.startswith("田中さんにタスク「見積書を作成」を作成したウル🐺")
    assert [(e.code, e.layer) for e in t.errors] == [("rate_limit", "responder")]


def test_given_a_phrasing_cut_by_max_tokens_when_integrating_then_it_is_continued():
    llm = FakeLLM(text_answer("田中さんにタスクを", stop_reason="max_tokens"), text_answer("作ったウル🐺"))
    reply = integrate(executed(DONE), runtime(llm))
    assert reply == "田中さんにタスクを作ったウル🐺"
    assert [r.call_type for r in llm.requests] == ["integration", "continuation"]
    assert llm.requests[1].messages[-1] == {"role": "assistant", "content": "田中さんにタスクを"}


def test_given_error_codes_when_voiced_then_silent_and_unknown_codes_fall_back_by_category():
    assert error_text(PERSONA, "api_timeout") == PERSONA.message("api_timeout")
    assert error_text(PERSONA, "invalid_tool_call") == PERSONA.message("llm_unavailable")  # silent in §6.7.3
    assert error_text(PERSONA, "no_such_code") == PERSONA.message("execution_error")
