"""The Context Builder: every source, concurrently, each with a timeout; Truth order in the
rendering; a failing or slow source degrades the context instead of failing it."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from context_fakes import NOW, ORG, OTHER_ORG, USER, FaultyStore, context_input, seed_org

from shared_lib.context import (
    ContextBuilder,
    ContextConfig,
    record,
    render_recorded,
    summary_line,
)
from shared_lib.context.render import SOURCE_LABELS
from shared_lib.context.sources import SourceSpec, default_sources
from shared_lib.turn.callctx import turn_budget
from shared_lib.turn.envelope import ContextSection

ALL_SOURCES = [s.name for s in default_sources()]


def build(
    store, text="経費精算のルールを教えて", *, config=None, sources=None, org=ORG, user=USER, required=()
):
    return ContextBuilder(config or ContextConfig(token_budget=5000), sources).build(
        context_input(store, text, org=org, user=user, user_name="スズキ"), required=required
    )


@pytest.fixture
def store(memory_store):
    seed_org(memory_store)
    seed_org(memory_store, OTHER_ORG, marker="GLOBEX")
    return memory_store


def test_given_an_organisation_with_data_then_every_source_contributes(store):
    built = build(store)
    assert {n: r.status for n, r in built.records.items()} == dict.fromkeys(ALL_SOURCES, "ok")
    v = built.values
    assert v["user"]["name"] == "鈴木一郎" and [p["name"] for p in v["persons"]] == ["田中太郎", "山田次郎"]
    assert [m["text"] for m in v["recent_messages"]] == [f"過去の発言{i}" for i in range(2, 12)]  # last 10
    assert v["summary"] == "先週は見積の話をした" and v["company_values"] == "誠実・挑戦・感謝"
    assert [t["content"] for t in v["teachings"]] == ["お客様第一"]  # inactive teachings are not used
    assert [t["body"] for t in v["tasks"]] == ["見積書を作成"] and [g["title"] for g in v["goals"]] == [
        "売上目標"
    ]
    assert v["preferences"] == [{"subject": "コーヒー", "content": "ブラック派"}]
    assert [k["knowledge_id"] for k in v["knowledge"]] == ["k1"]
    assert built.degraded == [] and "GLOBEX" not in built.rendered


def test_given_a_rendering_then_sections_come_in_truth_order_with_their_sources_named(store):
    rendered = build(store).rendered
    order = [
        "【現在のセッション】",
        "【ユーザー情報】",
        "【CEO教え（最優先で従う）】",
        "【会社の価値観（MVV）】",
        "【社内の人物】",
        "【関連タスク】",
        "【アクティブな目標】",
        "【直近の会話】",
        "【会話の要約】",
        "【ユーザーの嗜好】",
        "【関連する会社知識】",
        "【現在日時】",
    ]
    positions = [rendered.index(h) for h in order]
    assert positions == sorted(positions)
    assert (
        "【関連タスク】（出典: DB（正規データ））" in rendered
        and "【直近の会話】（出典: 会話の記憶）" in rendered
    )
    assert "2026年1月28日（水）12時（日本時間）" in rendered


def test_given_a_message_that_asks_nothing_then_knowledge_is_not_fetched(store):
    built = build(store, "こんにちは")
    assert built.records["knowledge"].status == "skipped" and "knowledge" not in built.degraded


@pytest.mark.parametrize("source", ALL_SOURCES)
def test_given_one_source_failing_then_the_context_is_built_without_it_and_says_so(store, source):
    built = build(FaultyStore(store, source))
    assert source in built.degraded and built.records[source].status == "failed"
    assert "StoreUnavailable" in built.records[source].error
    # named as its section is titled: the model never reads, nor repeats, a source's internal name
    notice = f"取得できなかった情報: {'、'.join(SOURCE_LABELS[name] for name in built.degraded)}。"
    assert notice in built.rendered and source not in built.rendered.split("【注意】")[1]
    assert built.records["session"].status == "ok" or source == "session"


def test_given_a_source_slower_than_its_timeout_then_it_is_recorded_as_timed_out(store):
    release = threading.Event()

    def stuck(_request):
        release.wait(30)
        return ["late"]

    sources = [*default_sources(), SourceSpec("slow", 3, 4, stuck)]
    try:
        built = build(
            store, config=ContextConfig(token_budget=5000, source_timeout_seconds=1.0), sources=sources
        )
    finally:
        release.set()
    assert built.records["slow"].status == "timeout" and built.degraded == ["slow"]
    assert built.records["teachings"].status == "ok"


DEADLINE = 0.1  # the sources' deadline of the tests below; the slow source answers after three


def slow(value):
    """A source as a busy machine serves it: it answers, three deadlines late."""

    def fetch(_request):
        threading.Event().wait(3 * DEADLINE)
        return value

    return fetch


SLOW_SESSION = [
    *(s for s in default_sources() if s.name != "session"),
    SourceSpec("session", 1, 2, slow({"local_only": False})),
]


def test_given_a_needed_source_slower_than_the_deadline_then_it_is_waited_for_within_the_turns_budget(store):
    # GIVEN the session (which a tool call needs) answering after the sources' deadline, and a
    # turn with 45 s of its processing budget left
    with turn_budget(NOW + timedelta(seconds=45), NOW):
        built = build(
            store,
            config=ContextConfig(token_budget=5000, source_timeout_seconds=DEADLINE),
            sources=SLOW_SESSION,
            required=("session", "user", "persons"),
        )
    # THEN it is read, not degraded: a slow store is not a store that is down
    assert built.records["session"].status == "ok" and built.values["session"] == {"local_only": False}
    assert "session" not in built.degraded


@pytest.mark.parametrize(
    ("required", "budget"),
    [((), 45.0), (("session",), None), (("session",), DEADLINE / 10)],
    ids=["not-needed", "no-budget", "budget-shorter-than-the-source"],
)
def test_given_a_slow_source_not_needed_or_past_the_budget_then_the_deadline_stands(store, required, budget):
    deadline = None if budget is None else NOW + timedelta(seconds=budget)
    with turn_budget(deadline, NOW):
        built = build(
            store,
            config=ContextConfig(token_budget=5000, source_timeout_seconds=DEADLINE),
            sources=SLOW_SESSION,
            required=required,
        )
    assert built.records["session"].status == "timeout" and built.degraded == ["session"]


def test_given_a_built_context_when_recorded_then_the_turn_holds_a_summary_of_what_was_shown(store):
    built = build(store)
    section = ContextSection()
    record(section, built, user_id=USER, user_name="スズキ")
    assert section.user.name == "鈴木一郎" and section.user.level == 2
    assert len(section.recent_messages) == 10 and section.recent_messages[-1]["text"] == "過去の発言11"
    assert section.teachings == [
        {"content": "お客様第一", "priority": 10},
        {"kind": "company_values", "content": "誠実・挑戦・感謝"},
    ]
    assert section.preferences == {"コーヒー": "ブラック派"} and section.knowledge[0]["knowledge_id"] == "k1"
    assert section.rendered == built.rendered and section.token_estimate == built.fitted.tokens
    assert summary_line(built) == f"sources=all_ok dropped=- tokens={built.fitted.tokens}"


def test_given_a_recorded_context_when_rendered_again_then_it_has_the_builders_sections(store):
    # GIVEN a built context recorded on a turn
    built = build(store)
    section = ContextSection()
    record(section, built, user_id=USER, user_name="スズキ")
    # WHEN the record is rendered again (a turn that carries no rendering)
    again = render_recorded(section, now=NOW, user_id=USER, user_name="スズキ")

    # THEN the same renderer drew it: the same sections with the same sources, in the same order
    def titles(text: str) -> list[str]:
        return [line for line in text.splitlines() if line.startswith("【")]

    assert len(titles(built.rendered)) == 12 and titles(again) == titles(built.rendered)
    assert "鈴木一郎" in again and "お客様第一" in again and "ブラック派" in again
    # AND neither rendering shows the user's permission level (constitution §4.4.2)
    assert section.user.level == 2 and "レベル" not in built.rendered and "レベル" not in again


def test_given_a_small_budget_when_recorded_then_only_what_was_kept_is_recorded(store):
    built = build(store, config=ContextConfig(token_budget=300))
    section = ContextSection()
    record(section, built, user_id=USER, user_name=None)
    assert built.fitted.dropped["knowledge"] == 1 and section.knowledge == []
    assert section.summary == "" and "dropped=knowledge:1,summary:1" in summary_line(built)


def test_given_the_user_source_failing_when_recorded_then_the_inbound_name_stands_in(store):
    built = build(FaultyStore(store, "user"))
    section = ContextSection()
    record(section, built, user_id=USER, user_name="スズキ")
    assert section.user.user_id == USER and section.user.name == "スズキ"
    assert "user" in section.degraded


def test_given_another_organisation_then_its_context_holds_only_its_own_data(store):
    v = build(store, org=OTHER_ORG).values
    texts = (
        [m["text"] for m in v["recent_messages"]]
        + [t["body"] for t in v["tasks"]]
        + [g["title"] for g in v["goals"]]
        + [t["content"] for t in v["teachings"]]
        + [k["title"] for k in v["knowledge"]]
        + [p["content"] for p in v["preferences"]]
        + [v["summary"], v["company_values"]]
    )
    assert len(texts) == 17 and all(t.endswith("GLOBEX") for t in texts)


class BatchStore:
    """A store whose batched read (``get_many``) fails, or answers only after ``delay``."""

    def __init__(self, inner, *, fail=False, delay=0.0):
        self.inner, self.fail, self.delay, self.batches = inner, fail, delay, 0

    def get_many(self, paths):
        self.batches += 1
        if self.delay:
            threading.Event().wait(self.delay)
        if self.fail:
            from shared_lib.errors import StoreUnavailable

            raise StoreUnavailable("injected: the batch is down")
        return self.inner.get_many(paths)

    def __getattr__(self, name):
        return getattr(self.inner, name)


KNOWN = {s.name for s in default_sources() if s.known}


def ran_in(monkeypatch) -> dict[str, str]:
    """The thread each source ran in, by source name."""
    threads: dict[str, str] = {}
    timed = ContextBuilder._timed

    def recording(spec, request):
        threads[spec.name] = threading.current_thread().name
        return timed(spec, request)

    monkeypatch.setattr(ContextBuilder, "_timed", staticmethod(recording))
    return threads


def test_given_the_batch_held_then_the_sources_that_read_only_it_run_in_the_builders_thread(
    store, monkeypatch
):
    threads = ran_in(monkeypatch)
    batched = BatchStore(store)
    built = build(batched, "田中さんに明日の会議の件、伝えてもらえますか？🙇")
    # THEN one batch, every source answered, and the batch's readers never waited for a thread
    assert batched.batches == 1 and built.degraded == []
    assert {"session", "user", "summary", "company_values", "agent_state", "persona_ext"} == KNOWN
    assert {n for n, t in threads.items() if t == threading.current_thread().name} == KNOWN
    assert all(t.startswith("context") for n, t in threads.items() if n not in KNOWN)
    assert built.values["user"]["name"] == "鈴木一郎" and built.values["summary"] == "先週は見積の話をした"


def test_given_the_batch_failing_then_its_readers_read_each_document_in_a_thread(store, monkeypatch):
    threads = ran_in(monkeypatch)
    built = build(BatchStore(store, fail=True), "こんにちは")
    # THEN nothing is lost: each reads its own document, in a source thread, within the timeout
    assert built.degraded == [] and built.values["user"]["name"] == "鈴木一郎"
    assert all(threads[n].startswith("context") for n in KNOWN)


def test_given_the_batch_later_than_the_sources_deadline_then_the_build_does_not_wait_past_it(store):
    cfg = ContextConfig(token_budget=5000, source_timeout_seconds=DEADLINE)
    built = build(BatchStore(store, delay=30 * DEADLINE), "こんにちは", config=cfg)
    # THEN the batch's readers are late like any slow source, and say so
    assert {n for n in KNOWN if built.records[n].status == "timeout"} == KNOWN
    assert "user" in built.degraded
