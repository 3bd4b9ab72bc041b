"""Tags on memories (seed 001 §21): near-duplicates merge, the job tags what is due once a day,
tags evolve (reinforced, added by new interests, weighed down when unused), search by tag."""

from __future__ import annotations

import json
from datetime import timedelta

from episode_fakes import (
    MODEL,
    NOW,
    ONE_DAY,
    ORG,
    chunk,
    put,
    scripted,
    system_text,
    text_answer,
    user_text,
)

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.memory.tagging import job_path, run_tagging
from shared_lib.memory.tags import (
    NEVER_TAGGED,
    Reader,
    TaggingConfig,
    freshness,
    search_by_tags,
    tag_id,
    trending_tags,
    untagged_fields,
)

CONFIG = TaggingConfig()


def episode(store, eid, text, date="2026-11-25", created=NOW):
    path = f"orgs/{ORG}/episodes/{eid}"
    store.set(
        path,
        {
            "id": eid,
            "type": "daily_digest",
            "date": date,
            "time": "23:00:00",
            "story_text": text,
            "metadata": {},
            "created_at": created,
            **untagged_fields(),
        },
    )
    return path


def tags_answer(*items):
    """``items``: (id, [(tag, confidence), ...])."""
    body = {"items": [{"id": i, "tags": [{"tag": t, "confidence": c} for t, c in tags]} for i, tags in items]}
    return text_answer(json.dumps(body, ensure_ascii=False))


def test_near_duplicate_tags_are_one_tag():
    store = MemoryStore()
    a, b, c = chunk(store, "a", "メモリの話"), chunk(store, "b", "記憶の話"), chunk(store, "c", "ML")
    put(store, a, ("メモリー", 0.8))
    put(store, b, ("ﾒﾓﾘ", 0.6), ("めもり", 0.9))  # the same tag twice in one answer: the surer one
    put(store, c, ("Machine Learning", 0.8), ("machine-learning", 0.5))
    masters = {d["tag"]: d for _, d in store.query(f"orgs/{ORG}/memory_tags")}
    assert set(masters) == {"メモリー", "Machine Learning"}
    assert masters["メモリー"]["use_count"] == 2
    assert (
        store.get(b)["tags"] == ["メモリー"] and store.get(b)["tag_scores"]["メモリー"]["confidence"] == 0.9
    )
    # any spelling finds them
    assert {h.path for h in search_by_tags(store, ORG, ["めもりー"])} == {a, b}


def test_what_is_stored_is_confident_enough_bounded_and_never_a_value_in_clear():
    store = MemoryStore()
    item = chunk(store, "a", "text")
    put(store, item, ("低い", 0.29), ("ぎりぎり", 0.3), ("090-1234-5678", 0.9), ("・ ", 0.9))
    assert store.get(item)["tags"] == ["ぎりぎり"]
    put(store, item, *[(f"タグ{i:02d}", 0.4 + i / 100) for i in range(20)])
    kept = store.get(item)["tags"]
    assert len(kept) == CONFIG.max_tags_per_item and kept[0] == "タグ19" and "ぎりぎり" not in kept


