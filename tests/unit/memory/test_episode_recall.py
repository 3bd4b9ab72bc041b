"""Episodes recalled (issue 36): indexed with when they happened, found by the hybrid search for
who may read them only (the organisation; an event episode its person's, a digest the top
level's), a source of the Context Builder rendered with its date, and reindexed when stored
before they were indexed."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from memory_fakes import NgramEmbedder

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.context import ContextBuilder, ContextConfig, ContextInput, record, render_recorded
from shared_lib.memory.episode_index import index_episode, reindex_episodes
from shared_lib.memory.episodes import episode_path
from shared_lib.memory.index import index_text, source_path
from shared_lib.state.session import set_pending
from shared_lib.tools.directory import seed_directory
from shared_lib.tools.handlers.memory import search_episodes
from shared_lib.tools.task_backend import StoreTaskBackend
from shared_lib.turn.envelope import ContextSection

ORG, OTHER = "acme", "globex"
ME, COLLEAGUE, CEO = "u-suzuki", "u-tanaka", "u-kazu"
NOW = datetime(2026, 11, 28, 1, 0, tzinfo=UTC)  # 11月28日（土） 10:00 in Tokyo

MINE = "鈴木さんから「これ重要：経費精算は来月からクラウドのシステムへ移行する」と聞いたウル。忘れないウル🐺"
THEIRS = "田中さんが「経費精算のクラウド移行、俺の部署は再来月からにしてほしい」とこっそり相談してきたウル。"
DIGEST = "今日は経費精算のクラウド移行の話でもちきりだったウル。みんなバタバタしてたウル🐺"
ELSEWHERE = "globexでも経費精算をクラウドへ移行すると決まったウル。"


def put_episode(
    store,
    eid: str,
    story: str,
    *,
    org: str = ORG,
    user: str | None = ME,
    kind: str = "event_driven",
    day: str = "2026-11-25",
    time: str = "14:05:00",
    embedder=None,
) -> None:
    doc = {
        "id": eid,
        "type": kind,
        "date": day,
        "time": time,
        "story_text": story,
        "metadata": {"tags": ["経費精算"]},
        "user_ids": [user] if user else [ME, COLLEAGUE],
    }
    store.set(episode_path(org, eid), doc)
    assert index_episode(store, embedder, org, eid, doc, now=NOW)


@pytest.fixture
def store() -> MemoryStore:
    store = MemoryStore()
    for org in (ORG, OTHER):
        seed_directory(
            store,
            org,
            [
                {"user_id": ME, "name": "鈴木一郎", "level": 2, "department_id": "d1"},
                {"user_id": COLLEAGUE, "name": "田中太郎", "level": 2, "department_id": "d1"},
                {"user_id": CEO, "name": "カズ", "level": 6, "department_id": "d1"},
            ],
            {"d1": None},
        )
    return store


@pytest.fixture(params=["keyword", "hybrid"])
def embedder(request):
    return NgramEmbedder() if request.param == "hybrid" else None


def seeded(store, embedder) -> None:
    put_episode(store, "e-mine", MINE, embedder=embedder)
    put_episode(store, "e-theirs", THEIRS, user=COLLEAGUE, time="16:40:00", embedder=embedder)
    put_episode(store, "e-digest", DIGEST, user=None, kind="daily_digest", time="23:00:00", embedder=embedder)
    put_episode(store, "e-globex", ELSEWHERE, org=OTHER, embedder=embedder)


def found(store, embedder, user: str, query: str = "経費精算の話どうなった？", org: str = ORG) -> list[str]:
    return [e["episode_id"] for e in search_episodes(store, org, query, 5, embedder=embedder, user_id=user)]


def test_given_episodes_of_people_and_orgs_when_a_member_asks_then_only_their_own_is_recalled(
    store, embedder
):
    # GIVEN my episode, a colleague's, the day's digest and another organisation's, all on one topic
    seeded(store, embedder)
    # WHEN I (level 2) ask about the topic
    # THEN only mine: never the colleague's, never the digest (everyone's day), never globex's
    assert found(store, embedder, ME) == ["e-mine"]
    assert found(store, embedder, COLLEAGUE) == ["e-theirs"]


def test_given_the_days_digest_when_the_top_level_asks_then_it_is_recalled_but_nobodys_private_episode(
    store, embedder
):
    seeded(store, embedder)
    assert found(store, embedder, CEO) == ["e-digest"]
    # AND someone not in the directory (no level, nobody's episodes) recalls nothing
    assert found(store, embedder, "u-stranger") == []


def test_given_another_organisation_when_it_searches_then_ours_never_comes_back(store, embedder):
    seeded(store, embedder)
    assert found(store, embedder, ME, org=OTHER) == ["e-globex"]


def test_given_an_episode_when_recalled_then_it_says_when_it_happened_in_japan_time(store, embedder):
    # GIVEN an episode of 25 November, 23:30 in Tokyo (14:30 UTC)
    put_episode(store, "e-late", MINE, time="23:30:00", embedder=embedder)
    (hit,) = search_episodes(store, ORG, "経費のクラウド化", 3, embedder=embedder, user_id=ME)
    # THEN its time is Tokyo's, not UTC's date
    assert hit["when"] == "2026-11-25T23:30+09:00" and "クラウド" in hit["content"]


def build(store, embedder, text: str, user: str = ME, budget: int = 2000, **said: bool):
    return ContextBuilder(ContextConfig(token_budget=budget)).build(
        ContextInput(
            store=store,
            tasks=StoreTaskBackend(store),
            org_id=ORG,
            user_id=user,
            room_id="r1",
            conversation_key=f"{ORG}/r1/{user}",
            text=text,
            now=NOW,
            embedder=embedder,
            **said,
        )
    )


def test_given_a_greeting_the_fast_path_answers_then_nothing_is_recalled_nor_embedded(store):
    embedder = NgramEmbedder()
    seeded(store, embedder)
    embedder.calls.clear()
    built = build(store, embedder, "お疲れさまです〜☕", greeting=True)
    assert built.records["episodes"].status == "skipped" and embedder.calls == []
    assert "【思い出した出来事】" not in built.rendered


@pytest.mark.parametrize("answer", ["はい！お願いします🙏", "ＯＫです", "いいえ、やめときます"])
def test_given_an_answer_to_the_confirmation_the_conversation_waits_on_then_nothing_is_recalled(
    store, answer
):
    embedder = NgramEmbedder()
    seeded(store, embedder)
    # GIVEN the conversation waits on my confirmation of a task about the expenses
    set_pending(
        store,
        ORG,
        f"{ORG}/r1/{ME}",
        {"approval_id": "ap-7k2m9q", "user_id": ME, "summary": "経費精算のタスクを作成"},
        NOW,
    )
    embedder.calls.clear()
    # WHEN I answer it THEN the state answers: no search, no embedding
    built = build(store, embedder, answer, reads_as_answer=True)
    assert built.records["episodes"].status == "skipped" and embedder.calls == []


def test_given_a_yes_with_no_confirmation_waiting_then_the_search_runs_as_for_any_text(store):
    embedder = NgramEmbedder()
    seeded(store, embedder)
    embedder.calls.clear()
    built = build(store, embedder, "はい、経費精算のクラウド移行の件です", reads_as_answer=True)
    assert built.records["episodes"].status == "ok" and embedder.calls
    assert "【思い出した出来事】" in built.rendered


def test_given_a_turn_about_a_lived_topic_then_the_context_shows_the_episode_with_its_date(store, embedder):
    seeded(store, embedder)
    # WHEN I ask, days later, in my own words (a typo, Kansai)
    built = build(store, embedder, "経費のやつ、結局どないなったん？クラウドのはなし")
    # THEN the context recalls my episode with its date as people read it, and nobody else's
    assert "【思い出した出来事】" in built.rendered
    assert "11月25日（水）14時5分: 鈴木さんから「これ重要：経費精算は来月から" in built.rendered
    assert "こっそり" not in built.rendered and "もちきり" not in built.rendered
    assert built.records["episodes"].status == "ok" and built.records["episodes"].items == 1
    # AND the record of the turn keeps it, rendered again the same way
    section = ContextSection()
    record(section, built, user_id=ME, user_name="鈴木一郎")
    assert [e["episode_id"] for e in section.episodes] == ["e-mine"]
    again = render_recorded(section, now=NOW, user_id=ME, user_name="鈴木一郎")
    assert "11月25日（水）14時5分: 鈴木さんから" in again


def test_given_a_tight_budget_then_recalled_episodes_are_the_first_thing_dropped(store, embedder):
    seeded(store, embedder)
    roomy = build(store, embedder, "経費精算どうなった？")
    tight = build(store, embedder, "経費精算どうなった？", budget=roomy.fitted.tokens - 5)
    assert list(tight.fitted.dropped) == ["episodes"] and "【思い出した出来事】" not in tight.rendered


def test_given_an_organisation_without_episodes_then_the_source_reads_one_document_and_embeds_nothing(store):
    embedder = NgramEmbedder()
    assert search_episodes(store, ORG, "経費精算どうなった？", embedder=embedder, user_id=ME) == []
    assert embedder.calls == []


def test_given_episodes_stored_before_they_were_indexed_when_reindexed_then_found_once(store):
    # GIVEN an episode document without chunks (written before episodes were indexed)
    doc = {
        "id": "e-old",
        "type": "event_driven",
        "date": "2026-10-01",
        "time": "09:15:00",
        "story_text": "佐藤さんが「来期から在宅勤務は週3日まで」と教えてくれたウル。これ重要って言ってたウル🐺",
        "metadata": {"tags": []},
        "user_ids": [ME],
    }
    store.set(episode_path(ORG, "e-old"), doc)
    store.set(episode_path(ORG, "e-empty"), {**doc, "id": "e-empty", "story_text": ""})
    assert found(store, None, ME, "在宅勤務って週何日まで？") == []
    # WHEN reindexed (only what was never indexed), twice
    assert reindex_episodes(store, None, ORG, now=NOW, every=False) == 1
    assert reindex_episodes(store, None, ORG, now=NOW, every=False) == 0
    # THEN it is recalled, its person's only, with its date
    assert found(store, None, ME, "在宅勤務って週何日まで？") == ["e-old"]
    assert found(store, None, COLLEAGUE, "在宅勤務って週何日まで？") == []
    assert store.get(source_path(ORG, "episode", "e-empty")) is None


def test_a_question_that_searches_knowledge_and_episodes_embeds_its_text_once(store):
    # GIVEN an episode and a knowledge document, and an embedder that counts what it is asked
    counting = NgramEmbedder()
    put_episode(store, "e-mine", MINE, embedder=counting)
    index_text(
        store,
        counting,
        ORG,
        source_kind="knowledge",
        source_id="k-keihi",
        text="経費精算の手順：領収書は月末までにクラウドで申請してください。",
        now=NOW,
    )
    counting.calls.clear()
    # WHEN a question (it triggers the knowledge search too) builds the turn's context
    built = build(store, counting, "経費精算の件ってその後どうなりました？😅")
    # THEN both sources searched by meaning, and the turn's text was embedded once between them
    assert built.records["episodes"].items == 1 and built.records["knowledge"].items == 1
    assert [kind for _, kind in counting.calls] == ["query"]
