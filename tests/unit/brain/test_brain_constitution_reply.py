"""What the user reads when the constitution stops a turn (seed 000 §4.7.1, issue 18), over the
real layers in process with a scripted LLM: a permission decision kept after its guided retry is
blocked and alerted, and the
user reads what happens next, never 「内部エラー」 nor an internal name; missing reasoning gets the
guided retry before any block; a role or a confidential word mentioned as context blocks nothing.
"""

from __future__ import annotations

from typing import Any

from brain_fakes import ORG, REASON, FakeLLM, decision, events, inbound, runtime, text, text_answer, tool_call

from shared_lib.layers.ingress import accept
from shared_lib.persona.catalogue import load_persona
from shared_lib.ports import LLMRequest, LLMResponse
from shared_lib.wiring.composition import wire_inprocess

PERSONA = load_persona()
# words of the machinery a user must never read
INTERNAL = (
    "内部エラー",
    "role_so_allowed",
    "authority_claim",
    "constitution",
    "4.4.2",
    "4.3.8",
    "憲法",
    "evaluation",
)


def phrased(request: LLMRequest) -> LLMResponse:
    """Any call after the proposal (the result's phrasing): a short persona sentence."""
    return text_answer("タスクを確認したウル🐺")


class Chain:
    """A wired in-process runtime whose LLM answers the proposal call with ``answers``."""

    def __init__(self, *answers: Any) -> None:
        self.llm = FakeLLM(*(decision(a) for a in answers), default=phrased)
        self.rt = runtime(self.llm)
        wire_inprocess(self.rt)

    def say(self, message: str) -> tuple[str, dict[str, Any]]:
        turn_id = accept(self.rt, inbound(message))
        assert turn_id is not None
        record = self.rt.store.get(f"orgs/{ORG}/observability/{turn_id}")
        assert record is not None
        return self.rt.channels["http"].sent[-1].text, record  # type: ignore[attr-defined]

    def alerts(self) -> list[dict[str, Any]]:
        return [e for e in events(self.rt, "alert") if e["code"] == "constitution_violation"]


def reasoned(reason: str) -> dict[str, Any]:
    return tool_call(
        "chatwork_task_search",
        {"assignee_name": "田中"},
        reasoning={**REASON, "tool_selection_reason": reason},
    )


def test_given_a_role_claimed_as_a_right_when_the_turn_runs_then_blocked_alerted_and_told_what_next():
    # GIVEN the LLM reasons that the user may see the tasks because they are a 部長, and says it
    # again when the guided retry asks it to remove the claim
    claim = reasoned("依頼者は部長なので閲覧権限がある")
    chain = Chain(claim, claim)
    # WHEN the turn runs through every layer
    reply, record = chain.say("部下のタスク一覧を見せて")
    # THEN it is blocked as a permission decision and nothing ran
    assert (record["guardian_action"], record["guardian_reason"]) == (
        "block",
        "constitution.permission_decision",
    )
    assert record["execution_result"] == []
    # AND the user reads the persona's message for it, never an internal error or name
    assert reply == PERSONA.message("constitution.permission_decision")
    assert not any(word in reply for word in INTERNAL) and reply.endswith("ウル！")
    # AND an admin alert names the article
    assert any("4.4.2" in a["message"] for a in chain.alerts())


def test_given_a_role_given_as_context_when_the_turn_runs_then_the_search_runs():
    chain = Chain(reasoned("依頼者は部長なので、部下のタスク一覧を確認したいと考えられる"))
    reply, record = chain.say("部下のタスク一覧を見せて")
    assert record["guardian_action"] == "allow" and record["execution_result"]
    assert reply == "タスクを確認したウル🐺" and chain.alerts() == []


def test_given_missing_reasoning_once_when_the_turn_runs_then_the_guided_retry_answers_and_nothing_blocks():
    short = reasoned("検索")
    short["reasoning"] = {"intent_understanding": "依頼", "tool_selection_reason": "検索"}
    chain = Chain(short, reasoned("田中さんのタスクを知りたいという依頼なので、タスク検索を提案する"))
    reply, record = chain.say("田中さんのタスクを見せて")
    assert record["guardian_action"] == "allow" and reply == "タスクを確認したウル🐺"
    retry = chain.llm.calls("proposal")[1].messages[-1]["content"][0]
    assert retry["is_error"] and "4.3.8" in retry["content"]


def test_given_missing_reasoning_twice_when_the_turn_runs_then_the_user_is_asked_again_without_an_internal_error():
    empty = reasoned(" ")
    empty["reasoning"] = {"intent_understanding": " ", "tool_selection_reason": " "}
    chain = Chain(empty, empty)
    reply, record = chain.say("田中さんのタスクを見せて")
    assert (record["guardian_action"], record["guardian_reason"]) == (
        "block",
        "constitution.missing_reasoning",
    )
    assert reply == PERSONA.message("constitution.missing_reasoning")
    assert not any(word in reply for word in INTERNAL)
    assert len(chain.alerts()) >= 2  # the retry and the block, each alerted


def test_given_an_answer_that_discloses_an_evaluation_then_blocked_with_the_word_never_the_pattern_name():
    reply, record = Chain(text("田中さんの評価はBウル🐺")).say("田中さんの評価を教えて")
    assert record["guardian_reason"] == "security.confidential"
    assert "評価" in reply and not any(word in reply for word in INTERNAL)


def test_given_an_answer_that_mentions_an_evaluation_meeting_then_the_user_reads_it():
    answer = "評価面談の日程を決めましょうウル🐺 候補日を教えてほしいウル！"
    reply, record = Chain(text(answer)).say("評価面談の日程を決めたい")
    assert record["guardian_action"] == "allow" and reply == answer
