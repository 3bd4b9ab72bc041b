"""Prompt assembly: persona from files, cached prefix first, context in Truth order, masking."""

from __future__ import annotations

from datetime import UTC, datetime

from brain_fakes import turn

from shared_lib.brain.prompt import assemble, proposal_request, stable_system
from shared_lib.brain.tool_defs import DECISION_TOOL, anthropic_tools
from shared_lib.persona.catalogue import load_persona
from shared_lib.turn.envelope import UserInfo
from shared_lib.wiring.features import tool_registry

NOW = datetime(2026, 1, 30, 1, 0, tzinfo=UTC)


def build(text: str = "田中さんにタスクをお願い", **context: object):
    t = turn(text)
    for key, value in context.items():
        setattr(t.context, key, value)
    return t, assemble(t, persona=load_persona(), registry=tool_registry(), now=NOW)


def test_given_the_default_persona_when_assembling_then_the_system_prompt_v2_and_instructions_come_from_files():
    # GIVEN / WHEN
    _, prompt = build()
    stable = prompt.system[0]["text"]
    # THEN the §17.4 text and the §5.2.5 important instructions are in the first (cached) block
    assert "【第1章】私は誰か ─ アイデンティティ" in stable and "【第9章】会話の構造" in stable
    assert "■ 重要な指示" in stable and "CEO教えがある場合は、それを最優先で参照する" in stable
    assert load_persona().system_prompt() in stable


def test_given_a_turn_when_assembling_then_tools_and_system_are_a_cached_prefix_and_context_comes_after():
    # GIVEN / WHEN
    _, prompt = build()
    request = proposal_request(prompt, model="m", max_tokens=1000, stream=True)
    # THEN Base carries the breakpoint that caches tools + Base (the tools carry none of their own:
    # the API allows 4 breakpoints, prompt.py says why this is the one dropped); Main has none
    assert request.tools[-1]["name"] == DECISION_TOOL
    assert all("cache_control" not in t for t in request.tools)
    assert request.system[0]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in request.system[1] and request.system[1]["text"].startswith(
        "【エージェント状態】まだなし\n\n【現在のコンテキスト】"
    )
    # AND the decision is forced, and the user's message is the only message
    assert request.tool_choice == {"type": "tool", "name": DECISION_TOOL}
    assert request.messages == [{"role": "user", "content": "田中さんにタスクをお願い"}]


def test_given_two_different_turns_when_assembling_then_the_cached_prefix_is_byte_identical():
    # GIVEN two turns with different users, contexts and messages
    _, a = build("おはよう、今日の予定は？", summary="昨日は見積書の話をした")
    _, b = build("全員にアナウンスして", persons=[{"name": "佐藤"}])
    # THEN tools and the first system block are the same, so the prompt cache covers them
    assert a.tools == b.tools and a.system[0] == b.system[0]
    assert a.system[1] != b.system[1]


def test_given_the_registry_when_building_tools_then_every_enabled_tool_and_an_enum_of_names_are_sent():
    # GIVEN / WHEN
    registry = tool_registry()
    tools = anthropic_tools(registry)
    names = sorted(s.name for s in registry.enabled())
    # THEN the registry tools come first, and the decision tool only accepts their names
    assert sorted(t["name"] for t in tools[:-1]) == names
    schema = tools[-1]["input_schema"]["properties"]["tool_calls"]["items"]["properties"]["tool_name"]
    assert schema["enum"] == names


