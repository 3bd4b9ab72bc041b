"""Episodic memory (seed 001 §22): the daily digest of an organisation's day and the episodes
of a turn, in the seed's JSON form, masked at rest, once each, never from a refused answer."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest
from episode_fakes import (
    DAY,
    MODEL,
    NOW,
    ORG,
    RETENTION,
    at,
    busy_day,
    say,
    scripted,
    seeded_store,
    story,
    system_text,
    text_answer,
    user_text,
)

from shared_lib.cli.data import purge
from shared_lib.memory.episodes import Episode, StoryConfig, daily_digest, episode_path, event_episode
from shared_lib.memory.tags import NEVER_TAGGED
from shared_lib.memory.triggers import ToolFact, TurnFacts
from shared_lib.persona.catalogue import load_persona

PERSONA = load_persona()


def episodes_of(store, org=ORG):
    return store.query(f"orgs/{org}/episodes")


def digest(store, llm, **kw):
    return daily_digest(store, llm, PERSONA, ORG, DAY, NOW, MODEL, retention=RETENTION, **kw)


def test_a_day_is_told_once_in_the_seeds_json_form_from_that_days_messages_only():
    # GIVEN a day with four messages from two people (and messages the day before and after)
    store, llm = seeded_store(), scripted(story())
    busy_day(store)
    # WHEN the digest runs twice for that day
    first, second = digest(store, llm), digest(store, llm)
    # THEN one episode, one model call
    assert (first.status, second.status) == ("written", "exists")
    assert first.episode_id == second.episode_id and len(llm.requests) == 1
    [(eid, doc)] = episodes_of(store)
    assert uuid.UUID(eid) and eid == first.episode_id
    episode = Episode.model_validate(
        {k: doc[k] for k in ("id", "type", "date", "time", "story_text", "metadata")}
    )
    assert (episode.type, episode.date, episode.time) == ("daily_digest", "2026-11-24", "18:01:00")
    assert episode.metadata.characters == ["鈴木", "田中"] and episode.metadata.importance == 0.6
    assert doc["user_ids"] == ["u-suzuki", "u-tanaka"] and doc["expires_at"] == NOW + RETENTION
    # the prompt: the day's log by name, nothing of the day before or after
    said = user_text(llm.requests[0])
    assert "11月24日（火）" in said and "[09:00] 鈴木: 見積書の確認をお願いしたい" in said
    assert "[18:01] ソウルくん: 了解したウル🐺" in said
    assert "社員旅行" not in said and "年末調整" not in said


def test_the_story_prompt_is_the_personas_and_asks_for_json_on_the_summary_purpose():
    store, llm = seeded_store(), scripted(story())
    busy_day(store)
    digest(store, llm)
    request = llm.requests[0]
    system = system_text(request)
    assert (request.call_type, request.purpose, request.model) == ("summary", "summary", MODEL)
    assert system.startswith("[[charter-memory:daily_digest]]")
    assert "あなたはソウルくんです" in system and "ウル" in system and "日記のように" in system
    assert '"story_text"' in system and "266-800文字程度" in system


def test_a_quiet_day_gets_no_digest_and_no_model_call():
    store, llm = seeded_store(), scripted()
    say(store, "u-suzuki", "おはよう", at(9))
    say(store, "u-tanaka", "こんにちは", at(12))
    outcome = digest(store, llm)
    assert outcome.status == "skipped" and "2 messages" in outcome.reason
    assert llm.requests == [] and episodes_of(store) == []
    # the threshold is the configuration's
    assert digest(store, scripted(story()), config=StoryConfig(min_events_for_daily=2)).status == "written"


def test_a_bad_answer_is_retried_once_with_the_reason():
    store, llm = seeded_store(), scripted(text_answer("今日は楽しかったウル"), story())
    busy_day(store)
    assert digest(store, llm).status == "written"
    retry = llm.requests[1]
    assert [m["role"] for m in retry.messages] == ["user", "assistant", "user"]
    assert "指定の形式ではありませんでした" in retry.messages[2]["content"]


@pytest.mark.parametrize(
    "bad",
    [
        "not json at all",
        json.dumps({"story_text": "短い"}),  # too short to be a story
        json.dumps({"story_text": "今日も一日がんばったウル。" * 5, "metadata": {"importance": 3}}),
        json.dumps({"story_text": "長" * 2000}),  # a transcript, not a story
    ],
)
def test_two_bad_answers_are_reported_and_nothing_is_stored(bad):
    store, llm = seeded_store(), scripted(text_answer(bad), text_answer(bad))
    busy_day(store)
    outcome = digest(store, llm)
    assert outcome.status == "failed" and outcome.reason
    assert len(llm.requests) == 2 and episodes_of(store) == []
    # a later run may try again (nothing claimed the day)
    assert digest(store, scripted(story())).status == "written"


def test_an_episode_is_masked_at_rest():
    leaked = "田中さんの電話は 090-1234-5678、メールは tanaka@example.com だったウル。覚えておくウル🐺"
    store, llm = seeded_store(), scripted(story(leaked, topics=["連絡先 tanaka@example.com"]))
    busy_day(store)
    digest(store, llm)
    [(_, doc)] = episodes_of(store)
    stored = json.dumps(doc, ensure_ascii=False, default=str)
    assert "090-1234-5678" not in stored and "tanaka@example.com" not in stored
    assert "[PHONE]" in doc["story_text"] and "[EMAIL]" in doc["metadata"]["topics"][0]


def test_the_models_tags_are_put_on_the_episode_and_the_job_still_finds_it_untagged():
    store, llm = seeded_store(), scripted(story(tags=["見積書", "ﾐﾂﾓﾘ"]))
    busy_day(store)
    digest(store, llm)
    [(_, doc)] = episodes_of(store)
    assert doc["tags"] == ["見積書", "ミツモリ"]
    assert doc["tag_scores"]["見積書"]["tagged_by"] == "realtime"
    assert doc["tags_checked_at"] == NEVER_TAGGED
    assert {d["tag"] for _, d in store.query(f"orgs/{ORG}/memory_tags")} == {"見積書", "ミツモリ"}


def test_a_person_purged_takes_the_episodes_they_appear_in():
    store = seeded_store()
    busy_day(store)
    digest(store, scripted(story()))
    counts = purge(store, ORG, "u-tanaka")
    assert counts["episodes"] == 1 and episodes_of(store) == []


def facts(text="ありがとう", tools=(), turn="T-1", user="u-suzuki"):
    return TurnFacts(turn, user, text, "どういたしましてウル🐺", at(14, 30), user_name="鈴木", tools=tools)


TRIGGERS = {
    "remember": facts("来週の役員会は延期になったので覚えておいて"),
    "important": facts("これ重要：請求書は月末締め"),
    "task_done": facts(
        "見積書のタスク終わった",
        (ToolFact("chatwork_task_complete", True, {"status": "done", "body": "見積書"}),),
    ),
    "goal_reached": facts(
        "目標達成！", (ToolFact("goal_progress_report", True, {"title": "資格取得", "progress": 100}),)
    ),
}


@pytest.mark.parametrize("name", list(TRIGGERS))
def test_a_turn_worth_remembering_becomes_one_event_episode(name):
    store, llm = seeded_store(), scripted(story("鈴木さんと大事な話をしたウル。しっかり覚えておくウル🐺"))
    turn = TRIGGERS[name]
    first = event_episode(store, llm, PERSONA, ORG, turn, NOW, MODEL, retention=RETENTION)
    again = event_episode(store, llm, PERSONA, ORG, turn, NOW, MODEL, retention=RETENTION)
    assert (first.status, again.status) == ("written", "exists") and len(llm.requests) == 1
    doc = store.get(episode_path(ORG, first.episode_id))
    expected = {"important": "remember"}.get(name, name)
    assert doc["type"] == "event_driven" and doc["trigger"] == expected
    assert (doc["date"], doc["time"]) == ("2026-11-24", "14:30:00") and doc["source_turn_id"] == "T-1"
    assert doc["user_ids"] == ["u-suzuki"]
    prompt = user_text(llm.requests[0])
    assert "覚えておく理由:" in prompt and turn.text in prompt
    assert system_text(llm.requests[0]).startswith("[[charter-memory:event_driven]]")


@pytest.mark.parametrize(
    "turn",
    [
        facts("ありがとう"),
        facts("タスク完了にして", (ToolFact("chatwork_task_complete", False, {}),)),  # failed
        facts(
            "タスク完了にして", (ToolFact("chatwork_task_complete", True, {"status": "done"}, dry_run=True),)
        ),
        facts("進捗は50%", (ToolFact("goal_progress_report", True, {"progress": 50}),)),
        facts("タスク一覧", (ToolFact("chatwork_task_search", True, {"count": 3}),)),
    ],
)
def test_an_ordinary_turn_gets_no_episode_and_no_model_call(turn):
    store, llm = seeded_store(), scripted()
    outcome = event_episode(store, llm, PERSONA, ORG, turn, NOW, MODEL, retention=RETENTION)
    assert outcome.status == "skipped" and llm.requests == [] and episodes_of(store) == []


def test_event_episodes_can_be_turned_off():
    store, llm = seeded_store(), scripted()
    config = StoryConfig(event_driven=False)
    outcome = event_episode(
        store, llm, PERSONA, ORG, TRIGGERS["remember"], NOW, MODEL, retention=RETENTION, config=config
    )
    assert outcome.status == "skipped" and llm.requests == []


def test_two_organisations_days_are_apart():
    store = seeded_store()
    busy_day(store)
    llm = scripted(story())
    outcome = daily_digest(store, llm, PERSONA, "other-org", DAY, NOW, MODEL, retention=RETENTION)
    assert outcome.status == "skipped" and llm.requests == []
    assert digest(store, llm).episode_id != outcome.episode_id


def test_the_expiry_follows_the_retention_given():
    store = seeded_store()
    busy_day(store)
    daily_digest(store, scripted(story()), PERSONA, ORG, DAY, NOW, MODEL, retention=timedelta(days=7))
    [(_, doc)] = episodes_of(store)
    assert doc["expires_at"] == NOW + timedelta(days=7)
