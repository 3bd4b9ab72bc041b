"""The route in the turn (seed 003, seed 002 §2): the classifier decides an input no command or
rule decided, once, and only when the route will be used; the route's profile chooses the
brain's instructions, tools, model and whether a cloud model may serve it; a reply starts with
the route's one line when the route changed. In process, over the real layers, with a fake LLM
port that answers the classifier call apart from the proposal calls."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from shared_lib.brain.tool_defs import DECISION_TOOL
from shared_lib.errors import LLMError
from shared_lib.layers.context import classifier
from shared_lib.observability.logs import record_entry
from shared_lib.observability.records import ObservabilityRecord
from shared_lib.ops.render import trail
from shared_lib.persona.catalogue import load_persona
from shared_lib.ports import LLMRequest, LLMResponse
from shared_lib.routing import load_routing_config
from shared_lib.routing.config import ROUTING_FILE
from shared_lib.runtime import Runtime
from shared_lib.wiring.composition import wire_inprocess
from shared_lib.wiring.stages import STAGES
from tests.unit.brain.brain_fakes import (
    FAST,
    MODEL,
    ORG,
    FakeLLM,
    decision,
    runtime,
    served,
    text,
    text_answer,
    tool_call,
    turn,
    verdict,
)

PERSONA = load_persona()
CFG = load_routing_config()
ANALYZE_LINE = CFG.announcements["ANALYZE"]  # type: ignore[index]
# No command and no rule decides these: the classifier is asked.
UNDECIDED = "先月の問い合わせが多かった理由を090-1234-5678の山田さんと一緒に考えたい"
SMALL_TALK = "今日は暑いですね、体調管理のコツはある？"
READ_ONLY = set(CFG.profiles["ANALYZE"].tools)  # type: ignore[index, arg-type]


def answer(request: LLMRequest) -> LLMResponse:
    """Any proposal call: a text proposal; any phrasing call: text."""
    if request.call_type == "proposal":
        return decision(text())
    return text_answer("できたウル🐺")


class Chain:
    """A wired in-process runtime over a fake LLM; ``say`` runs one turn."""

    def __init__(
        self, llm: FakeLLM | None = None, *, env: dict[str, str] | None = None, **flags: Any
    ) -> None:
        self.llm = llm or FakeLLM(default=answer, classifier=verdict("ANALYZE", 0.8, "問い合わせの分析"))
        self.rt: Runtime = runtime(self.llm, env=env, **flags)
        wire_inprocess(self.rt)
        self.n = 0

    def say(self, message: str) -> tuple[str, dict[str, Any], list[LLMRequest]]:
        """(reply, observability record, the LLM requests the turn made)."""
        self.n += 1
        before = len(self.llm.requests)
        reply, record = served(self.rt, message, f"e{self.n}")
        return reply, record, self.llm.requests[before:]


def of(requests: list[LLMRequest], call_type: str) -> list[LLMRequest]:
    return [r for r in requests if r.call_type == call_type]


def brain_entry(record: dict[str, Any]) -> dict[str, Any]:
    return next(e for e in record["trail"] if e["layer"] == "brain")


def routing_file(tmp_path: Path, **profiles: dict[str, Any]) -> dict[str, str]:
    """The packaged routing file with some profiles changed, as ``CHARTER_ROUTING``."""
    data = json.loads(ROUTING_FILE.read_text(encoding="utf-8"))
    for route, change in profiles.items():
        data["profiles"][route].update(change)
    path = tmp_path / "routing.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return {"CHARTER_ROUTING": str(path)}


# -- the classifier in the turn -----------------------------------------------------------


def test_an_undecided_input_is_classified_once_and_its_route_adopted_and_counted(caplog):
    chain = Chain()
    # WHEN an input no command or rule decides is sent
    with caplog.at_level(logging.INFO):
        reply, record, requests = chain.say(UNDECIDED)
    # THEN the classifier was called exactly once, on the fast model, small, with the input masked
    (call,) = of(requests, "routing")
    assert call.model == FAST and call.max_tokens == CFG.classifier.max_tokens and not call.tools
    sent = json.dumps(call.messages, ensure_ascii=False)
    assert "山田" in sent and "090-1234-5678" not in sent and "<input>" in sent
    # AND its verdict (0.8 >= 0.6) is the turn's route, with the classifier's figures recorded
    route = record["route"]
    assert (route["initial_route"], route["source"], route["confidence"]) == ("ANALYZE", "classifier", 0.8)
    assert (route["classifier_route"], route["classifier_confidence"], route["classifier_error"]) == (
        "ANALYZE",
        0.8,
        None,
    )
    # AND its usage is the turn's: every call the turn made is counted
    # (the classifier, the proposal and — the development flags run Best-of-N and sample
    # self-critique — one other wording of its text answer, a routed one being difficulty 2,
    # N=2, and the critique when its draw fell on this turn)
    critique = ["self_critique"] if record["self_critique_executed"] else []
    assert record["usage"]["llm_calls"] == len(requests)
    assert [r.call_type for r in requests] == ["routing", "proposal", *critique, "integration"]
    # AND the log line and `charter turns show` carry it
    (line,) = [record_entry(r) for r in caplog.records if r.getMessage() == "router.decision"]
    assert (line["classifier_route"], line["classifier_confidence"], line["classifier_error"]) == (
        "ANALYZE",
        0.8,
        None,
    )
    assert "classifier ANALYZE 0.80" in trail(ObservabilityRecord.from_doc(record))
    # AND the reply starts with the route's one line
    assert reply.startswith(ANALYZE_LINE + "\n")


@pytest.mark.parametrize(
    "message, route",
    [("/plan 来週のリリースについて考えたい", "PLAN"), ("main.py の import を整理して", "CODE")],
)
def test_a_command_or_a_rule_decides_and_the_classifier_is_not_called(message, route):
    chain = Chain()
    _, record, requests = chain.say(message)
    assert of(requests, "routing") == [] and record["route"]["initial_route"] == route
    assert record["route"]["classifier_route"] is None


def test_no_classifier_call_while_local_only():
    chain = Chain()
    chain.say("/local")
    reply, record, requests = chain.say(UNDECIDED)
    # THEN not a single request reached the LLM, the route is CHAT by fallback, and the legacy brain answered
    assert requests == [] and record["route"]["initial_route"] == "CHAT" and record["arm"] == "legacy"
    assert not reply.startswith(ANALYZE_LINE)


@pytest.mark.parametrize("flags", [{"brain_mode": "legacy"}, {"kill_switch": True}])
def test_no_classifier_call_for_the_legacy_arm_or_the_kill_switch(flags):
    chain = Chain(**flags)
    _, record, requests = chain.say(UNDECIDED)
    assert of(requests, "routing") == [] and record["route"]["source"] == "fallback"


def test_no_classifier_for_a_shadow_copy_a_later_step_a_greeting_or_a_spent_budget():
    llm = FakeLLM(default=answer)
    rt = runtime(llm)
    assert classifier(turn(UNDECIDED), rt) is not None  # the same turn, served: it would be asked
    # a shadow copy never reaches the router: the stage table runs no context stage on it
    assert STAGES["context"].run(turn(UNDECIDED, shadow=True), rt).outcome == "skipped"
    assert of(llm.requests, "routing") == []
    assert classifier(turn(UNDECIDED, step=1), rt) is None
    assert classifier(turn("おはようございます！"), rt) is None  # the fast path answers it
    chain = Chain(llm)
    chain.say("こんにちは")
    assert of(llm.requests, "routing") == []


@pytest.mark.parametrize(
    "classifier_answer, error",
    [
        (text_answer("ANALYZEだと思います"), "invalid_json"),
        (verdict("SUMMARIZE", 0.9), "unknown_route"),
        (verdict("ANALYZE", 1.5), "confidence_out_of_range"),
        (LLMError("api_timeout", "classifier timed out"), "classifier_raised: LLMError"),
    ],
)
def test_a_failed_classifier_is_a_chat_fallback_and_the_turn_is_still_answered(classifier_answer, error):
    chain = Chain(FakeLLM(default=answer, classifier=classifier_answer))
    reply, record, requests = chain.say(UNDECIDED)
    route = record["route"]
    assert (route["initial_route"], route["source"], route["classifier_error"]) == ("CHAT", "fallback", error)
    assert len(of(requests, "routing")) == 1 and len(of(requests, "proposal")) == 1
    assert reply == text()["text_response"]  # no announcement, the proposal's answer


def test_a_classifier_that_raises_anything_is_a_chat_fallback():
    def broken(request: LLMRequest) -> LLMResponse:
        raise RuntimeError("connection reset")

    chain = Chain(FakeLLM(default=answer, classifier=broken))
    reply, record, _ = chain.say(UNDECIDED)
    assert record["route"]["classifier_error"] == "classifier_raised: RuntimeError"
    assert reply == text()["text_response"]


def test_a_low_confidence_verdict_is_not_adopted():
    chain = Chain(FakeLLM(default=answer, classifier=verdict("PLAN", 0.5)))
    _, record, _ = chain.say(UNDECIDED)
    route = record["route"]
    assert (route["initial_route"], route["source"], route["classifier_route"]) == (
        "CHAT",
        "fallback",
        "PLAN",
    )


# -- the route's profile in the brain -----------------------------------------------------


def test_an_analyze_turn_gets_its_instructions_block_its_tools_and_its_model():
    chain = Chain()
    _, record, requests = chain.say(UNDECIDED)
    (proposal,) = of(requests, "proposal")
    # THEN the route's block follows the persona block, cached, before the volatile context
    persona_block, route_block, context_block = proposal.system
    assert route_block == {
        "type": "text",
        "text": CFG.profiles["ANALYZE"].instructions(),  # type: ignore[index]
        "cache_control": {"type": "ephemeral"},
    }
    assert "数字と根拠を分けて" in route_block["text"] and "cache_control" not in context_block
    assert persona_block["cache_control"] == {"type": "ephemeral"}
    # AND only the route's tools are offered (the decision tool always), its enum the same
    offered = [t["name"] for t in proposal.tools or []]
    assert set(offered) == READ_ONLY | {DECISION_TOOL} and offered[-1] == DECISION_TOOL
    enum = proposal.tools[-1]["input_schema"]["properties"]["tool_calls"]["items"]["properties"]  # type: ignore[index]
    assert set(enum["tool_name"]["enum"]) == READ_ONLY
    # AND the route chose the model
    assert record["llm_model"] == MODEL and "(route:ANALYZE)" in brain_entry(record)["detail"]


def test_the_persona_block_is_the_same_bytes_on_every_route():
    chat = Chain(FakeLLM(default=answer))
    chat.say(SMALL_TALK)
    analyze = Chain()
    analyze.say(UNDECIDED)
    (chat_call,) = of(chat.llm.requests, "proposal")
    (analyze_call,) = of(analyze.llm.requests, "proposal")
    # THEN the stable block is identical; CHAT has no route block (persona, then context)
    assert chat_call.system[0] == analyze_call.system[0] and len(chat_call.system) == 2
    assert json.dumps(chat_call.system[0], ensure_ascii=False) == json.dumps(
        analyze_call.system[0], ensure_ascii=False
    )


def test_a_tool_outside_the_routes_subset_is_never_executed():
    # GIVEN the model insists on creating a task on an ANALYZE turn (not one of its tools)
    llm = FakeLLM(
        decision(tool_call()),
        decision(tool_call()),
        default=answer,
        classifier=verdict("ANALYZE", 0.8),
    )
    chain = Chain(llm)
    reply, record, requests = chain.say(UNDECIDED)
    # THEN it was refused as an invalid tool call, retried once, and the user is asked to clarify
    first, retry = of(requests, "proposal")
    assert len(first.messages) == 1 and "chatwork_task_create" in json.dumps(
        retry.messages, ensure_ascii=False
    )
    assert [e["code"] for e in record["errors"]][:2] == ["invalid_tool_call", "parse_error"]
    assert record["output_type"] == "clarification_needed" and record["execution_result"] in ([], None)
    assert chain.rt.store.query(f"orgs/{ORG}/tasks") == []
    assert "chatwork_task_create" not in reply


def test_a_route_that_no_cloud_model_may_serve_is_answered_by_the_legacy_brain(tmp_path):
    env = routing_file(tmp_path, ANALYZE={"cloud": False})
    chain = Chain(env=env)
    reply, record, requests = chain.say(UNDECIDED)
    # THEN zero proposal calls: the legacy arm answered, and said why
    assert of(requests, "proposal") == [] and of(requests, "integration") == []
    assert record["arm"] == "legacy" and brain_entry(record)["reason_code"] == "route.no_cloud"
    assert reply.startswith(ANALYZE_LINE + "\n")


def test_a_route_whose_profile_says_fast_gets_the_fast_model(tmp_path):
    chain = Chain(env=routing_file(tmp_path, ANALYZE={"model": "fast"}))
    _, record, requests = chain.say(UNDECIDED)
    (proposal,) = of(requests, "proposal")
    assert proposal.model == FAST and "(route:ANALYZE)" in brain_entry(record)["detail"]


# -- the announcement ---------------------------------------------------------------------


def test_a_route_change_is_announced_once_and_chat_never():
    llm = FakeLLM(default=answer, classifier=verdict("ANALYZE", 0.8))
    chain = Chain(llm)
    # GIVEN a CHAT turn first (a low-confidence verdict is not adopted)
    llm.classifier = verdict("CHAT", 0.3)
    chat_reply, *_ = chain.say(SMALL_TALK)
    assert chat_reply == text()["text_response"]
    # WHEN the route becomes ANALYZE: announced; WHEN it stays ANALYZE: not again
    llm.classifier = verdict("ANALYZE", 0.8)
    first, *_ = chain.say(UNDECIDED)
    again, *_ = chain.say(UNDECIDED + "。もう少し詳しく")
    assert first == f"{ANALYZE_LINE}\n{text()['text_response']}"
    assert again == text()["text_response"]
    # AND a command to another route announces that one
    planned, *_ = chain.say("/plan 来週のリリースについて考えたい")
    assert planned.startswith(CFG.announcements["PLAN"] + "\n")  # type: ignore[index]


def test_no_announcement_on_the_routers_own_answers():
    chain = Chain()
    reply, *_ = chain.say("/local /analyze")
    assert reply == PERSONA.message("route.local_on")


def test_the_announcement_lines_read_as_the_persona():
    for route, line in CFG.announcements.items():
        assert line.endswith("ウル🐺") and not any(c.isascii() and c.isalpha() for c in line), route
