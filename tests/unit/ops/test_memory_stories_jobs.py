"""The memory target's episode and tagging jobs, wired (layers/memory_stories.py): the scheduler's
POST /tasks/memory/daily_digest and /tasks/memory/tagging reach the memory layer through
memory.jobs and write one episode and one tagging run per organisation and day, however often
they run; a completed turn the person asked to remember becomes an event episode, once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ops_fakes import ORG, ROOM, USER, make_runtime, send
from test_ops_admin import client

from infra.fake_llm.port import InProcessScriptedLLM
from shared_lib.collections import collection_path
from shared_lib.context.history import append_message

NOW = datetime(2026, 11, 25, 13, 0, tzinfo=UTC)  # 22:00 in Tokyo


def talked(rt, n: int = 4) -> None:
    for i in range(n):
        append_message(
            rt.store,
            ORG,
            f"{ORG}/{ROOM}/{USER}",
            f"t{i:03d}-0-in",
            role="user",
            text=f"見積書の件、{i + 1}つ目の確認です",
            at=NOW - timedelta(hours=2) + timedelta(minutes=i),
            user_id=USER,
            room_id=ROOM,
        )


def episodes(rt) -> list[dict]:
    return [d for _, d in rt.store.query(collection_path("episodes", org=ORG))]


def test_the_digest_and_tagging_tasks_write_one_episode_and_one_run_per_organisation_and_day():
    # GIVEN an organisation that talked today, and the scripted model
    rt = make_runtime(llm=InProcessScriptedLLM(), clock=lambda: NOW)
    talked(rt)
    # WHEN the scheduler posts the daily digest twice (a retried call) and then the tagging task
    for _ in range(2):
        assert client(rt).post("/tasks/memory/daily_digest").status_code == 200
    assert client(rt).post("/tasks/memory/tagging").status_code == 200
    # THEN one digest episode of today exists, in the seed's form, and it is tagged
    digests = [e for e in episodes(rt) if e["type"] == "daily_digest"]
    assert len(digests) == 1 and digests[0]["date"] == "2026-11-25"
    assert digests[0]["story_text"] and set(digests[0]["metadata"]) >= {"mood", "topics", "importance"}
    assert digests[0]["tags"]
    runs = rt.store.query(collection_path("tagging_jobs", org=ORG))
    assert [d["status"] for _, d in runs] == ["completed"]


def test_a_turn_the_person_asks_to_remember_becomes_one_event_episode():
    rt = make_runtime(llm=InProcessScriptedLLM(), clock=lambda: datetime.now(UTC))
    turn = send(rt, "来週の会議は木曜に変更になりました。これ重要なので覚えておいて")
    told = [e for e in episodes(rt) if e["type"] == "event_driven"]
    assert len(told) == 1 and told[0]["source_turn_id"] == turn and told[0]["trigger"] == "remember"
    # AND a turn with nothing to remember keeps none
    send(rt, "今日は暑いね")
    assert len([e for e in episodes(rt) if e["type"] == "event_driven"]) == 1


def test_episodes_are_found_by_memory_search_only_by_those_who_may_read_them():
    from shared_lib.memory.search import Reader, search

    rt = make_runtime(llm=InProcessScriptedLLM(), clock=lambda: NOW)
    talked(rt)
    client(rt).post("/tasks/memory/daily_digest")
    digest = next(e for e in episodes(rt) if e["type"] == "daily_digest")
    # the digest retells everyone's day: the top level finds it, a member does not
    top = search(rt.store, rt.embedder, ORG, "見積書", reader=Reader("u-kazu", 6), kinds=["episode"])
    member = search(rt.store, rt.embedder, ORG, "見積書", reader=Reader(USER, 2), kinds=["episode"])
    assert [h.source_id for h in top] == [digest["id"]] and member == []
    # an event episode is its person's own
    turn = send(rt, "来週の会議は木曜に変更になりました。これ重要なので覚えておいて")
    told = next(e for e in episodes(rt) if e.get("source_turn_id") == turn)
    mine = search(rt.store, rt.embedder, ORG, "会議 木曜", reader=Reader(USER, 2), kinds=["episode"])
    theirs = search(rt.store, rt.embedder, ORG, "会議 木曜", reader=Reader("u-kazu", 6), kinds=["episode"])
    assert told["id"] in [h.source_id for h in mine] and told["id"] not in [h.source_id for h in theirs]


class Capturing(InProcessScriptedLLM):
    def __init__(self) -> None:
        super().__init__()
        self.bodies: list[str] = []

    def complete(self, request):
        import json

        self.bodies.append(json.dumps(request.model_dump(), ensure_ascii=False))
        return super().complete(request)


def test_an_event_episode_never_shows_the_model_a_secret_the_person_said():
    llm = Capturing()
    rt = make_runtime(llm=llm, clock=lambda: datetime.now(UTC))
    secret_phone, secret_key = "090-1234-5678", "sk-ant-api03-Zz9Yy8Xx7Ww6Vv5Uu4Tt3"
    send(rt, f"覚えておいて：私の電話は {secret_phone}、APIキーは {secret_key}")
    told = [e for e in episodes(rt) if e["type"] == "event_driven"]
    assert len(told) == 1  # the episode call happened
    assert llm.bodies and not [b for b in llm.bodies if secret_phone in b or secret_key in b]


def test_a_digest_written_by_a_run_killed_before_indexing_is_indexed_by_the_rerun():
    from shared_lib.memory.index import remove_source
    from shared_lib.memory.search import Reader, search

    rt = make_runtime(llm=InProcessScriptedLLM(), clock=lambda: NOW)
    talked(rt)
    client(rt).post("/tasks/memory/daily_digest")
    digest = next(e for e in episodes(rt) if e["type"] == "daily_digest")
    # GIVEN the episode stored but its chunks not (the process died between the two)
    assert remove_source(rt.store, ORG, "episode", digest["id"]) > 0
    assert search(rt.store, rt.embedder, ORG, "見積書", reader=Reader("u-kazu", 6), kinds=["episode"]) == []
    # WHEN the scheduler's retry runs the job again (a new job id: a new minute)
    later = make_runtime(llm=InProcessScriptedLLM(), clock=lambda: NOW + timedelta(minutes=1), store=rt.store)
    client(later).post("/tasks/memory/daily_digest")
    # THEN the same single digest is found again
    assert len([e for e in episodes(rt) if e["type"] == "daily_digest"]) == 1
    found = search(rt.store, rt.embedder, ORG, "見積書", reader=Reader("u-kazu", 6), kinds=["episode"])
    assert [h.source_id for h in found] == [digest["id"]]


def test_an_event_episode_is_recalled_days_later_by_a_question_in_other_words_citing_its_date():
    from ops_fakes import replies

    from shared_lib.dates import display_date

    class Clock:
        at = NOW

        def __call__(self):
            return self.at

    clock = Clock()
    rt = make_runtime(llm=InProcessScriptedLLM(), clock=clock)
    # GIVEN a person who said something important
    turn = send(rt, "これ重要：来月から交通費の精算は全部クラウドのシステムで申請することになりました")
    told = next(e for e in episodes(rt) if e.get("source_turn_id") == turn)
    # WHEN, three days later, they ask in other words (Kansai, 「あの件」)
    clock.at = NOW + timedelta(days=3)
    send(rt, "そういや経費のあの件、結局どないなったん？")
    # THEN the reply answers from the episode and says when it happened
    answer = replies(rt)[-1]
    day = datetime.fromisoformat(told["date"])
    assert display_date(day.date()) in answer and "クラウド" in answer and "ウル" in answer, answer
    # AND a colleague asking the same learns nothing of it
    send(rt, "経費のあの件、結局どうなったの？", user="u-tanaka")
    assert "クラウド" not in replies(rt)[-1]
