"""The nightly job merges near-duplicate tags and splits a tag grown too broad (seed 001
§21.5.4): every memory keeps a tag, the change is recorded, and a second run does nothing."""

from __future__ import annotations

import json

from episode_fakes import MODEL, NOW, ORG, chunk, put, scripted, text_answer

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.memory.tag_evolution import SPLIT_MIN_ITEMS, evolve_tags
from shared_lib.memory.tag_signal import masters
from shared_lib.memory.tagging import job_path, run_tagging
from shared_lib.memory.tags import search_by_tags


def master(store, name):
    return next(d for _, d in masters(store, ORG, fresh=True) if d["tag"] == name)


def carried(store):
    return {cid: doc["tags"] for cid, doc in store.query(f"orgs/{ORG}/memory_chunks")}


def test_tags_spelled_alike_merge_into_the_more_used_one():
    # GIVEN 打ち合わせ on three memories, 打合せ and 打ち合せ (written by other days' answers) on others
    store = MemoryStore()
    a, b, c, d = (chunk(store, x, f"定例{x}") for x in "abcd")
    for item in (a, b, c):
        put(store, item, ("打ち合わせ", 0.8))
    put(store, c, ("打合せ", 0.5))
    put(store, d, ("打ち合せ", 0.6), ("議事録", 0.9))
    # WHEN the night's evolution runs
    changes = evolve_tags(store, None, ORG, NOW)
    # THEN both variants merge into 打ち合わせ, each memory keeps a tag, c's is reinforced
    assert sorted((ch.action, ch.tag, ch.into, ch.items) for ch in changes) == [
        ("merge", "打ち合せ", ("打ち合わせ",), 1),
        ("merge", "打合せ", ("打ち合わせ",), 1),
    ]
    assert carried(store) == {
        "a": ["打ち合わせ"],
        "b": ["打ち合わせ"],
        "c": ["打ち合わせ"],
        "d": ["議事録", "打ち合わせ"],
    }
    assert store.get(c)["tag_scores"]["打ち合わせ"]["confidence"] == 0.9  # 1 - 0.2 * 0.5
    assert (
        master(store, "打合せ")["merged_into"] == "打ち合わせ"
        and master(store, "打ち合わせ")["use_count"] == 5
    )
    # AND a second run changes nothing
    assert evolve_tags(store, None, ORG, NOW) == []
    # AND the old spelling, searched or given again, lands on the kept tag
    assert {h.path for h in search_by_tags(store, ORG, ["打合せ"])} == {a, b, c, d}
    put(store, chunk(store, "e", "来週の打合せ"), ("打合せ", 0.7))
    assert store.get(f"orgs/{ORG}/memory_chunks/e")["tags"] == ["打ち合わせ"]


def test_near_names_merge_only_when_they_share_memories():
    # GIVEN 顧客 (four memories) and クライアント (three of them) with near vectors, and
    # 請求書 near too but on other memories
    store = MemoryStore()
    items = [chunk(store, f"c{i}", f"取引先{i}") for i in range(5)]
    for item in items[:3]:
        put(store, item, ("顧客", 0.9), ("クライアント", 0.7))
    put(store, items[3], ("請求書", 0.8))
    put(store, items[4], ("顧客", 0.8))
    vectors = {"顧客": [1.0, 0.0], "クライアント": [0.98, 0.199], "請求書": [0.97, -0.243]}
    for p, doc in masters(store, ORG, fresh=True):
        store.set(p, {"embedding": vectors[doc["tag"]], "embedding_model": "e5"}, merge=True)
    # WHEN the evolution runs THEN クライアント merges into 顧客; 請求書 stays itself
    [change] = evolve_tags(store, None, ORG, NOW)
    assert (change.tag, change.into, change.items) == ("クライアント", ("顧客",), 3)
    assert "3/3" in change.why
    assert carried(store) == {
        "c0": ["顧客"],
        "c1": ["顧客"],
        "c2": ["顧客"],
        "c3": ["請求書"],
        "c4": ["顧客"],
    }


def broad_store(n: int = SPLIT_MIN_ITEMS + 10) -> MemoryStore:
    """プログラミング on ``n`` memories: half near one direction and tagged Rust, half near
    another and tagged Python (a few of each without the language tag)."""
    store = MemoryStore()
    for i in range(n):
        rust = i % 2 == 0
        wobble = (i % 5) * 0.02
        vector = [1.0, wobble, 0.1] if rust else [wobble, 1.0, 0.1]
        item = chunk(store, f"m{i:02d}", "所有権と借用" if rust else "型ヒント", embedding=vector)
        given = [("プログラミング", 0.8)]
        if i % 7:  # most carry their language
            given.append(("Rust" if rust else "Python", 0.6))
        put(store, item, *given)
    return store


def test_a_broad_tag_with_two_clear_clusters_splits_into_its_named_children():
    store = broad_store()
    # WHEN the evolution runs
    [change] = evolve_tags(store, None, ORG, NOW)
    # THEN プログラミング splits into Rust and Python, every memory moved to the nearer child
    assert change.action == "split" and set(change.into) == {"Rust", "Python"}
    assert change.items == SPLIT_MIN_ITEMS + 10
    for cid, tags in carried(store).items():
        expected = "Rust" if int(cid[1:]) % 2 == 0 else "Python"
        assert tags == [expected], cid
    assert set(master(store, "プログラミング")["split_into"]) == {"Rust", "Python"}
    # AND a second run does nothing
    assert evolve_tags(store, None, ORG, NOW) == []


def test_a_broad_tag_without_two_clusters_stays():
    store = MemoryStore()
    for i in range(SPLIT_MIN_ITEMS + 5):
        item = chunk(store, f"m{i:02d}", "経費の話", embedding=[1.0, (i % 3) * 0.01, 0.0])
        put(store, item, ("経費精算", 0.8), *([("交通費", 0.6)] if i % 2 else []))
    assert evolve_tags(store, None, ORG, NOW) == []
    assert all("経費精算" in tags for tags in carried(store).values())


def test_a_run_interrupted_after_marking_a_merge_is_finished_by_the_next():
    # GIVEN 見積り marked merged into 見積もり by a run that stopped before re-tagging
    store = MemoryStore()
    a, b = chunk(store, "a", "見積"), chunk(store, "b", "見積")
    put(store, a, ("見積もり", 0.8))
    put(store, b, ("見積り", 0.8))
    path = next(p for p, d in masters(store, ORG, fresh=True) if d["tag"] == "見積り")
    store.set(path, {"merged_into": "見積もり"}, merge=True)
    # WHEN the next run comes THEN b carries 見積もり, and nothing new is reported
    assert evolve_tags(store, None, ORG, NOW) == []
    assert carried(store) == {"a": ["見積もり"], "b": ["見積もり"]}


def test_the_nightly_job_records_what_it_changed():
    store = broad_store()
    answer = text_answer(json.dumps({"items": []}))
    out = run_tagging(store, scripted(answer, default=answer), ORG, NOW, MODEL, interests=["Rust"])
    assert out.status == "completed"
    [change] = store.get(job_path(ORG, out.day))["tag_changes"]
    assert change["action"] == "split" and change["tag"] == "プログラミング"
    assert set(change["into"]) == {"Rust", "Python"}