def test_the_job_tags_what_is_due_with_the_days_interests_once_a_day():
    # GIVEN today's digest and two chunks never tagged, one chunk looked at yesterday, one episode's chunk
    store = MemoryStore()
    digest = episode(store, "e1", "今日は機械学習の勉強会の準備をしたウル")
    old = chunk(store, "c1", "統計の基礎と行列計算のメモ")
    other = chunk(store, "c2", "来月の社員旅行の候補地")
    recent = chunk(store, "c3", "昨日見たもの", tags_checked_at=NOW - ONE_DAY)
    chunk(store, "c4", "エピソードの写し", source_kind="episode")
    llm = scripted(
        text_answer('{"interests": ["機械学習", "勉強会"]}'),
        tags_answer(
            ("1", [("機械学習", 0.9)]), ("2", [("統計", 0.8), ("機械学習", 0.6)]), ("3", [("旅行", 0.2)])
        ),
    )
    # WHEN the job runs
    outcome = run_tagging(store, llm, ORG, NOW, MODEL)
    # THEN the interests come from the day's digest, the items due are tagged and stamped
    assert outcome.status == "completed" and outcome.interests == ("機械学習", "勉強会")
    assert (outcome.items_processed, outcome.tags_added, outcome.tags_updated) == (3, 3, 0)
    assert "機械学習の勉強会" in user_text(llm.requests[0])
    assert system_text(llm.requests[1]).startswith("[[charter-memory:tagging]]")
    prompt = user_text(llm.requests[1])
    assert (
        "関心事リスト: 機械学習, 勉強会" in prompt
        and "昨日見たもの" not in prompt
        and "エピソードの写し" not in prompt
    )
    assert store.get(old)["tags"] == ["統計", "機械学習"] and store.get(digest)["tags"] == ["機械学習"]
    assert store.get(old)["tag_scores"]["統計"]["tagged_by"] == "background_job"
    assert (
        store.get(other)["tags"] == [] and store.get(other)["tags_checked_at"] == NOW
    )  # looked at, nothing kept
    assert store.get(recent)["tags_checked_at"] == NOW - ONE_DAY
    record = store.get(job_path(ORG, "2026-11-25"))
    assert record["status"] == "completed" and record["chunks_processed"] == 3
    assert record["tags_added"] == 3 and record["current_interests"] == ["機械学習", "勉強会"]
    # AND the same day again does nothing
    again = scripted()
    assert run_tagging(store, again, ORG, NOW + timedelta(hours=3), MODEL).status == "skipped"
    assert again.requests == []


def test_tags_evolve_repeated_ones_rise_new_interests_reach_old_items():
    store = MemoryStore()
    old = chunk(store, "c1", "統計の基礎と行列計算のメモ")
    run_tagging(store, scripted(tags_answer(("1", [("統計", 0.6)]))), ORG, NOW, MODEL, interests=[])
    # a week later nothing is due yet: no model call at all
    quiet = scripted()
    assert run_tagging(store, quiet, ORG, NOW + 6 * ONE_DAY, MODEL, interests=[]).items_processed == 0
    assert quiet.requests == []
    # past retag_after_days the item is read again with the new interest
    later = NOW + 8 * ONE_DAY
    llm = scripted(tags_answer(("1", [("統計", 0.6), ("ML関連", 0.7)])))
    outcome = run_tagging(store, llm, ORG, later, MODEL, interests=["機械学習"])
    assert (outcome.tags_added, outcome.tags_updated) == (1, 1)
    scores = store.get(old)["tag_scores"]
    assert scores["統計"]["confidence"] == 0.84 and scores["ML関連"]["confidence"] == 0.7
    assert "関心事リスト: 機械学習" in user_text(llm.requests[0])
    master = store.get(f"orgs/{ORG}/memory_tags/{tag_id('統計')}")
    assert master["use_count"] == 2 and master["last_used_at"] == later


def test_a_batch_answered_badly_twice_fails_the_run_and_leaves_its_items_due():
    store = MemoryStore()
    item = chunk(store, "c1", "統計の基礎")
    llm = scripted(text_answer("タグは統計です"), text_answer('{"items": "統計"}'))
    outcome = run_tagging(store, llm, ORG, NOW, MODEL, interests=[])
    assert outcome.status == "failed" and len(llm.requests) == 2
    assert store.get(item)["tags_checked_at"] == NEVER_TAGGED and store.get(item)["tags"] == []
    assert store.get(job_path(ORG, "2026-11-25"))["status"] == "failed"
    # a failed day may run again
    retry = run_tagging(
        store, scripted(tags_answer(("1", [("統計", 0.9)]))), ORG, NOW + ONE_DAY / 4, MODEL, interests=[]
    )
    assert retry.status == "completed" and store.get(item)["tags"] == ["統計"]


def test_batches_follow_the_batch_size():
    store = MemoryStore()
    for i in range(5):
        chunk(store, f"c{i}", f"メモ{i}", created=NOW - (10 - i) * ONE_DAY)
    answers = [tags_answer(("1", [("メモ", 0.9)]), ("2", [("メモ", 0.9)]))] * 3
    llm = scripted(*answers)
    outcome = run_tagging(store, llm, ORG, NOW, MODEL, interests=[], config=TaggingConfig(batch_size=2))
    assert outcome.items_processed == 5 and len(llm.requests) == 3


