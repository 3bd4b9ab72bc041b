"""Compaction keeps what leaves the window in long-term memory first (seed 001 §19.7): a week of a
team's chat pushed past 95 %, every decision of the cut part found again by search, once, for
the conversation's person only; the summaries an emergency cut drops kept too."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory_fakes import NgramEmbedder

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.context.compaction import Compactor, Levels, compact
from shared_lib.context.history import append_message, conversation_path
from shared_lib.context.memory_config import CompactionConfig
from shared_lib.errors import LLMError
from shared_lib.memory.fact_memory import Keeper
from shared_lib.memory.index import chunks_path
from shared_lib.memory.search import Reader, search
from shared_lib.ports import LLMRequest, LLMResponse

ORG, USER, ROOM = "acme", "u-suzuki", "r-team"
KEY = f"{ORG}/{ROOM}/{USER}"
MONDAY = datetime(2025, 11, 24, 0, 30, tzinfo=UTC)  # 11月24日（月） 9:30 JST
CFG = CompactionConfig(min_raw_messages=4)
# a week of the team's chat as the history keeps it (masked), with the decisions marked
WEEK = [
    ("user", "おはようございます☀️ 今週もよろしくです", None),
    ("assistant", "おはようウル！今週もがんばるウル🐺", None),
    ("user", "じゃあ来週から経費はクラウド精算で決定で", "クラウド精算"),
    ("assistant", "了解ウル、みんなに伝えておくウル", None),
    ("user", "締切は12/5（金）厳守でお願いします", "12/5"),
    ("user", "あ、先方の連絡先は [PHONE] です", None),
    ("user", "今日あっついなー、エアコン効いてない？", None),
    ("user", "打ち上げは12/19（金）の19時から、場所は駅前の焼肉屋でどう？", None),
    ("user", "それで決定で！👍", "焼肉屋"),
    ("user", "議事録のフォーマットはNotionに統一することになりました", "Notion"),
    ("user", "Slackの通知、夜はやめてほしい🙏", None),
    ("user", "来月から在宅は週２で決まりや", "在宅"),
    ("assistant", "「見積書の送付」のタスクを田中さんに登録したウル", None),
    ("user", "ありがと〜", None),
]
# what an emergency cut takes out of the window: all but the newest ``min_raw_messages``
CUT_DECISIONS = [marker for _, _, marker in WEEK[: len(WEEK) - CFG.min_raw_messages] if marker]


class NoLLM:
    def complete(self, request: LLMRequest) -> LLMResponse:
        raise LLMError("an emergency cut must not call the LLM")


def chat(store: MemoryStore, lines=WEEK, *, start: int = 0) -> None:
    for n, (role, text, _) in enumerate(lines, start):
        append_message(
            store,
            ORG,
            KEY,
            f"m{n:04d}-0-{'in' if role == 'user' else 'out'}",
            role=role,
            text=text,
            at=MONDAY + timedelta(hours=8 * n),
            user_id=USER,
            room_id=ROOM,
        )


def compactor(budget: int, embedder=None) -> Compactor:
    keeper = Keeper(embedder, None, timedelta(days=90))
    return Compactor(CFG, budget, NoLLM(), "claude-haiku-4-5", carried=budget // 2, keeper=keeper)


def fact_chunks(store: MemoryStore) -> dict[str, dict]:
    return {
        p: d for p, d in store.dump().items() if p.startswith(chunks_path(ORG)) and d["source_kind"] == "fact"
    }


def test_a_week_pushed_past_95_percent_keeps_every_decision_of_the_cut_part_in_memory():
    # GIVEN a week of the team's chat, the window already half carried by the system prompt
    store, embedder = MemoryStore(), NgramEmbedder()
    chat(store)
    c = compactor(budget=400, embedder=embedder)
    # WHEN the memory target compacts it: past 95 %, the emergency cut, no LLM
    result = compact(store, ORG, KEY, c, now=MONDAY + timedelta(days=5))
    assert (
        result.level == "emergency"
        and result.written
        and result.detail["facts_written"] >= len(CUT_DECISIONS)
    )
    # THEN every decision of the cut part is found again by the person's search
    reader = Reader(USER, 2)
    assert len(CUT_DECISIONS) == 4
    for marker in CUT_DECISIONS:
        hits = search(store, embedder, ORG, marker, reader=reader, kinds=["fact"])
        assert hits and marker in hits[0].text, (marker, [h.text for h in hits])
    # AND a fact says why it was kept, when it was said and where it came from
    chunk = next(d for d in fact_chunks(store).values() if "クラウド精算" in d["text"])
    assert chunk["text"].startswith("決定事項（11月25日（火）の会話）: ")
    assert chunk["user_id"] == USER and chunk["origin"]["from_seq"] and chunk["expires_at"]
    # AND no placeholder stands as a value: the history's masked number reads as words
    assert not [d for d in fact_chunks(store).values() if "[PHONE]" in d["text"]]
    # AND small talk is not kept
    assert not [d for d in fact_chunks(store).values() if "エアコン" in d["text"]]


def test_nobody_else_reads_the_facts_of_a_persons_conversation():
    store = MemoryStore()
    chat(store)
    compact(store, ORG, KEY, compactor(budget=400), now=MONDAY + timedelta(days=5))
    assert search(store, None, ORG, "クラウド精算", reader=Reader("u-yamada", 6)) == []
    assert search(store, None, ORG, "クラウド精算", reader=Reader(USER, 2))


def test_compacting_again_or_saying_a_decision_again_writes_no_second_fact():
    # GIVEN a conversation compacted once
    store = MemoryStore()
    chat(store)
    first = compact(store, ORG, KEY, compactor(budget=400), now=MONDAY + timedelta(days=5))
    # WHEN the same decision is said again, typed differently, and the conversation is cut again
    retyped = ("user", "じゃあ 来週から 経費は ｸﾗｳﾄﾞ精算で決定で！！", None)
    chat(store, [retyped, *WEEK[:1] * 30], start=len(WEEK))
    again = compact(store, ORG, KEY, compactor(budget=400), now=MONDAY + timedelta(days=6))
    # THEN the decision is kept once; only what newly left the window was written
    assert again.detail["facts_existing"] == 1
    assert len([d for d in fact_chunks(store).values() if "精算" in d["text"]]) == 1
    kept = fact_chunks(store)
    # AND a redelivered compaction that reads the old window again writes nothing
    doc = store.get(conversation_path(ORG, KEY)) or {}
    store.set(conversation_path(ORG, KEY), {**doc, "window_from": ""}, merge=True)
    redelivered = compact(store, ORG, KEY, compactor(budget=400), now=MONDAY + timedelta(days=6))
    assert first.detail["facts_written"] and redelivered.detail["facts_written"] == 0
    assert redelivered.detail["facts_existing"] >= len(kept) and fact_chunks(store) == kept


def test_an_emergency_cut_keeps_the_summaries_it_drops():
    # GIVEN a conversation whose level-2 chunks and level 3 already hold summaries of decisions
    store = MemoryStore()
    chat(store, WEEK[:6])
    levels = Levels(
        level3="A社の案件はRustで実装すると決めたウル",
        level2=tuple(
            {
                "summary": f"第{i}週の定例で、問い合わせ窓口を{name}に一本化すると決めたウル",
                "from_seq": f"a{i}",
                "to_seq": f"b{i}",
            }
            for i, name in enumerate(("佐藤さん", "高橋さん", "伊藤さん"))
        ),
    )
    store.set(
        conversation_path(ORG, KEY),
        {"summary_levels": {"level3": levels.level3, "level2": list(levels.level2)}},
        merge=True,
    )
    # WHEN it is cut past 95 % (the summaries alone fill the window)
    result = compact(store, ORG, KEY, compactor(budget=120), now=MONDAY + timedelta(days=5))
    # THEN what the cut dropped is in memory
    assert result.level == "emergency" and result.detail["facts_written"]
    texts = " ".join(d["text"] for d in fact_chunks(store).values())
    dropped = 3 - len((store.get(conversation_path(ORG, KEY)) or {})["summary_levels"]["level2"])
    assert dropped and all(n in texts for n in ("佐藤さん", "高橋さん", "伊藤さん")[:dropped])
    assert "会話の要約" in texts


def test_with_auto_save_off_nothing_is_kept():
    store = MemoryStore()
    chat(store)
    c = compactor(budget=400)
    off = Compactor(
        CompactionConfig(min_raw_messages=4, auto_save_to_memory=False),
        c.budget,
        c.llm,
        c.model,
        carried=c.carried,
        keeper=c.keeper,
    )
    assert compact(store, ORG, KEY, off, now=MONDAY).written and fact_chunks(store) == {}
