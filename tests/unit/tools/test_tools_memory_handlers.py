"""Memory and knowledge tools: save (no duplicates), query, delete, knowledge search."""

from __future__ import annotations

from tool_fakes import NOW, ORG, call, docs

from shared_lib.memory.ingest import add_item


def save(ex, content, n, category="preference", **extra):
    return call(ex, "save_memory", {"content": content, "category": category, **extra}, call_id=f"m{n}")


def test_given_a_memory_when_saved_then_stored_for_the_sender_and_a_repeat_makes_no_copy(ex, store):
    first = save(ex, " 私はコーヒーはブラック派 ", 1)
    again = save(ex, "私はコーヒーはブラック派", 2)
    assert first.ok and first.result["content"] == "私はコーヒーはブラック派"
    assert again.result == {
        "memory_id": first.result["memory_id"],
        "content": "私はコーヒーはブラック派",
        "category": "preference",
        "already_saved": True,
    }
    stored = docs(store, "memories")
    assert (
        list(stored) == [first.result["memory_id"]]
        and stored[first.result["memory_id"]]["user_id"] == "u-suzuki"
    )


def test_given_an_unknown_category_when_saved_then_validation_error(ex, store):
    assert save(ex, "x", 1, category="secret").error_code == "validation_error"


def test_given_memories_when_queried_then_only_the_senders_matches_best_first(ex, store):
    save(ex, "コーヒーはブラック派", 1)
    save(ex, "田中さんは営業部長", 2, category="person", subject="田中")
    call(ex, "save_memory", {"content": "コーヒーは甘いのが好き"}, user="u-tanaka1", call_id="m3")
    out = call(ex, "query_memory", {"query": "コーヒーの好み"})
    assert out.ok and [m["content"] for m in out.result["memories"]] == ["コーヒーはブラック派"]
    people = call(ex, "query_memory", {"query": "田中", "category": "person"})
    assert [m["subject"] for m in people.result["memories"]] == ["田中"]


def test_given_a_memory_when_deleted_then_removed_and_ambiguity_asks_first(ex, store):
    save(ex, "コーヒーはブラック派", 1)
    save(ex, "コーヒーは朝だけ", 2)
    ambiguous = call(ex, "delete_memory", {"memory_query": "コーヒー"})
    assert ambiguous.result["clarification"] and len(docs(store, "memories")) == 2
    out = call(ex, "delete_memory", {"memory_query": "ブラック"}, call_id="d1")
    assert out.ok and out.result["content"] == "コーヒーはブラック派"
    assert [d["content"] for d in docs(store, "memories").values()] == ["コーヒーは朝だけ"]


def test_given_knowledge_documents_when_searched_then_keyword_matches_best_first(ex, store):
    # knowledge comes in through shared_lib.memory.ingest (indexed as chunks), no longer by a
    # bare write of orgs/{org}/knowledge/{id}, which the hybrid search does not read
    def add(title, text, **kw):
        return add_item(store, None, ORG, kind="knowledge", text=text, title=title, now=NOW, **kw)["id"]

    k1 = add("経費精算規程", "経費精算は月末までに申請する。")
    add("有給休暇", "有給休暇は3日前までに申請する。")
    add("社内イベント", "忘年会は12月。")
    secret = add("経費の役員枠", "役員の経費精算は社長が承認する。", min_level=5)
    out = call(ex, "knowledge_search", {"query": "経費精算のルール"})
    assert out.ok and [r["knowledge_id"] for r in out.result["results"]] == [
        k1
    ]  # level 2: not the level-5 one
    boss = call(ex, "knowledge_search", {"query": "経費精算のルール"}, user="u-boss", call_id="k2")
    assert {r["knowledge_id"] for r in boss.result["results"]} == {k1, secret}


def test_a_saved_memory_is_indexed_privately_and_its_delete_removes_the_chunks(ex, store):
    first = save(ex, "私の誕生日は5月3日", 1, category="fact")
    chunks = store.query(f"orgs/{ORG}/memory_chunks")
    assert (
        len(chunks) == 1
        and chunks[0][1]["user_id"] == "u-suzuki"
        and chunks[0][1]["source_id"] == first.result["memory_id"]
    )
    other = call(ex, "query_memory", {"query": "誕生日"}, user="u-tanaka1", call_id="q1")
    assert other.result["count"] == 0
    call(ex, "delete_memory", {"memory_id": first.result["memory_id"]}, call_id="d1")
    assert store.query(f"orgs/{ORG}/memory_chunks") == []