def test_search_by_tags_or_and_confidence_and_time():
    store = MemoryStore()
    both = chunk(store, "both", "見積と請求", created=NOW - 2 * ONE_DAY)
    one = chunk(store, "one", "見積だけ", created=NOW - 20 * ONE_DAY)
    weak = chunk(store, "weak", "請求かも", created=NOW - ONE_DAY)
    put(store, both, ("見積", 0.9), ("請求", 0.8))
    put(store, one, ("見積", 0.7))
    put(store, weak, ("請求", 0.4))
    other = MemoryStore()
    assert search_by_tags(other, ORG, ["見積"]) == []
    chunk(store, "x", "他社の見積", org="other-org")
    assert [h.path for h in search_by_tags(store, ORG, ["見積", "請求"])] == [both, one]
    assert [h.path for h in search_by_tags(store, ORG, ["見積", "請求"], mode="and")] == [both]
    assert [h.path for h in search_by_tags(store, ORG, ["請求"], min_confidence=0.3)] == [both, weak]
    assert [h.path for h in search_by_tags(store, ORG, ["見積"], since=NOW - 5 * ONE_DAY)] == [both]
    assert [h.path for h in search_by_tags(store, ORG, ["見積"], until=NOW - 5 * ONE_DAY)] == [one]
    assert search_by_tags(store, ORG, ["見積", "存在しないタグ"], mode="and") == []
    hit = search_by_tags(store, ORG, ["見積", "請求"], mode="and")[0]
    assert hit.kind == "chunk" and hit.matched == (("見積", 0.9), ("請求", 0.8)) and hit.text == "見積と請求"


def test_a_tag_unused_for_long_weighs_less():
    store = MemoryStore()
    stale, fresh = chunk(store, "stale", "古い話"), chunk(store, "fresh", "新しい話")
    put(store, stale, ("昔の関心", 0.9), when=NOW - 90 * ONE_DAY)
    put(store, fresh, ("今の関心", 0.9), when=NOW)
    hits = search_by_tags(store, ORG, ["昔の関心", "今の関心"], now=NOW)
    assert [h.path for h in hits] == [fresh, stale]
    assert round(hits[1].score, 4) == round(0.9 * 0.5**3, 4)  # three half-lives of 30 days
    assert freshness(NOW, NOW, 30) == 1.0 and freshness(None, NOW, 30) == 1.0


def test_trending_tags_count_the_recent_uses():
    store = MemoryStore()
    items = [chunk(store, f"c{i}", "x") for i in range(4)]
    for item in items:
        put(store, item, ("見積", 0.9), when=NOW - 2 * ONE_DAY)
    put(store, items[0], ("請求", 0.9), when=NOW - ONE_DAY)
    put(store, items[1], ("旅行", 0.9), when=NOW - 20 * ONE_DAY)
    assert trending_tags(store, ORG, days=7, limit=10, now=NOW) == [("見積", 4), ("請求", 1)]
    assert trending_tags(store, ORG, days=7, limit=1, now=NOW) == [("見積", 4)]


def test_tagging_can_be_turned_off():
    store, llm = MemoryStore(), scripted()
    chunk(store, "c1", "x")
    assert run_tagging(store, llm, ORG, NOW, MODEL, config=TaggingConfig(enabled=False)).status == "skipped"
    assert llm.requests == [] and store.get(job_path(ORG, "2026-11-25")) is None


def test_a_reader_finds_only_what_they_may_read():
    store = MemoryStore()
    shared = chunk(store, "shared", "共有", min_level=1, user_id=None)
    secret = chunk(store, "secret", "役員向け", min_level=5, user_id=None)
    private = chunk(store, "private", "鈴木さんのメモ", min_level=1, user_id="u-suzuki")
    digest = episode(store, "d1", "みんなの一日")
    mine = episode(store, "e1", "鈴木さんのこと")
    store.set(mine, {"type": "event_driven", "user_ids": ["u-suzuki"]}, merge=True)
    for item in (shared, secret, private, digest, mine):
        put(store, item, ("共有", 0.9))

    def found(reader):
        return {h.path for h in search_by_tags(store, ORG, ["共有"], reader=reader)}

    assert found(None) == {shared, secret, private, digest, mine}
    assert found(Reader("u-tanaka", 2)) == {shared, digest}
    assert found(Reader("u-suzuki", 2)) == {shared, private, digest, mine}
    assert found(Reader("u-boss", 6)) == {shared, secret, digest}
