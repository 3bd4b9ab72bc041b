"""The memory search tool offers the tags its hits carry as the next thing to search, never a
tag of a memory the asker may not read."""

from __future__ import annotations

from tool_fakes import NOW, ORG, call

from shared_lib.memory.tags import ScoredTag, TaggingConfig, assign


def tag_chunks_of(store, memory_id, *tags):
    for cid, doc in store.query(f"orgs/{ORG}/memory_chunks"):
        if doc["source_id"] == memory_id:
            scored = [ScoredTag(tag=t, confidence=0.8) for t in tags]
            assign(
                store,
                ORG,
                f"orgs/{ORG}/memory_chunks/{cid}",
                scored,
                now=NOW,
                tagged_by="background_job",
                config=TaggingConfig(),
            )


def test_given_tagged_memories_when_queried_then_their_other_tags_are_suggested(ex, store):
    # GIVEN 鈴木's memory about the expense rule tagged 経費精算 and 交通費, and 田中's private
    # memory tagged 経費精算 and 退職
    mine = call(
        ex, "save_memory", {"content": "タクシー代の精算は月末締め", "category": "fact"}, call_id="m1"
    )
    theirs = call(
        ex,
        "save_memory",
        {"content": "経費の精算を最後にして辞める", "category": "fact"},
        user="u-tanaka1",
        call_id="m2",
    )
    tag_chunks_of(store, mine.result["memory_id"], "経費精算", "交通費")
    tag_chunks_of(store, theirs.result["memory_id"], "経費精算", "退職")
    # WHEN 鈴木 asks in his words
    out = call(ex, "query_memory", {"query": "けいひせいさんっていつまでだっけ"}, call_id="q1")
    # THEN his memory comes back with 交通費 to search next; 田中's tags are never offered
    assert [m["content"] for m in out.result["memories"]] == ["タクシー代の精算は月末締め"]
    assert out.result["related_tags"] == ["交通費"]
