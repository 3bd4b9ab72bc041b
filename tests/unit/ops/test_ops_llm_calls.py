"""The LLM call log: one masked entry per call, whatever the adapter underneath."""

from __future__ import annotations

import json

import pytest
from ops_fakes import Clock, ScriptedLLM

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.errors import LLMError
from shared_lib.ports import LLMRequest, LLMResponse
from shared_lib.prices import PriceTable
from shared_lib.telemetry.llm_calls import LLMCallLog
from shared_lib.turn.callctx import call_context
from shared_lib.turn.envelope import Turn
from shared_lib.turn.inbound import InboundMessage

DECISION = {"type": "tool", "name": "submit_proposal"}


def a_turn(*, shadow: bool = False) -> Turn:
    msg = InboundMessage(
        channel="http",
        org_id="acme",
        room_id="r1",
        user_id="u1",
        text="x",
        message_id="m1",
        event_id="e1",
        received_at="2026-11-23T00:00:00+00:00",
    )
    return Turn.from_inbound(
        msg, traceparent="00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    ).model_copy(update={"shadow": shadow})


def proposal_request(text: str) -> LLMRequest:
    return LLMRequest(
        call_type="proposal",
        model="claude-sonnet-4-5",
        max_tokens=800,
        system=[{"type": "text", "text": "あなたはソウルくんです"}],
        tools=[{"name": "submit_proposal", "input_schema": {"type": "object"}}],
        tool_choice=DECISION,
        messages=[{"role": "user", "content": f"【ユーザーのメッセージ】\n{text}"}],
    )


class FailingLLM:
    def __init__(self, code: str) -> None:
        self.code = code

    def complete(self, request: LLMRequest) -> LLMResponse:
        raise LLMError(self.code, "upstream said no to taro@example.com")


class BrokenStore(MemoryStore):
    def set(self, path, data, *, merge=False):  # type: ignore[no-untyped-def]
        raise RuntimeError("store down")


def entries(store: MemoryStore, org: str = "acme") -> list[dict]:
    return [doc for _, doc in store.query(f"orgs/{org}/llm_calls")]


def test_a_call_inside_a_turn_leaves_one_masked_entry_with_usage_and_cost():
    # GIVEN the call log around the scripted model, inside a turn's brain layer
    store, llm = MemoryStore(), ScriptedLLM()
    log = LLMCallLog(llm, store, prices=PriceTable.load(), clock=Clock())
    turn = a_turn()
    # WHEN the brain asks for a proposal about a message with an e-mail address
    with call_context(turn, "brain"):
        response = log.complete(proposal_request("taro@example.com に田中さんへのタスクをお願い"))
    # THEN the answer is the model's, and one entry records the call
    assert response.tool_uses("submit_proposal") and len(llm.calls) == 1
    (entry,) = entries(store)
    assert (
        entry["turn_id"] == turn.turn_id and entry["layer"] == "brain" and entry["session_id"] == "acme/r1/u1"
    )
    assert entry["call_type"] == "proposal" and entry["status"] == "success" and entry["peer"] == "scripted"
    assert entry["model"] == "claude-sonnet-4-5" and entry["parameters"]["max_tokens"] == 800
    assert (
        entry["prompt_tokens"] == 120
        and entry["response_tokens"] == 60
        and entry["cache_read_input_tokens"] == 40
    )
    assert entry["total_tokens"] == 220 and entry["cost_usd"] > 0 and entry["latency_ms"] == 5.0
    assert entry["tools"] == ["submit_proposal"] and entry["response_content"][0]["type"] == "tool_use"
    text = json.dumps(entry, ensure_ascii=False, default=str)
    assert "taro@example.com" not in text and "[EMAIL_1]" in text


@pytest.mark.parametrize(("code", "status"), [("api_timeout", "timeout"), ("rate_limit", "error")])
def test_a_failed_call_is_logged_and_still_raised(code, status):
    store = MemoryStore()
    log = LLMCallLog(FailingLLM(code), store)
    with call_context(a_turn(), "responder"), pytest.raises(LLMError):
        log.complete(proposal_request("hi"))
    (entry,) = entries(store)
    assert (
        entry["status"] == status
        and entry["error"].startswith(code)
        and "taro@example.com" not in entry["error"]
    )
    assert entry["response_text"] is None and entry["total_tokens"] == 0


def test_a_shadow_candidates_proposal_is_a_shadow_call():
    store = MemoryStore()
    with call_context(a_turn(shadow=True), "brain"):
        LLMCallLog(ScriptedLLM(), store).complete(proposal_request("こんにちは"))
    (entry,) = entries(store)
    assert entry["call_type"] == "shadow" and entry["shadow"] is True


def test_a_call_outside_any_turn_is_filed_under_the_default_organisation():
    store = MemoryStore()
    LLMCallLog(ScriptedLLM(), store).complete(proposal_request("こんにちは"))
    (entry,) = entries(store, "default")
    assert entry["turn_id"] is None


def test_a_store_failure_never_fails_the_call():
    # GIVEN a store that cannot be written
    log = LLMCallLog(ScriptedLLM(), BrokenStore())
    # WHEN a call is made THEN the model's answer still comes back
    assert log.complete(proposal_request("こんにちは")).tool_uses("submit_proposal")


def test_long_prompts_are_clipped_to_fit_a_document():
    store = MemoryStore()
    LLMCallLog(ScriptedLLM(), store).complete(proposal_request("あ" * 50_000))
    (entry,) = entries(store, "default")
    assert len(json.dumps(entry, ensure_ascii=False, default=str)) < 100_000


def test_a_salvaged_answer_is_logged_with_its_interruptions():
    # GIVEN an adapter whose stream was cut twice before the answer was salvaged
    class Salvaged:
        def complete(self, request: LLMRequest) -> LLMResponse:
            return LLMResponse(
                content=[{"type": "text", "text": "ok"}],
                stop_reason="end_turn",
                model=request.model,
                attempts=3,
                interruptions=2,
                salvaged=True,
            )

    store = MemoryStore()
    # WHEN a call is made
    LLMCallLog(Salvaged(), store).complete(proposal_request("こんにちは"))
    # THEN the entry keeps what the brain's records used to carry about the transport
    (entry,) = entries(store, "default")
    assert (entry["attempts"], entry["interruptions"], entry["salvaged"]) == (3, 2, True)