def lived(store, eid, story, user, *, day="2026-01-26", time="18:20:00"):
    """An event episode of ``user``'s turn, stored and indexed as the memory target does."""
    from shared_lib.memory.episode_index import index_episode
    from shared_lib.memory.episodes import episode_path

    doc = {
        "id": eid,
        "type": "event_driven",
        "date": day,
        "time": time,
        "story_text": story,
        "metadata": {"tags": []},
        "user_ids": [user],
    }
    store.set(episode_path(ORG, eid), doc)
    index_episode(store, None, ORG, eid, doc, now=NOW)


def test_given_an_episode_when_memory_is_queried_then_it_comes_back_with_when_for_its_person_only(ex, store):
    # GIVEN a memory and an episode of mine, and a colleague's episode on the same topic
    save(ex, "経費精算の締めは毎月25日", 1, category="fact")
    lived(
        store,
        "e-1",
        "鈴木さんが「これ重要：経費精算は来月からクラウドへ移行する」と教えてくれたウル🐺",
        "u-suzuki",
    )
    lived(store, "e-2", "田中さんが経費精算のクラウド移行に反対してたウル。", "u-tanaka1")
    # WHEN I ask how the expense claims ended up
    out = call(ex, "query_memory", {"query": "経費精算"}, call_id="q1")
    # THEN my episode comes back with its time (JST) beside my memory, the colleague's never
    assert out.ok and out.result["count"] == 2
    (episode,) = [m for m in out.result["memories"] if "episode_id" in m]
    assert episode == {
        "episode_id": "e-1",
        "when": "2026-01-26T18:20+09:00",
        "content": "鈴木さんが「これ重要：経費精算は来月からクラウドへ移行する」と教えてくれたウル🐺",
    }
    # AND a search of one category of memories is of memories only
    facts = call(ex, "query_memory", {"query": "経費精算", "category": "fact"}, call_id="q2")
    assert [m.get("episode_id") for m in facts.result["memories"]] == [None]


def test_given_the_launch_brain_when_asked_how_a_lived_topic_turned_out_then_the_template_cites_the_date(
    ex, store
):
    from shared_lib.brain.integration import done_text
    from shared_lib.brain.legacy import propose
    from shared_lib.persona.catalogue import load_persona
    from shared_lib.tools.builtin import builtin_registry
    from shared_lib.turn.steps import ToolResult

    lived(store, "e-1", "鈴木さんから「これ重要：経費精算はクラウドへ移行する」と聞いたウル🐺", "u-suzuki")
    registry, persona = builtin_registry(), load_persona()
    for n, said in enumerate(
        [
            "経費精算の話どうなった？",
            "そういや経費のクラウドのやつ、どないなったん？",
            "経費精算の件ってその後どうなりました？",
        ]
    ):
        # WHEN the launch brain (no LLM) reads the question
        proposal = propose(said, registry=registry, persona=persona)
        (tool_call,) = proposal.tool_calls
        assert tool_call.tool_name == "query_memory", said
        out = call(ex, "query_memory", tool_call.parameters, call_id=f"q{n}")
        # THEN the fixed template answers from the episode, saying when it happened
        shown = ToolResult(tool_name="query_memory", call_index=0, ok=out.ok, result=out.result)
        text = done_text(persona, shown, registry, today=NOW.date())
        assert "1月26日（月）18時20分" in text and "クラウドへ移行" in text and "ウル" in text, text
        assert "T18:20" not in text and "episode" not in text


def test_given_a_task_or_a_request_when_it_asks_how_things_went_then_the_launch_brain_does_not_search_memory():
    from shared_lib.brain.legacy import propose
    from shared_lib.persona.catalogue import load_persona
    from shared_lib.tools.builtin import builtin_registry

    for said in [
        "田中さんのタスクどうなった？",
        "結局どうなったのか、関係者に確認をお願いしてもらえますか？",
    ]:
        proposal = propose(said, registry=builtin_registry(), persona=load_persona())
        assert [c.tool_name for c in proposal.tool_calls if c.tool_name == "query_memory"] == [], said
