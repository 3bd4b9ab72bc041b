"""Compaction (seed 001 §19): the level decisions at their edges, each level's effect on the
conversation document, the version check, the persona-aware prompt, masking."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.context.compaction import Compactor, Levels, compact, decide
from shared_lib.context.history import append_message, conversation_path, history_path, recent_messages
from shared_lib.context.memory_config import CompactionConfig, MemoryConfig, load_memory_config
from shared_lib.context.render import build_sections
from shared_lib.context.summary_prompt import Voice, system_prompt
from shared_lib.errors import ConfigError, LLMError
from shared_lib.persona.core import load_core
from shared_lib.ports import LLMRequest, LLMResponse
from shared_lib.wiring.composition import check_startup

ORG, KEY = "acme", "acme/r1/u1"
NOW = datetime(2026, 11, 25, 3, 0, tzinfo=UTC)
CFG = CompactionConfig(min_raw_messages=4)


class SummaryLLM:
    """Answers every call with a short summary naming how many lines it read; records requests."""

    def __init__(self, answer: str = "", during=None) -> None:
        self.requests: list[LLMRequest] = []
        self.answer = answer
        self.during = during

    def complete(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        if self.during is not None:
            during, self.during = self.during, None
            during()
        text = self.answer or f"要約{len(self.requests)}: {request.messages[0]['content'].count(chr(10))}行"
        return LLMResponse(
            content=[{"type": "text", "text": text}], stop_reason="end_turn", model=request.model
        )


class NoLLM:
    def complete(self, request: LLMRequest) -> LLMResponse:
        raise LLMError("an emergency cut must not call the LLM")


def seed(store: MemoryStore, n: int, *, chars: int = 10) -> None:
    for i in range(n):
        append_message(
            store,
            ORG,
            KEY,
            f"t{i:03d}-0-in",
            role="user" if i % 2 == 0 else "assistant",
            text=f"{i:03d}" + "あ" * (chars - 3),
            at=NOW + timedelta(seconds=i),
            user_id="u1",
            room_id="r1",
            expires_at=NOW + timedelta(days=30),
        )


def compactor(llm, budget: int, cfg: CompactionConfig = CFG, voice=None) -> Compactor:
    return Compactor(config=cfg, budget=budget, llm=llm, model="claude-haiku-4-5", voice=voice)


@pytest.mark.parametrize(
    ("usage", "level"),
    [
        (0.0, "none"),
        (0.6999, "none"),
        (0.70, "light"),
        (0.8499, "light"),
        (0.85, "aggressive"),
        (0.9499, "aggressive"),
        (0.95, "emergency"),
        (1.7, "emergency"),
    ],
)
def test_the_level_is_decided_by_the_seeds_thresholds_at_their_edges(usage, level):
    assert decide(usage, CompactionConfig()) == level


def test_below_seventy_percent_nothing_is_written_and_no_llm_is_called():
    # GIVEN 10 messages of 8 tokens over a budget of 116 (69 %)
    store, llm = MemoryStore(), SummaryLLM()
    seed(store, 10)
    before = store.get(conversation_path(ORG, KEY))
    # WHEN compaction runs THEN it decides none and writes nothing
    result = compact(store, ORG, KEY, compactor(llm, 116), now=NOW)
    assert (result.level, result.written, llm.requests) == ("none", False, [])
    assert store.get(conversation_path(ORG, KEY)) == before


def test_at_seventy_percent_the_oldest_messages_beyond_the_minimum_become_one_level2_chunk():
    # GIVEN 10 messages of 8 tokens over a budget of 112 (71 %)
    store, llm = MemoryStore(), SummaryLLM()
    seed(store, 10)
    # WHEN compaction runs
    result = compact(store, ORG, KEY, compactor(llm, 112), now=NOW)
    # THEN one summary call (the fast model, purpose summary) covers the 6 oldest messages
    assert (result.level, result.reason, result.calls) == ("light", "written", 1)
    [request] = llm.requests
    assert (request.call_type, request.purpose, request.model) == ("summary", "summary", "claude-haiku-4-5")
    doc = store.get(conversation_path(ORG, KEY))
    levels = Levels.of(doc)
    assert [c["count"] for c in levels.level2] == [6] and levels.level3 == ""
    assert doc["summary"] == "要約1: 8行" and doc["compaction_version"] == 1
    # the context now reads only the 4 newest raw messages; all 10 stay stored, with their expiry
    assert [m["text"][:3] for m in recent_messages(store, ORG, KEY, 10)] == ["006", "007", "008", "009"]
    stored = store.query(history_path(ORG, KEY))
    assert len(stored) == 10 and all(d["expires_at"] == NOW + timedelta(days=30) for _, d in stored)
    # AND a second run finds the conversation under the threshold (idempotent)
    assert compact(store, ORG, KEY, compactor(llm, 112), now=NOW).reason == "below_threshold"


def test_at_eighty_five_percent_level2_chunks_are_folded_into_level3_too():
    # GIVEN a conversation already holding a level-2 chunk, then grown to 86 %
    store, llm = MemoryStore(), SummaryLLM()
    seed(store, 10)
    compact(store, ORG, KEY, compactor(llm, 112), now=NOW)
    for i in range(10, 16):
        append_message(
            store,
            ORG,
            KEY,
            f"t{i:03d}-0-in",
            role="user",
            text=f"{i:03d}" + "あ" * 7,
            at=NOW + timedelta(seconds=i),
            user_id="u1",
        )
    tokens = Levels.of(store.get(conversation_path(ORG, KEY))).tokens() + 10 * 8
    budget = int(tokens / 0.86)
    # WHEN compaction runs
    result = compact(store, ORG, KEY, compactor(llm, budget), now=NOW)
    # THEN level 3 holds the folded chunk (6 messages), a new chunk holds the 6 oldest raw ones
    assert (result.level, result.calls) == ("aggressive", 2)
    levels = Levels.of(store.get(conversation_path(ORG, KEY)))
    assert levels.level3.startswith("要約2") and levels.level3_count == 6
    assert [c["count"] for c in levels.level2] == [6]
    assert "これまでの要約" in llm.requests[1].messages[0]["content"]
    assert (
        store.get(conversation_path(ORG, KEY))["summary"].splitlines()[0].startswith("これまでの要点: 要約2")
    )


def test_at_ninety_five_percent_the_cut_is_immediate_deterministic_and_keeps_the_messages():
    # GIVEN 12 messages at 120 % of the budget
    store = MemoryStore()
    seed(store, 12)
    # WHEN compaction runs with an LLM that must not be called
    result = compact(store, ORG, KEY, compactor(NoLLM(), 100), now=NOW)
    # THEN the 8 oldest leave the window at once, the cut names their range, none is deleted
    assert (result.level, result.written, result.calls) == ("emergency", True, 0)
    doc = store.get(conversation_path(ORG, KEY))
    [cut] = doc["cuts"]
    assert cut["count"] == 8 and cut["to_seq"] == doc["window_from"]
    assert len(recent_messages(store, ORG, KEY, 20)) == 4 and len(store.query(history_path(ORG, KEY))) == 12
    assert result.after < CFG.light_threshold


def test_two_compactions_of_one_conversation_never_clobber_each_other():
    # GIVEN a conversation at 71 %, and a second compaction that writes while the first one's
    # summary call is in flight
    store = MemoryStore()
    seed(store, 10)
    inner = SummaryLLM(answer="内側の要約")
    outer = SummaryLLM(
        answer="外側の要約", during=lambda: compact(store, ORG, KEY, compactor(inner, 112), now=NOW)
    )
    # WHEN the first finishes
    result = compact(store, ORG, KEY, compactor(outer, 112), now=NOW)
    # THEN it finds the version moved and writes nothing: the second's state stands
    assert (result.written, result.reason) == (False, "conflict")
    doc = store.get(conversation_path(ORG, KEY))
    assert doc["summary"] == "内側の要約" and doc["compaction_version"] == 1


def test_a_summary_is_stored_masked():
    store = MemoryStore()
    seed(store, 10)
    compact(store, ORG, KEY, compactor(SummaryLLM(answer="連絡先は taro@example.com と決めた"), 112), now=NOW)
    assert "taro@example.com" not in store.get(conversation_path(ORG, KEY))["summary"]


def test_the_summary_prompt_speaks_as_the_persona_with_the_organisations_extension():
    # GIVEN the core and an extension that learned a preference
    voice = Voice.of(load_core(), {"learned_preferences": {"favorite_topics": ["釣り"]}})
    # WHEN the prompts are built
    persona, plain = system_prompt(voice, "level2"), system_prompt(None, "level2")
    # THEN the persona's name, first person and endings, the learned block, and the keep rules
    assert persona.startswith("あなたはソウルくんです。以下の会話をソウルくんの視点で要約してください。")
    assert "文末は「ウル」" in persona and "釣り" in persona
    for rule in ("決定事項、約束、ユーザーの好み", "ツール実行の結果は具体的な値"):
        assert rule in persona and rule in plain
    assert "ソウルくん" not in plain


def test_use_persona_prompt_off_sends_the_plain_prompt():
    store, llm = MemoryStore(), SummaryLLM()
    seed(store, 10)
    voice = Voice.of(load_core(), {})
    compact(
        store,
        ORG,
        KEY,
        compactor(llm, 112, CompactionConfig(min_raw_messages=4, use_persona_prompt=False), voice),
        now=NOW,
    )
    assert "ソウルくん" not in llm.requests[0].system[0]["text"]


def test_the_context_shows_each_level_as_a_line_of_the_summary():
    sections = build_sections(
        {"summary": "これまでの要点: 金曜に見積\n来週の会議を決めた"},
        {"summary": 4},
        now=NOW,
        degraded=[],
        fallback_user={},
    )
    summary = next(s for s in sections if s.name == "summary")
    assert summary.title.startswith("【会話の要約】") and len(summary.lines) == 2


def test_the_memory_config_rejects_each_mistake_with_one_config_error(tmp_path):
    assert load_memory_config().compaction.min_raw_messages == 10
    # the serving model's window with what every request carries, unless an operator fixes a budget
    assert MemoryConfig().history_budget(200_000, 14_000) == (200_000, 14_000)
    fixed = MemoryConfig(compaction=CompactionConfig(history_token_budget=1000))
    assert fixed.history_budget(200_000, 14_000) == (1000, 0)
    cases = (
        ('{"compaction": {"light_threshold": 0.9}}', "thresholds must rise"),
        ('{"compaction": {"min_raw": 3}}', "compaction.min_raw"),
        ("{", "not JSON"),
    )
    for n, (body, where) in enumerate(cases):
        path = tmp_path / f"memory{n}.json"
        path.write_text(body, encoding="utf-8")
        with pytest.raises(ConfigError, match=where):
            load_memory_config(path)
        # the start check reads CHARTER_MEMORY_CONFIG: a service with a broken file does not start
        with pytest.raises(ConfigError, match=where):
            check_startup({"CHARTER_ENV": "test", "CHARTER_MEMORY_CONFIG": str(path)})
