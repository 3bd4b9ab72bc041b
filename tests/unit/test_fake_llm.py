"""Unit tests of the fake Anthropic server's pure parts: scenarios, faults, accounting, streaming, scripted model.

No sockets here; the HTTP server and the real SDK are exercised in tests/integration/test_fake_llm_sdk.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.fake_llm import (
    SCENARIOS_DIR,
    MessagesRequest,
    PromptCache,
    Reply,
    Scenario,
    ScenarioEngine,
    ScenarioError,
    estimate_tokens,
)
from infra.fake_llm.scripted import (
    MIN_REASONING_CHARS,
    PROPOSAL_TOOL,
    answer,
    integrate,
    proposal_rule_for,
    propose,
)
from infra.fake_llm.server import build_message, stream_events, validate_messages_body

MODEL = "claude-sonnet-4-6"
PROPOSAL_TOOLS = [{"name": PROPOSAL_TOOL, "description": "decide", "input_schema": {"type": "object"}}]
FORCED = {"type": "tool", "name": PROPOSAL_TOOL}


def body(text: str | list[Any] = "hello", **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 256, "messages": [{"role": "user", "content": text}], **extra}


def request(text: str | list[Any] = "hello", **extra: Any) -> MessagesRequest:
    return MessagesRequest(body(text, **extra))


def scripted_fallback(req: MessagesRequest) -> Reply:
    return Reply(content=[{"type": "text", "text": "scripted"}])


def engine_for(toml: str) -> ScenarioEngine:
    return ScenarioEngine(Scenario.from_toml(toml), fallback=scripted_fallback)


def texts(reply: Reply | None) -> list[str]:
    assert reply is not None
    return [block["text"] for block in reply.content if block["type"] == "text"]


# --------------------------------------------------------------------------- scenario loading


def test_given_toml_rules_when_loaded_then_match_respond_and_fault_are_parsed() -> None:
    scenario = Scenario.from_toml("""
        [[rules]]
        name = "greet"
        match = { last_user_regex = "hi", call = 2 }
        fault = { kind = "status", status = 429, retry_after = 0.5, times = 1 }
        [rules.respond]
        content = [{ type = "tool_use", name = "lookup", input = { q = "x" } }]
        [default]
        content = [{ type = "text", text = "default" }]
    """)
    rule = scenario.rules[0]
    assert (rule.name, rule.match.last_user_regex, rule.match.call) == ("greet", "hi", 2)
    assert rule.fault is not None and (rule.fault.status, rule.fault.retry_after, rule.fault.times) == (
        429,
        0.5,
        1,
    )
    assert rule.respond is not None and rule.respond.resolved_stop_reason() == "tool_use"
    assert scenario.default is not None and texts(scenario.default) == ["default"]


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ({"rules": [{"match": {}}]}, "needs 'respond' and/or 'fault'"),
        ({"rules": [{"respond": {}, "matc": {}}]}, "unknown key"),
        ({"rules": [{"match": {"last_user_regex": "("}, "respond": {}}]}, "invalid regex"),
        ({"rules": [{"respond": {"stop_reason": "done"}}]}, "stop_reason"),
        ({"rules": [{"fault": {"kind": "explode"}}]}, "kind"),
        ({"rules": [{"fault": {"kind": "status"}}]}, "status"),
        ({"rules": [{"fault": {"kind": "delay"}}]}, "seconds"),
        ({"rules": [{"respond": {"content": [{"type": "image"}]}}]}, "expected 'text' or 'tool_use'"),
    ],
)
def test_given_invalid_scenario_when_loaded_then_scenario_error_names_the_problem(
    data: dict[str, Any], fragment: str
) -> None:
    with pytest.raises(ScenarioError, match=fragment):
        Scenario.from_dict(data)


def test_given_json_or_toml_text_when_loaded_from_text_then_both_give_the_same_scenario() -> None:
    as_json = json.dumps({"rules": [{"match": {"model_regex": "opus"}, "respond": {"content": []}}]})
    as_toml = '[[rules]]\nmatch = { model_regex = "opus" }\nrespond = { content = [] }\n'
    assert Scenario.from_text(as_json) == Scenario.from_text(as_toml)


def test_given_shipped_scenarios_when_loaded_then_demo_is_empty_and_faults_has_every_kind() -> None:
    demo = Scenario.from_file(SCENARIOS_DIR / "demo.toml")
    faults = Scenario.from_file(SCENARIOS_DIR / "faults.toml")
    assert demo.rules == () and demo.default is None
    assert {rule.fault.kind for rule in faults.rules if rule.fault} == {
        "status",
        "delay",
        "cut_stream",
        "max_tokens",
    }


# --------------------------------------------------------------------------- matching


def test_given_block_content_when_reading_last_user_text_then_text_and_tool_results_are_joined() -> None:
    req = MessagesRequest(
        {
            "messages": [
                {"role": "user", "content": "first"},
                {"role": "assistant", "content": "ok"},
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "toolu_1",
                            "content": [{"type": "text", "text": "result A"}],
                        },
                        {"type": "text", "text": "please phrase"},
                    ],
                },
            ]
        }
    )
    assert req.last_user_text() == "result A\nplease phrase"


@pytest.mark.parametrize(
    ("match", "req", "expected"),
    [
        ('{ last_user_regex = "^タスク" }', request("タスク一覧"), True),
        ('{ last_user_regex = "^タスク" }', request("私のタスク"), False),
        (
            '{ system_regex = "ソウル" }',
            request(system=[{"type": "text", "text": "あなたはソウルくん"}]),
            True,
        ),
        ('{ system_regex = "ソウル" }', request(system="plain"), False),
        ('{ tool_choice = "submit_proposal" }', request(tools=PROPOSAL_TOOLS, tool_choice=FORCED), True),
        ('{ tool_choice = "submit_proposal" }', request(tools=PROPOSAL_TOOLS), False),
        ('{ tool_choice = "none" }', request(tools=PROPOSAL_TOOLS, tool_choice={"type": "auto"}), True),
        ('{ tool_choice = "none" }', request(tools=PROPOSAL_TOOLS, tool_choice=FORCED), False),
        ('{ model_regex = "sonnet" }', request(), True),
        ('{ model_regex = "opus" }', request(), False),
        ('{ model_regex = "sonnet", last_user_regex = "nope" }', request(), False),
    ],
)
def test_given_a_match_condition_when_deciding_then_the_rule_applies_only_if_all_hold(
    match: str, req: MessagesRequest, expected: bool
) -> None:
    engine = engine_for(
        f'[[rules]]\nmatch = {match}\nrespond = {{ content = [{{ type = "text", text = "rule" }}] }}'
    )
    assert (texts(engine.decide(req).reply) == ["rule"]) is expected


def test_given_call_condition_when_requests_arrive_then_only_the_nth_request_matches() -> None:
    engine = engine_for(
        '[[rules]]\nmatch = { call = 2 }\nrespond = { content = [{ type = "text", text = "2nd" }] }'
    )
    answers = [texts(engine.decide(request()).reply) for _ in range(3)]
    assert answers == [["scripted"], ["2nd"], ["scripted"]]


def test_given_overlapping_rules_when_deciding_then_the_first_match_wins_and_default_beats_scripted() -> None:
    engine = engine_for("""
        [[rules]]
        match = { last_user_regex = "a" }
        respond = { content = [{ type = "text", text = "first" }] }
        [[rules]]
        match = { last_user_regex = "ab" }
        respond = { content = [{ type = "text", text = "second" }] }
        [default]
        content = [{ type = "text", text = "default" }]
    """)
    assert texts(engine.decide(request("ab")).reply) == ["first"]
    assert texts(engine.decide(request("zz")).reply) == ["default"]


# --------------------------------------------------------------------------- faults


def test_given_status_fault_times_2_when_requests_repeat_then_two_errors_then_the_rule_answers() -> None:
    engine = engine_for("""
        [[rules]]
        fault = { kind = "status", status = 529, times = 2 }
        respond = { content = [{ type = "text", text = "recovered" }] }
    """)
    decisions = [engine.decide(request()) for _ in range(3)]
    assert [d.error.status if d.error else None for d in decisions] == [529, 529, None]
    assert texts(decisions[2].reply) == ["recovered"]


def test_given_exhausted_fault_without_respond_when_deciding_then_the_next_matching_rule_answers() -> None:
    engine = engine_for("""
        [[rules]]
        fault = { kind = "status", status = 500, times = 1 }
        [[rules]]
        respond = { content = [{ type = "text", text = "next" }] }
    """)
    assert engine.decide(request()).error is not None
    assert texts(engine.decide(request()).reply) == ["next"]


def test_given_used_fault_when_engine_reset_then_the_counter_starts_again() -> None:
    engine = engine_for('[[rules]]\nfault = { kind = "status", status = 429, times = 1 }')
    assert engine.decide(request()).error is not None
    assert engine.decide(request()).error is None
    engine.reset()
    assert engine.decide(request()).error is not None


def test_given_fault_without_times_when_requests_repeat_then_every_request_fails() -> None:
    engine = engine_for('[[rules]]\nfault = { kind = "status", status = 500 }')
    assert all(engine.decide(request()).error is not None for _ in range(4))


def test_given_cut_stream_fault_when_request_is_not_streaming_then_it_is_ignored_and_not_used_up() -> None:
    engine = engine_for('[[rules]]\nfault = { kind = "cut_stream", after_blocks = 1, times = 1 }')
    assert engine.decide(request()).cut_after_blocks is None
    assert engine.decide(request(stream=True)).cut_after_blocks == 1
    assert engine.decide(request(stream=True)).cut_after_blocks is None


def test_given_delay_fault_without_respond_when_deciding_then_the_fallthrough_reply_is_delayed() -> None:
    engine = engine_for('[[rules]]\nfault = { kind = "delay", seconds = 2.5, times = 1 }')
    first, second = engine.decide(request()), engine.decide(request())
    assert (first.delay, texts(first.reply), second.delay) == (2.5, ["scripted"], 0.0)


MAX_TOKENS_TOML = """
    [[rules]]
    match = { last_user_regex = "long" }
    fault = { kind = "max_tokens", times = 1 }
    respond = { content = [{ type = "text", text = "0123456789abcdefghij" }] }
