"""The persona's learned extension over the real layers in process (seed 001 §16.4), with a
scripted LLM: a proposal teaches the organisation within allowed keys, a core key is refused
with its reason in the trail, the next turn's prompt carries 「学んだ好み」 in Main while Base
keeps its bytes, and the announcement override reaches the call whose context it is."""

from __future__ import annotations

from typing import Any

from brain_fakes import ORG, PEOPLE, FakeLLM, decision, inbound, runtime, text, text_answer, turn

from shared_lib.brain.integration import integrate
from shared_lib.brain.persona_prompt import context_for, persona_system
from shared_lib.brain.prompt import assemble, stable_system
from shared_lib.features.persona_learning.store import ext_path, load_ext
from shared_lib.layers.ingress import accept
from shared_lib.persona.core import load_core
from shared_lib.persona.ext import merged_view
from shared_lib.tools.directory import seed_directory
from shared_lib.turn.envelope import ToolResult
from shared_lib.turn.proposal import Proposal
from shared_lib.wiring.composition import wire_inprocess

RULE = "朝の挨拶では天気に触れる"
TEACH = [
    {"key": "custom_rules", "value": RULE, "reasoning": "毎朝天気の話をしてほしいと言われた"},
    {"key": "tone.sentence_endings", "value": ["です"], "reasoning": "語尾を変えてと言われた"},
    {"key": "persona.name", "value": "カイロ", "reasoning": "名前を変えてと言われた"},
]


class Chain:
    def __init__(self, *answers: Any, level: int = 5) -> None:
        self.llm = FakeLLM(*(decision(a) for a in answers), default=lambda r: text_answer("了解ウル🐺"))
        self.rt = runtime(self.llm)
        people = [{**p, "level": level} if p["user_id"] == "u1" else p for p in PEOPLE]
        seed_directory(self.rt.store, ORG, people, {"d1": None})
        wire_inprocess(self.rt)
        self.n = 0

    def say(self, message: str) -> dict[str, Any]:
        self.n += 1
        turn_id = accept(self.rt, inbound(message, f"e{self.n}"))
        assert turn_id is not None
        record = self.rt.store.get(f"orgs/{ORG}/observability/{turn_id}")
        assert record is not None
        return record


def responder_detail(record: dict[str, Any]) -> str:
    return next(e["detail"] for e in record["trail"] if e["layer"] == "responder")


def test_a_taught_rule_is_applied_a_core_key_is_refused_and_the_next_prompt_carries_it():
    # GIVEN a manager (level 5) whose message the model answers with three persona updates
    chain = Chain(text("覚えたウル🐺", persona_update=TEACH), text("おはようウル🐺 今日は晴れウル！"))
    # WHEN the turn runs
    record = chain.say("これから朝は天気の話をして。あと語尾を「です」に、名前をカイロにして")
    # THEN the allowed key is stored, the core keys are refused with their reason in the trail
    detail = responder_detail(record)
    assert "+custom_rules" in detail
    assert "-tone.sentence_endings:core_key" in detail and "-persona.name:core_key" in detail
    doc = chain.rt.store.get(ext_path(ORG))
    assert doc is not None and doc["custom_rules"] == [RULE]
    assert "tone" not in doc and "persona" not in doc
    # AND the core is what it was: the merged view's core sections are the core's, exactly
    core = load_core()
    merged = merged_view(core, load_ext(chain.rt.store, ORG))
    assert merged["tone"] == core.tone.model_dump(mode="json") and merged["tone"]["sentence_endings"] == [
        "ウル"
    ]
    assert merged["persona"]["name"] == "ソウルくん" and merged["extension"] == {"custom_rules": [RULE]}
    # WHEN the next turn is proposed
    chain.say("おはよう、今日の予定は？")
    first, second = chain.llm.calls("proposal")[:2]
    # THEN Base is the same bytes as before the teaching (the cache holds); Main carries the block
    assert first.system[0] == second.system[0] == stable_system(chain.rt.persona)
    main = second.system[-1]["text"]
    assert "【学んだ好み" in main and RULE in main
    assert "【学んだ好み" not in first.system[-1]["text"]


def test_a_person_below_the_teaching_level_teaches_nothing():
    chain = Chain(text("覚えたウル🐺", persona_update=TEACH[:1]), level=2)
    record = chain.say("これから朝は天気の話をして")
    assert "-custom_rules:level" in responder_detail(record)
    assert chain.rt.store.get(ext_path(ORG)) is None


def test_the_announcement_override_reaches_the_proposal_and_the_phrasing_calls():
    # GIVEN an organisation whose announcements are formal and without emoji
    rt = runtime(FakeLLM(text_answer("タスクを作ったウル🐺")))
    rt.store.set(
        ext_path(ORG),
        {"context_overrides": {"announcement": {"formality": "formal", "emoji_usage": False}}},
    )
    ext = load_ext(rt.store, ORG)
    # WHEN the user asks for an announcement (a keyword of the announcement tools), or just chats
    announcing = turn("全員に明日の会議は10時からとアナウンスして")
    announcing.context.persona_ext = ext
    chatting = turn("こんにちは")
    chatting.context.persona_ext = ext
    # THEN only the announcement's call gets the override: 丁寧語, and still the core's ウル, no emoji
    assert context_for(announcing, rt.registry) == "announcement"
    assert context_for(chatting, rt.registry) is None
    (block,) = persona_system(announcing, rt.persona, rt.registry)
    assert (
        "丁寧語" in block["text"]
        and "「ウル」で終える" in block["text"]
        and "絵文字は使わない" in block["text"]
    )
    assert persona_system(chatting, rt.persona, rt.registry) == []
    main = assemble(announcing, persona=rt.persona, registry=rt.registry, now=rt.clock()).system[-1]["text"]
    assert block["text"] in main
    # AND a turn whose proposal is the announcement tool is in that context too, whatever its words
    proposed = turn("さっきのやつ、送っておいて")
    proposed.proposal.proposal = Proposal.model_validate(
        {
            "output_type": "tool_call",
            "reasoning": {"intent_understanding": "周知", "tool_selection_reason": "アナウンス"},
            "confidence": {"overall": 0.9},
            "tool_calls": [
                {"tool_name": "announce", "parameters": {"message": "明日は休み", "recipients": "all"}}
            ],
        }
    )
    assert context_for(proposed, rt.registry) == "announcement"


def test_the_phrasing_call_gets_the_learned_block_after_base():
    llm = FakeLLM(text_answer("タスクを作ったウル🐺"))
    rt = runtime(llm)
    t = turn("田中さんに見積書のタスクをお願い")
    t.proposal.model = "claude-sonnet-4-6"
    t.context.persona_ext = {"learned_preferences": {"favorite_topics": ["見積"]}}
    t.execution.results = [
        ToolResult(tool_name="chatwork_task_create", call_index=0, ok=True, result={"body": "見積書"})
    ]
    assert integrate(t, rt) == "タスクを作ったウル🐺"
    (request,) = llm.calls("integration")
    assert request.system[0] == stable_system(rt.persona)
    assert len(request.system) == 2 and "見積" in request.system[1]["text"]