def test_given_a_full_context_when_rendering_then_sections_follow_the_truth_order():
    # GIVEN every kind of context
    _, prompt = build(
        user=UserInfo(user_id="u1", name="山田", level=6, department_id="d1"),
        persons=[{"name": "田中"}],
        tasks=[{"body": "見積書", "limit_date": "2026-02-01"}],
        knowledge=[{"title": "経費規程", "content": "1万円以上は申請"}],
        summary="前回は経費の話",
        recent_messages=[{"role": "user", "text": "こんにちは"}],
        teachings=[{"content": "お客様第一"}],
        pending_action={"question": "送信してよい？"},
        session={"mode": "confirmation_pending"},
        degraded=["goals"],
    )
    context = prompt.system[-1]["text"]  # Main (the pending action chose a specialised block before it)
    # THEN it is rendered as the Context Builder renders: state, who speaks and CEO teachings first,
    # then the database, then memory, then knowledge, each section naming its source's Truth rank
    order = [
        "【現在のコンテキスト】",
        "【現在のセッション】",
        "【ユーザー情報】（出典: DB（正規データ））",
        "【CEO教え（最優先で従う）】（出典: DB（正規データ））",
        "【社内の人物】（出典: DB（正規データ））",
        "【関連タスク】（出典: DB（正規データ））",
        "【直近の会話】（出典: 会話の記憶）",
        "【会話の要約】（出典: 会話の記憶）",
        "【関連する会社知識】（出典: DB（正規データ））",
        "【現在日時】",
        "【注意】",
    ]
    positions = [context.index(title) for title in order]
    assert positions == sorted(positions)
    assert "セッションモード: 確認待ち" in context and "確認待ち操作: 送信してよい？" in context
    assert "confirmation_pending" not in context
    assert "取得できなかった情報: アクティブな目標" in context and "goals" not in context
    assert "2026年1月30日（金）10時" in context  # Japan time
    # AND the user's permission level is never shown to the proposer (constitution §4.4.2)
    assert "level" not in context and "レベル" not in context


def test_given_the_context_builders_rendering_when_assembling_then_it_is_used_as_rendered():
    # GIVEN the Context Builder rendered its sections (in Truth order, within its budget)
    rendered = "【現在のセッション】\nセッションモード: 通常\n\n【ユーザー情報】（出典: DB（正規データ））\n名前: 山田"
    _, prompt = build(rendered=rendered, summary="not rendered again")
    context = prompt.system[1]["text"]
    # THEN the brain adds its header and the Truth-order note, and nothing of its own fallback rendering
    assert context.startswith("【エージェント状態】まだなし\n\n【現在のコンテキスト】") and context.endswith(
        rendered
    )
    assert "not rendered again" not in context


def test_given_a_later_step_when_assembling_then_the_previous_results_come_first_as_real_time_data():
    from shared_lib.turn.envelope import ToolResult

    t = turn("続けて")
    t.step = 1
    t.context.rendered = "【ユーザー情報】\n名前: 山田"
    t.execution.results = [
        ToolResult(tool_name="chatwork_task_search", call_index=0, ok=True, result={"count": 2})
    ]
    context = assemble(t, persona=load_persona(), registry=tool_registry(), now=NOW).system[1]["text"]
    assert context.index("直前のツール実行結果") < context.index("【ユーザー情報】") and "count" in context


def test_given_secrets_in_message_and_context_when_assembling_then_both_are_masked_and_only_user_values_are_vaulted():
    # GIVEN an email in the message and another one only in the context
    _, prompt = build(
        "taro@example.com に見積書を送るタスクを田中さんにお願い。password: hunter2",
        summary="花子さんのアドレスは hana@example.com, taro@example.com",
    )
    request = proposal_request(prompt, model="m", max_tokens=1000, stream=False)
    body = str(request.model_dump())
    # THEN no value reaches the request
    assert "taro@example.com" not in body and "hana@example.com" not in body and "hunter2" not in body
    # AND the same value has the same placeholder in message and context
    assert "[EMAIL_1]" in prompt.user_text and "[EMAIL_1]" in prompt.system[1]["text"]
    # AND only what the user's message contained can ever be restored
    assert prompt.vault == {"[EMAIL_1]": "taro@example.com", "[SECRET_1]": "hunter2"}


def test_given_the_stable_block_when_built_twice_then_it_is_identical():
    assert stable_system(load_persona()) == stable_system(load_persona())
