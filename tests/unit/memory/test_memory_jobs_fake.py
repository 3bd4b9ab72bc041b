"""The fake LLM's answers to the memory jobs (infra/fake_llm/memory_jobs.py): recognised by the
marker, valid for the product's validation, and derived from the input (two inputs, two answers),
so the demo and the local stack can run the digest, event episodes and tagging."""

from __future__ import annotations

from datetime import timedelta

from episode_fakes import DAY, MODEL, NOW, ORG, RETENTION, at, busy_day, say, scripted, seeded_store

from infra.fake_llm import scripted as scripted_model
from infra.fake_llm.scenario import MessagesRequest
from shared_lib.memory.episodes import daily_digest, event_episode
from shared_lib.memory.tagging import run_tagging
from shared_lib.memory.tags import search_by_tags
from shared_lib.memory.triggers import TurnFacts
from shared_lib.persona.catalogue import load_persona
from shared_lib.ports import LLMRequest, LLMResponse

PERSONA = load_persona()


def fake(request: LLMRequest) -> LLMResponse:
    """The scripted model of the fake server, called as the server calls it."""
    reply = scripted_model.answer(MessagesRequest(request.model_dump()))
    return LLMResponse(content=reply.content, stop_reason=reply.stop_reason, model=request.model)


def test_the_digest_the_fake_writes_tells_who_talked_about_what():
    store = seeded_store()
    busy_day(store)
    outcome = daily_digest(store, scripted(default=fake), PERSONA, ORG, DAY, NOW, MODEL, retention=RETENTION)
    assert outcome.status == "written" and outcome.episode is not None
    meta = outcome.episode.metadata
    assert meta.characters == ["鈴木", "田中"] and meta.topics[0] == "見積書"
    assert "鈴木さん、田中さん" in outcome.episode.story_text and "「見積書」" in outcome.episode.story_text
    assert outcome.episode.story_text.endswith("ウル🐺") and "感謝" in meta.mood


def test_another_day_gets_another_story():
    store = seeded_store()
    for hour, text in (
        (9, "社員旅行の行き先を決めたい"),
        (10, "社員旅行は京都が候補"),
        (11, "京都の宿を予約"),
    ):
        say(store, "u-tanaka", text, at(hour))
    outcome = daily_digest(store, scripted(default=fake), PERSONA, ORG, DAY, NOW, MODEL, retention=RETENTION)
    assert outcome.episode is not None
    assert outcome.episode.metadata.characters == ["田中"]
    assert outcome.episode.metadata.topics[:2] == ["社員旅行", "京都"]


def test_an_event_episode_and_the_tagging_run_on_the_fake():
    store = seeded_store()
    llm = scripted(default=fake)
    facts = TurnFacts(
        "T-9", "u-suzuki", "来週の役員会は延期、覚えておいて", "わかったウル🐺", at(14), user_name="鈴木"
    )
    outcome = event_episode(store, llm, PERSONA, ORG, facts, NOW, MODEL, retention=RETENTION)
    assert outcome.episode is not None and "鈴木さん" in outcome.episode.story_text
    assert "覚えておいてほしいと頼まれたこと" in outcome.episode.story_text
    store.set(
        f"orgs/{ORG}/memory_chunks/k1",
        {
            "source_kind": "knowledge",
            "text": "役員会の議事録と役員会の日程",
            "created_at": NOW - timedelta(days=3),
            "tags": [],
            "tag_scores": {},
            "tags_checked_at": NOW - timedelta(days=30),
        },
    )
    tagged = run_tagging(store, llm, ORG, NOW, MODEL, interests=["役員会"])
    assert tagged.status == "completed" and tagged.items_processed == 2
    hits = search_by_tags(store, ORG, ["役員会"])
    assert {h.path.rsplit("/", 1)[-1] for h in hits} == {"k1", outcome.episode_id}


def test_a_call_without_the_marker_is_not_a_memory_job():
    from infra.fake_llm.memory_jobs import answer

    plain = MessagesRequest(
        {
            "model": MODEL,
            "system": "あなたはソウルくんです",
            "messages": [{"role": "user", "content": "こんにちは"}],
        }
    )
    assert answer(plain) is None