"""


def test_given_max_tokens_fault_when_answering_then_text_is_cut_in_half_with_stop_reason_max_tokens() -> None:
    reply = engine_for(MAX_TOKENS_TOML).decide(request("long")).reply
    assert reply is not None and (texts(reply), reply.stop_reason) == (["0123456789"], "max_tokens")


def test_given_truncated_reply_when_client_prefills_the_partial_text_then_the_remainder_follows() -> None:
    engine = engine_for(MAX_TOKENS_TOML)
    engine.decide(request("long"))
    continuation = MessagesRequest(
        {
            "model": MODEL,
            "max_tokens": 9,
            "messages": [{"role": "user", "content": "long"}, {"role": "assistant", "content": "0123456789"}],
        }
    )
    reply = engine.decide(continuation).reply
    assert reply is not None and (texts(reply), reply.resolved_stop_reason()) == (["abcdefghij"], "end_turn")
    assert texts(engine.decide(request("long")).reply) == ["0123456789abcdefghij"]


def test_given_truncated_reply_when_conversation_quotes_the_partial_then_the_remainder_follows() -> None:
    engine = engine_for(MAX_TOKENS_TOML)
    engine.decide(request("long"))
    continuation = MessagesRequest(
        {
            "model": MODEL,
            "max_tokens": 9,
            "messages": [
                {"role": "user", "content": "long"},
                {"role": "assistant", "content": "0123456789"},
                {"role": "user", "content": "続けて"},
            ],
        }
    )
    assert texts(engine.decide(continuation).reply) == ["abcdefghij"]


# --------------------------------------------------------------------------- token accounting


@pytest.mark.parametrize(("text", "tokens"), [("", 1), ("abc", 1), ("abcd", 1), ("abcde", 2), ("x" * 40, 10)])
def test_given_text_when_estimating_tokens_then_it_is_len_over_4_rounded_up_min_1(
    text: str, tokens: int
) -> None:
    assert estimate_tokens(text) == tokens


def cached_system_body(marked: bool = True, model: str = MODEL) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": "s" * 400}
    if marked:
        block["cache_control"] = {"type": "ephemeral"}
    return {**body("q" * 40), "model": model, "system": [block]}


def test_given_no_cache_control_when_accounting_then_all_tokens_are_plain_input() -> None:
    usage = PromptCache().account(cached_system_body(marked=False))
    assert (usage.input_tokens, usage.cache_creation_input_tokens, usage.cache_read_input_tokens) == (
        110,
        0,
        0,
    )


def test_given_marked_system_when_sent_twice_then_cache_is_created_then_read() -> None:
    cache = PromptCache()
    first, second = cache.account(cached_system_body()), cache.account(cached_system_body())
    assert (first.cache_creation_input_tokens, first.cache_read_input_tokens, first.input_tokens) == (
        100,
        0,
        10,
    )
    assert (second.cache_creation_input_tokens, second.cache_read_input_tokens, second.input_tokens) == (
        0,
        100,
        10,
    )


def test_given_seen_prefix_when_cache_reset_or_model_changes_then_it_is_created_again() -> None:
    cache = PromptCache()
    cache.account(cached_system_body())
    assert cache.account(cached_system_body(model="claude-opus-4-6")).cache_creation_input_tokens == 100
    cache.reset()
    assert cache.account(cached_system_body()).cache_creation_input_tokens == 100


def test_given_marked_tool_and_longer_marked_system_when_only_tools_were_seen_then_read_tools_create_rest() -> (
    None
):
    tool = {
        "name": "t",
        "description": "d" * 100,
        "input_schema": {"type": "object"},
        "cache_control": {"type": "ephemeral"},
    }
    cache = PromptCache()
    tools_only = cache.account({**body("q"), "tools": [tool]})
    both = cache.account({**cached_system_body(), "tools": [tool]})
    assert tools_only.cache_creation_input_tokens > 0
    assert both.cache_read_input_tokens == tools_only.cache_creation_input_tokens
    assert both.cache_creation_input_tokens == 100  # the system block after the tool breakpoint


def test_given_top_level_cache_control_when_accounting_then_the_whole_prompt_is_a_cache_prefix() -> None:
    usage = PromptCache().account(
        {**cached_system_body(marked=False), "cache_control": {"type": "ephemeral"}}
    )
    assert (usage.cache_creation_input_tokens, usage.input_tokens) == (110, 0)


# --------------------------------------------------------------------------- wire building and streaming


def test_given_reply_with_tool_use_when_building_message_then_ids_usage_and_stop_reason_are_filled() -> None:
    reply = Reply(
        content=[{"type": "text", "text": "hi"}, {"type": "tool_use", "name": "t", "input": {"a": 1}}],
        usage={"input_tokens": 999},
    )
    message = build_message(reply, body(), PromptCache().account(body()))
    assert message["id"].startswith("msg_") and message["content"][1]["id"].startswith("toolu_")
    assert (message["type"], message["role"], message["stop_reason"]) == ("message", "assistant", "tool_use")
    assert message["usage"]["input_tokens"] == 999
    assert set(message["usage"]) == {
        "input_tokens",
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    }


def test_given_stop_sequence_in_text_when_building_message_then_text_stops_before_it() -> None:
    reply = Reply(content=[{"type": "text", "text": "one END two"}])
    message = build_message(reply, body(stop_sequences=["END"]), PromptCache().account(body()))
    assert (message["content"], message["stop_reason"], message["stop_sequence"]) == (
        [{"type": "text", "text": "one "}],
        "stop_sequence",
        "END",
    )


def streamed_message() -> dict[str, Any]:
    reply = Reply(
        content=[
            {"type": "text", "text": "Hello, this is a streamed answer."},
            {"type": "tool_use", "name": "lookup", "input": {"query": "見積書", "limit": 3}},
        ]
    )
    return build_message(reply, body(), PromptCache().account(body()))


def test_given_message_when_streamed_then_events_follow_the_real_sequence_and_rebuild_the_content() -> None:
    message = streamed_message()
    events, complete = stream_events(message)
    names = [name for name, _ in events]
    assert (
        complete
        and names[:2] == ["message_start", "ping"]
        and names[-2:] == ["message_delta", "message_stop"]
    )
    assert names.count("content_block_start") == names.count("content_block_stop") == 2
    deltas = [data["delta"] for name, data in events if name == "content_block_delta"]
    assert "".join(d.get("text", "") for d in deltas) == message["content"][0]["text"]
    assert json.loads("".join(d.get("partial_json", "") for d in deltas)) == message["content"][1]["input"]
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"


@pytest.mark.parametrize("cut", [0, 1])
def test_given_cut_after_blocks_when_streamed_then_block_k_stops_midway_without_stop_events(cut: int) -> None:
    events, complete = stream_events(streamed_message(), cut_after_blocks=cut)
    names = [name for name, _ in events]
    assert not complete and "message_stop" not in names and names.count("content_block_stop") == cut
    last_block_deltas = [
        data["delta"] for name, data in events if data.get("index") == cut and "delta" in data
    ]
    assert last_block_deltas, "some deltas of the cut block are sent"
    if cut == 1:
        with pytest.raises(json.JSONDecodeError):
            json.loads("".join(d["partial_json"] for d in last_block_deltas))


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        ({"max_tokens": 5, "messages": []}, "model: Field required"),
        ({"model": MODEL, "messages": [{"role": "user", "content": "x"}]}, "max_tokens: Field required"),
        ({"model": MODEL, "max_tokens": 5}, "messages: Field required"),
        ({"model": MODEL, "max_tokens": 5, "messages": []}, "at least one message"),
        ({"model": MODEL, "max_tokens": 5, "messages": [{"role": "system", "content": "x"}]}, "role"),
        (
            {
                "model": MODEL,
                "max_tokens": 5,
                "messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y "}],
            },
            "whitespace",
        ),
    ],
)
def test_given_invalid_body_when_validated_then_the_real_api_style_message_is_returned(
    payload: dict[str, Any], fragment: str
) -> None:
    problem = validate_messages_body(payload)
    assert problem is not None and fragment in problem


# --------------------------------------------------------------------------- scripted model


def tool_call(text: str) -> dict[str, Any]:
    proposal = propose(text)
    assert proposal["output_type"] == "tool_call"
    call: dict[str, Any] = proposal["tool_calls"][0]
    return call


def test_given_task_request_with_a_name_when_proposing_then_chatwork_task_create_with_parameters() -> None:
    proposal = propose("田中さんに見積書を作成するタスクを明日までにお願い")
    call = proposal["tool_calls"][0]
    assert call["tool_name"] == "chatwork_task_create"
    assert call["parameters"] == {"body": "見積書を作成", "assignee_name": "田中", "limit_date": "明日"}
    assert set(call["parameter_sources"]) == set(call["parameters"])
    assert proposal["confidence"] == {"overall": 0.9, "intent": 0.95, "parameters": 0.85}


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        ("鈴木さんに2025-03-01までに契約書チェックを頼んで", "2025-03-01"),
        ("山田さんに議事録の共有を月末までにお願い", "月末"),
        ("山田さんに議事録の共有をお願い", None),
    ],
)
def test_given_task_request_when_proposing_then_limit_date_is_taken_from_the_text_or_omitted(
    text: str, limit: str | None
) -> None:
    assert tool_call(text)["parameters"].get("limit_date") == limit


def test_given_task_for_sato_when_proposing_then_clarification_between_the_two_satos() -> None:
    proposal = propose("佐藤さんに議事録の共有をお願い")
    assert proposal["output_type"] == "clarification_needed"
    assert proposal["options"] == ["佐藤一郎", "佐藤花子"] and proposal["confidence"]["overall"] == 0.45
    assert "佐藤一郎" in proposal["clarification_question"]


@pytest.mark.parametrize(
    ("text", "tool", "params", "overall"),
    [
        (
            "覚えて：私はコーヒーが好き",
            "save_memory",
            {"content": "私はコーヒーが好き", "category": "preference"},
            0.88,
        ),
        (  # what is kept is the fact, not the request around it
            "私はコーヒーはブラック派って覚えといてね🙏",
            "save_memory",
            {"content": "私はコーヒーはブラック派", "category": "preference"},
            0.88,
        ),
        (
            "全員に「明日は全社会議です」とアナウンスして",
            "announce",
            {"message": "明日は全社会議です", "recipients": "all"},
            0.85,
        ),
        ("田中さんの権限を変更して", "change_permission", {"target_user_name": "田中", "new_level": 6}, 0.8),
        ("全社員の一覧を見せて", "view_all_users", {}, 0.9),
        ("見積書のタスクを完了にして", "chatwork_task_complete", {"task_query": "見積書"}, 0.75),
        ("タスク一覧を教えて", "chatwork_task_search", {"assignee_name": "自分"}, 0.9),
    ],
)
def test_given_keyword_message_when_proposing_then_the_table_picks_the_tool_and_parameters(
    text: str, tool: str, params: dict[str, Any], overall: float
) -> None:
    proposal = propose(text)
    call = proposal["tool_calls"][0]
    assert (call["tool_name"], call["parameters"], proposal["confidence"]["overall"]) == (
        tool,
        params,
        overall,
    )


def test_given_announcement_when_proposing_then_confirmation_is_required() -> None:
    proposal = propose("全員に「明日は全社会議です」とアナウンスして")
    assert (
        proposal["needs_confirmation"] is True and "明日は全社会議です" in proposal["confirmation_question"]
    )


@pytest.mark.parametrize(
    ("text", "reply_fragment", "overall"),
    [
        ("おはよう！", "おはようございますウル", 0.95),
        ("こんばんは", "こんばんはウル", 0.95),
        ("今日は暑いね", "暑い", 0.95),
        ("量子力学について", "分からなかったウル", 0.6),
    ],
)
def test_given_small_talk_when_proposing_then_text_response_in_persona(
    text: str, reply_fragment: str, overall: float
) -> None:
    proposal = propose(text)
    assert proposal["output_type"] == "text_response" and proposal["confidence"]["overall"] == overall
    assert reply_fragment in proposal["text_response"]


SAMPLE_MESSAGES = [
    "田中さんに見積書を作成するタスクを明日までにお願い",
    "佐藤さんに議事録の共有をお願い",
    "覚えて：朝はコーヒー",
    "全員に明日は休みだと周知して",
    "田中さんの権限を変更して",
    "全社員の一覧",
    "見積書のタスクを完了にして",
    "タスク一覧を教えて",
    "こんにちは",
    "今日は暑いね",
    "量子力学について",
]


def reasoning_strings(reasoning: dict[str, Any]) -> list[str]:
    return [s for value in reasoning.values() for s in (value if isinstance(value, list) else [value])]


@pytest.mark.parametrize("text", SAMPLE_MESSAGES)
def test_given_any_message_when_proposing_then_every_reasoning_string_has_at_least_20_chars(
    text: str,
) -> None:
    strings = reasoning_strings(propose(text)["reasoning"])
    assert MIN_REASONING_CHARS == 20
    assert strings and all(len(s) >= MIN_REASONING_CHARS for s in strings), strings


@pytest.mark.parametrize("text", SAMPLE_MESSAGES)
def test_given_any_message_when_proposing_then_the_product_proposal_model_accepts_it(text: str) -> None:
    from shared_lib.turn.proposal import Proposal

    assert Proposal.model_validate(propose(text)).output_type == propose(text)["output_type"]


def test_given_rule_table_when_names_listed_then_each_spec_rule_is_present_once() -> None:
    names = [proposal_rule_for(text).name for text in SAMPLE_MESSAGES]
    assert names == [
        "task_create",
        "task_create",
        "save_memory",
        "announce",
        "change_permission",
        "view_all_users",
        "task_complete",
        "task_search",
        "greeting",
        "small_talk_heat",
        "fallback",
    ]


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("田中さん、見積書作成のタスクお願い", "task_create"),
        ("田中さんに完了報告のタスクをお願い", "task_create"),
        ("田中さんに見積書のタスクを完了にして", "task_complete"),
        ("田中さん タスク一覧を教えて", "task_search"),
        ("田中さんのタスクを確認して", "task_search"),
    ],
)
def test_given_ambiguous_task_wording_when_picking_a_rule_then_intent_words_decide(
    text: str, rule: str
) -> None:
    assert proposal_rule_for(text).name == rule


def test_given_someones_tasks_when_searching_then_the_owner_is_the_assignee() -> None:
    assert tool_call("田中さんのタスクを確認して")["parameters"] == {"assignee_name": "田中"}


def test_given_tool_results_when_integrating_then_the_answer_quotes_them_in_2_to_4_uru_sentences() -> None:
    first = integrate(
        'chatwork_task_create の結果: {"task_id": 4821, "body": "見積書を作成"}\nソウルくんとして伝えて'
    )
    second = integrate(
        'chatwork_task_create の結果: {"task_id": 77, "body": "議事録の共有"}\nソウルくんとして伝えて'
    )
    sentences = [s for s in first.replace("！", "。").split("。") if s]
    # ids are machinery, not news for the user: the content is quoted, the id is not
    assert first.startswith("タスクを作成したウル！") and "4821" not in first and "見積書を作成" in first
    assert 2 <= len(sentences) <= 4 and all(s.endswith("ウル") for s in sentences)
    assert first != second and "議事録の共有" in second


def test_given_a_created_task_when_integrating_then_its_person_and_day_are_said_as_people_say_them() -> None:
    results = [
        {
            "tool": "タスクの作成",
            "result": {
                "task_id": "t-9f",
                "body": "年末調整の書類回収📄",
                "assignee": "佐藤花子",
                "limit_date": "12月25日（金）",
                "limit_time": None,
            },
        }
    ]
    said = integrate(f"結果: {json.dumps(results, ensure_ascii=False)}\nソウルくんとして伝えて")
    assert "「年末調整の書類回収📄」、担当は佐藤花子さん、期限は12月25日（金）だウル。" in said
    assert "t-9f" not in said and "「佐藤花子」" not in said and "結果は" not in said


def test_given_a_task_due_at_a_time_when_integrating_then_the_time_joins_its_day() -> None:
    result = {
        "body": "資料送付",
        "assignee": "山田次郎",
        "limit_date": "11月30日（月）",
        "limit_time": "22時",
    }
    said = integrate(f"結果: {json.dumps([{'tool': 'タスクの作成', 'result': result}], ensure_ascii=False)}")
    assert "期限は11月30日（月）22時だウル。" in said and "「22時」" not in said, said


def test_given_failed_tool_result_when_integrating_then_the_answer_apologises() -> None:
    assert integrate('save_memory: {"success": false, "error": "storage full"}').startswith(
        "ごめんなさいウル"
    )


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"tools": PROPOSAL_TOOLS, "tool_choice": FORCED}, ("tool_use", PROPOSAL_TOOL)),
        ({"tools": PROPOSAL_TOOLS}, ("tool_use", PROPOSAL_TOOL)),
        ({}, ("text", None)),
        ({"tools": [{"name": "lookup", "input_schema": {"type": "object"}}]}, ("text", None)),
        (
            {
                "tools": [{"name": "lookup", "input_schema": {"type": "object"}}],
                "tool_choice": {"type": "tool", "name": "lookup"},
            },
            ("tool_use", "lookup"),
        ),
    ],
)
def test_given_request_shape_when_scripted_model_answers_then_mode_follows_tools_and_tool_choice(
    extra: dict[str, Any], expected: tuple[str, str | None]
) -> None:
    block = answer(request("こんにちは", **extra)).content[0]
    assert (block["type"], block.get("name")) == expected


@pytest.mark.parametrize(
    "text, route",
    [
        ("先月の問い合わせの傾向を見たい", "ANALYZE"),
        ("来月の進め方を相談したい", "PLAN"),
        ("ありがとう", "CHAT"),
    ],
)
def test_given_the_routers_classifier_call_then_the_scripted_model_answers_a_verdict_the_router_adopts(
    text: str, route: str
) -> None:
    from shared_lib.ports import LLMResponse
    from shared_lib.routing import decide, llm_classifier

    class Port:
        def complete(self, request):  # type: ignore[no-untyped-def]
            reply = answer(MessagesRequest(request.model_dump(exclude_none=True)))
            return LLMResponse(content=reply.content, stop_reason="end_turn", model=request.model)

    decision = decide(text, classify=llm_classifier(Port(), model="claude-haiku-4-5"))
    assert (decision.primary_route.value, decision.source) == (route, "classifier")
    assert decision.flags.classifier_error is None


def test_the_scripted_model_delegates_then_scripts_each_kind_of_job() -> None:
    # issue 22: a person's request is delegated; a job's own turn (the product's marker) looks first,
    # keeps looking, or asks for the salary view (level 6)
    from infra.fake_llm import jobs, scripted
    from shared_lib.features.jobs.steps import JOB_MARKER

    assert jobs.JOB_MARKER == JOB_MARKER
    for said in (
        "営業チームの期限切れタスクを集めて要約して",
        "ずっと調べ続けて",
        "全員の給与を調べてまとめて",
    ):
        p = scripted.propose(said)
        assert p["tool_calls"][0] == {
            "tool_name": "delegate_task",
            "parameters": {"task": said},
            "parameter_sources": {"task": "user_message"},
        }
    first = scripted.propose(JOB_MARKER + "営業チームの期限切れタスクを集めて要約して")
    assert first["tool_calls"][0]["tool_name"] == "chatwork_task_search" and first["loop"]["needs_next_loop"]
    assert (
        scripted.propose(JOB_MARKER + "全員の給与を調べてまとめて")["tool_calls"][0]["tool_name"]
        == "view_salary_info"
    )
    assert scripted.propose("タスクを確認し続けて")["tool_calls"][0]["tool_name"] == "chatwork_task_search"


@pytest.mark.parametrize(
    ("said", "topic"),
    [
        ("経費精算の話どうなった？", "経費精算"),
        ("そういや新卒研修のあの件って結局どないなったん？", "新卒研修"),
        ("オフィス移転の件、その後どうなってます？", "オフィス移転"),
        ("ＡＷＳ移行のやつどがんなったと？", "ＡＷＳ移行"),
        ("社員旅行の行き先どうなたった？", "社員旅行の行き先"),  # a dropped kana
        ("こないだの健康診断の日程ってどうなりました？🙏", "健康診断の日程"),
    ],
)
def test_given_a_question_how_a_topic_turned_out_when_proposing_then_memory_is_searched_for_the_topic(
    said: str, topic: str
) -> None:
    proposal = propose(said)
    (tool_call,) = proposal["tool_calls"]
    assert tool_call["tool_name"] == "query_memory" and tool_call["parameters"] == {"query": topic}


@pytest.mark.parametrize(
    "said",
    [
        "田中さんのタスクどうなった？",  # a task's state: the task search's
        "開発チームの目標ってどうなってる？",  # a goal's: the goal tools'
        "結局どうなったのか、関係者に確認をお願いしてもらえますか？",  # a request to act
        "来週の会議は木曜に変更になりました。これ重要なので覚えておいて",
    ],
)
def test_given_no_question_about_a_lived_topic_when_proposing_then_memory_is_not_searched_for_it(
    said: str,
) -> None:
    calls = propose(said).get("tool_calls") or []
    assert not [c for c in calls if c["tool_name"] == "query_memory"]


def test_the_scripted_model_asks_which_first_after_a_check_and_doubts_its_route_on_the_marker():
    from infra.fake_llm import steps

    # GIVEN a check that asks for an order, THEN one search step with a question for the user
    asked = propose("自分のタスクを確認して、どれから片付けるか相談したい🙏")
    assert asked["tool_calls"][0]["tool_name"] == "chatwork_task_search"
    assert asked["loop"]["needs_next_loop"] is False and asked["loop"]["questions_for_user"]
    # GIVEN the [[fit:CODE]] marker, THEN the proposal suggests CODE; without it nothing changes
    plain = propose("自分のタスク一覧を見せて")
    doubted = steps.with_route_doubt("自分のタスク一覧を見せて [[fit:CODE]]", plain)
    assert doubted["loop"]["fit"] is False and doubted["loop"]["suggested_route"] == "CODE"
    assert steps.with_route_doubt("自分のタスク一覧を見せて", plain) == plain


def test_given_a_search_then_a_completion_when_integrating_then_the_answer_tells_what_was_completed() -> None:
    # GIVEN the results of a turn of two steps, in order, as the charter hands them to the phrasing
    # step: 田中's two open tasks (the completed one listed second), then the completion
    results = [
        {
            "tool": "タスクの確認",
            "result": {
                "assignee": "田中太郎",
                "count": 2,
                "tasks": [{"body": "見積書を作成", "limit": "11月30日（月）"}, {"body": "資料作成"}],
            },
        },
        {"tool": "タスクの完了", "result": {"task_id": "2", "body": "資料作成", "status": "done"}},
    ]
    said = integrate(f"結果: {json.dumps(results, ensure_ascii=False)}\nソウルくんとして伝えて")
    # THEN it opens with the completion and quotes the completed task, never the other one or a bare id
    assert said.startswith("タスクを完了にしたウル！") and "「資料作成」" in said
    assert "見積書" not in said and "「2」" not in said


@pytest.mark.parametrize("count", [0, 3, 12])
def test_given_a_search_alone_when_integrating_then_a_count_is_said_as_a_count(count: int) -> None:
    results = [{"tool": "タスクの確認", "result": {"assignee": "カズ", "count": count, "tasks": []}}]
    said = integrate(f"結果: {json.dumps(results, ensure_ascii=False)}")
    # said, not quoted as if it were a task's title (「「0件」だウル」 read as one)
    assert said.startswith("タスクを確認したウル！担当はカズさん、") and f"該当は{count}件だウル。" in said
    assert f"「{count}件」" not in said and f"「{count}」" not in said


def test_given_a_search_of_ones_own_tasks_when_integrating_then_the_person_is_said_once() -> None:
    task = {"body": "見積もり", "assignee": "鈴木一郎", "limit": "12月2日（水）"}
    results = [{"tool": "タスクの確認", "result": {"assignee": "鈴木一郎", "count": 1, "tasks": [task]}}]
    said = integrate(f"結果: {json.dumps(results, ensure_ascii=False)}")
    assert said.count("担当は鈴木一郎さん") == 1 and "該当は1件" in said and "「見積もり」" in said, said


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # titles as office workers write them, and deadlines said as days (the charter reads them)
        (
            "田中部長に来週月曜までに見積書の確認をお願い🙏",
            {"body": "見積書の確認", "assignee_name": "田中", "limit_date": "来週月曜"},
        ),
        (
            "鈴木さんに12月1日までに議事録アップお願い",
            {"body": "議事録アップ", "assignee_name": "鈴木", "limit_date": "12月1日"},
        ),
        (
            "山田さんに12/3〆で請求書送付のタスクお願いします",
            {"body": "請求書送付", "assignee_name": "山田", "limit_date": "12/3"},
        ),
        (
            "山田先輩に年内に棚卸しのタスクお願い",
            {"body": "棚卸し", "assignee_name": "山田", "limit_date": "年内"},
        ),
        # a date that is what the task is about stays in its body, and is no deadline
        (
            "田中さんに12月1日の会議の議事録のタスクお願い",
            {"body": "12月1日の会議の議事録", "assignee_name": "田中"},
        ),
        # the work first, the person last (「…のタスク、〇〇さんに振っといて〜」): the body is the work
        (
            "12/25までに年末調整の書類を出すタスク、田中さんに振っといて〜",
            {"body": "年末調整の書類を出す", "assignee_name": "田中", "limit_date": "12/25"},
        ),
        (
            "明日までに請求書チェックのタスク 鈴木課長に投げといて！",
            {"body": "請求書チェック", "assignee_name": "鈴木", "limit_date": "明日"},
        ),
        # deadlines of the office calendar and of spans, handed over as said (the charter reads them)
        (
            "田中さんに仕事納めまでに経費精算の締めをお願い🙏",
            {"body": "経費精算の締め", "assignee_name": "田中", "limit_date": "仕事納め"},
        ),
        (
            "山田さんに来年1月5日までに挨拶状の発送をお願いします",
            {"body": "挨拶状の発送", "assignee_name": "山田", "limit_date": "来年1月5日"},
        ),
        (
            "お疲れ様です〜🍵 田中部長に年明け早々に来期予算の資料作成をお願いしたいです🙏",
            {"body": "来期予算の資料作成", "assignee_name": "田中", "limit_date": "年明け早々"},
        ),
        (
            "鈴木さんに3営業日以内に見積もりのタスクお願い",
            {"body": "見積もり", "assignee_name": "鈴木", "limit_date": "3営業日以内"},
        ),
        (
            "12.10までに山田さんに稟議書の確認お願いします",
            {"body": "稟議書の確認", "assignee_name": "山田", "limit_date": "12.10"},
        ),
        # in kanji, halves of a week, the night, a long break
        (
            "鈴木さんに三日以内に議事録まとめをお願いします",
            {"body": "議事録まとめ", "assignee_name": "鈴木", "limit_date": "三日以内"},
        ),
        (
            "月曜の夜にすみません💦 田中課長に来週前半までに見積書の作成をお願い🙏",
            {"body": "見積書の作成", "assignee_name": "田中", "limit_date": "来週前半"},
        ),
        (
            "山田さんに今夜10時までに資料送付のタスクお願い",
            {"body": "資料送付", "assignee_name": "山田", "limit_date": "今夜10時"},
        ),
        (
            "鈴木さんに連休明けまでに経費精算お願いします",
            {"body": "経費精算", "assignee_name": "鈴木", "limit_date": "連休明け"},
        ),
    ],
)
def test_given_titles_and_days_when_a_task_is_asked_then_the_person_and_the_deadline_are_read(
    text: str, expected: dict[str, str]
) -> None:
    assert tool_call(text)["parameters"] == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # asked as people ask: colloquial, in hiragana, in half-width kana, with a weekday beside the day
        (
            "すんません、田中さんに仕事始めまでに年賀状の整理頼んどいてもらえます？",
            {"body": "年賀状の整理", "assignee_name": "田中", "limit_date": "仕事始め"},
        ),
        (
            "山田さんに年明けすぐに来期予算のたたき台作成おねがいしまーす",
            {"body": "来期予算のたたき台作成", "assignee_name": "山田", "limit_date": "年明けすぐ"},
        ),
        (
            "ﾀﾅｶさんにﾐｰﾃｨﾝｸﾞ資料の作成を明日中にお願い",
            {"body": "ミーティング資料の作成", "assignee_name": "タナカ", "limit_date": "明日中"},
        ),
        (
            "山田さんに17時までに資料送付のタスクお願い",
            {"body": "資料送付", "assignee_name": "山田", "limit_date": "17時"},
        ),
        (
            "田中さんに明日の17時までに資料お願い",
            {"body": "資料", "assignee_name": "田中", "limit_date": "明日の17時"},
        ),
        (
            "田中副部長に来週後半までに予算案のレビューをお願い",
            {"body": "予算案のレビュー", "assignee_name": "田中", "limit_date": "来週後半"},
        ),
        (
            "田中さんに1/5(火)までに新年会の店の予約をお願い",
            {"body": "新年会の店の予約", "assignee_name": "田中", "limit_date": "1/5(火)"},
        ),
    ],
)
def test_given_a_request_as_people_write_it_when_proposing_then_a_task_is_asked_for(
    text: str, expected: dict[str, str]
) -> None:
    assert tool_call(text)["parameters"] == expected


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("鈴木さんに元旦までに年賀状の返信のタスク…いや、やっぱりいいや", "taken_back"),
        ("はい", "bare_answer"),
        ("OK！", "bare_answer"),
        ("今年もお世話になりました！良いお年を🎍", "greeting"),
        ("お疲れ様です〜", "greeting"),
    ],
)
def test_given_a_request_taken_back_a_bare_yes_or_a_season_s_greeting_then_nothing_is_done(
    text: str, rule: str
) -> None:
    assert proposal_rule_for(text).name == rule
    assert propose(text)["output_type"] == "text_response"


def test_given_a_manager_s_tasks_when_asked_to_show_them_then_they_are_searched() -> None:
    assert tool_call("佐藤課長のタスク見せて")["parameters"] == {"assignee_name": "佐藤"}


@pytest.mark.parametrize(
    ("text", "department", "message"),
    [
        ("営業部のみんなに「12/28(月)は大掃除です🧹」と周知して", "営業部", "12/28(月)は大掃除です🧹"),
        ("経理部のみんなにお知らせ流して：明日は棚卸しです", "経理部", "明日は棚卸しです"),
        ("えいぎょうぶのみんなに「明日は棚卸しです」と周知して", "えいぎょうぶ", "明日は棚卸しです"),
        (
            "開発チームの皆さんへ、来週からリモート勤務OKになったって伝えて🙏",
            "開発チーム",
            "来週からリモート勤務OKになった",
        ),
    ],
)
def test_given_a_department_s_everyone_when_announcing_then_the_department_is_handed_over(
    text: str, department: str, message: str
) -> None:
    call = tool_call(text)
    assert call["tool_name"] == "announce"
    assert call["parameters"] == {"message": message, "department": department}
