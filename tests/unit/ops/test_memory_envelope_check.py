"""The memory target's compaction check decided from the envelope (issue 39): the context saw the
whole window and the turn's words and reply keep it clearly below 70 %, so the target reads
neither the conversation nor its messages; a turn that takes it past 70 % is compacted on that
turn; a window the context saw only in part, or a turn of several steps, is read as before."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

from ops_fakes import ORG, ROOM, USER, Clock, ScriptedLLM, make_runtime, send

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.context.budget import estimate_tokens
from shared_lib.context.compaction import Levels, decide, usage_of
from shared_lib.context.history import append_message, conversation_path, history_path, window_messages
from shared_lib.layers import memory
from shared_lib.turn.envelope import Turn

KEY = f"{ORG}/{ROOM}/{USER}"
CONVERSATION = conversation_path(ORG, KEY)
MESSAGES = history_path(ORG, KEY)

BUDGET = 600  # the operators' override: a fixed history budget instead of the model's window
# a morning in the demo room, as people write it
SMALL_TALK = [
    ("user", "おはようございます！今日の会議って何時からでしたっけ？"),
    ("assistant", "おはようウル🐺 今日の定例は10時からウル。資料は共有フォルダにあるウル！"),
    ("user", "ありがとう〜助かる🙏"),
    ("assistant", "どういたしましてウル🐺"),
]
WEEK = [
    ("user", "来週の出張、大阪の件ってもう決まった？新幹線の手配まだなんだけど…"),
    ("assistant", "11月30日（月）から2泊で決まっているウル。新幹線はまだ取っていないウル🐺"),
    ("user", "じゃあ朝イチののぞみで取っといてほしい。あと、ﾎﾃﾙは梅田の近くがいいな"),
    ("assistant", "わかったウル！のぞみの朝の便と、梅田近くのホテルを探すウル🐺"),
    ("user", "それと見積書、田中さんに確認してもらえた？先方からの返事が今日中に欲しいって言われてて"),
    ("assistant", "田中さんには昨日お願いしてあるウル。今日の15時までに返事をもらう約束ウル🐺"),
    ("user", "了解！もし遅れそうなら教えてね。あ、あと請求書のフォーマット変わったらしいから要チェック"),
    ("assistant", "新しい請求書のフォーマットを確認しておくウル！変わったところをまとめて送るウル🐺"),
    ("user", "よろしく。あ、今から議事録貼るね"),
]
# a pasted meeting memo: what takes the room past 70 % of its window on this turn
MEMO = (
    "【議事録メモ】11/27 営業定例\n"
    "・A社案件：見積り再提出、12月3日（木）までに田中さんが作成→部長確認\n"
    "・B社：先方担当が交代（佐藤様→山本様）。挨拶訪問を来週中に調整すること\n"
    "・展示会ブース：予算は前年比90%で確定。備品リストは鈴木が更新する\n"
    "・新しい請求書フォーマットは12月分から適用。旧フォーマットは使わない\n"
    "・次回定例は12/4 10:00〜、会議室Bにて\n"
    "↑これ覚えといて！あとで聞くかも"
)


class ReadCounter:
    """A store that counts the reads of the conversation's document and of its messages."""

    def __init__(self) -> None:
        self.inner = MemoryStore()
        self.reads: Counter[str] = Counter()

    def get(self, path: str) -> Any:
        if path == CONVERSATION:
            self.reads["document"] += 1
        return self.inner.get(path)

    def query(self, collection: str, **kw: Any) -> Any:
        if collection == MESSAGES:
            self.reads["messages"] += 1
        return self.inner.query(collection, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def room(tmp_path, lines: list[tuple[str, str]]):
    """The demo room with ``lines`` already said, a fixed history budget of ``BUDGET`` tokens."""
    config = tmp_path / "memory.json"
    config.write_text(f'{{"compaction": {{"history_token_budget": {BUDGET}}}}}', encoding="utf-8")
    env = {"CHARTER_MEMORY_CONFIG": str(config), "CHARTER_EMBEDDER": "none"}
    store, clock, llm = ReadCounter(), Clock(), ScriptedLLM()
    rt = make_runtime(llm=llm, clock=clock, store=store, env=env)

    for i, (role, text) in enumerate(lines):
        at = clock.at - timedelta(minutes=len(lines) - i)
        append_message(
            rt.store, ORG, KEY, f"old{i:02d}-0-{role[:2]}", role=role, text=text, at=at, user_id=USER
        )
    store.reads.clear()
    return rt, store, llm


def completed(rt, turn_id: str) -> Turn:
    data, attrs = next(
        (d, a) for t, d, a, _ in rt.bus.published if t == "completed" and a.get("turn_id") == turn_id
    )
    return Turn.from_message(data, attrs, rt.store)


def usage_now(rt) -> float:
    doc = rt.store.inner.get(CONVERSATION)
    levels = Levels.of(doc)
    raw = window_messages(rt.store.inner, ORG, KEY, after=levels.window_from)
    return usage_of(levels, [d for _, d in raw], BUDGET)


def test_a_short_conversation_is_not_read_again_by_the_memory_target(tmp_path):
    # GIVEN a room with four short messages (well under 70 % of its window)
    rt, store, _ = room(tmp_path, SMALL_TALK)
    # WHEN the person asks something small
    turn_id = send(rt, "今日のタスクって何があったっけ？")
    # THEN the context measured the whole window it read, as compaction measures it
    turn = completed(rt, turn_id)
    said = sum(estimate_tokens(t) for _, t in SMALL_TALK)
    assert turn.context.window_tokens == said
    # AND the conversation's messages were read once, by the context: the memory target read neither
    # the document nor the window, and the usage is indeed under the threshold
    assert store.reads == {"messages": 1}, store.reads
    assert usage_now(rt) < 0.70


def test_the_turn_that_takes_a_conversation_past_70_percent_is_compacted_on_that_turn(tmp_path):
    # GIVEN a room whose window holds nine messages (the context reads all of them), under the
    # check's margin before this turn
    rt, store, llm = room(tmp_path, WEEK)
    before = usage_now(rt)
    assert before < 0.70 - memory.ENVELOPE_MARGIN
    assert before + estimate_tokens(MEMO) / BUDGET >= 0.70  # the memo alone takes it past 70 %
    # WHEN the person pastes a meeting memo, which takes it past 70 %
    turn_id = send(rt, MEMO)
    # THEN the memory target read the conversation and compacted it on this very turn
    turn = completed(rt, turn_id)
    assert turn.context.window_tokens == sum(estimate_tokens(t) for _, t in WEEK)
    assert not memory.clearly_below(turn, rt)
    assert store.reads["document"] >= 1 and store.reads["messages"] >= 2, store.reads
    doc = rt.store.inner.get(CONVERSATION)
    # at the level its usage asks for (the memo and the reply that keeps it took it past 70 %)
    done = doc["compaction"]
    assert done["usage"] >= 0.70, done
    assert done["level"] == decide(done["usage"], memory.memory_config(rt).compaction), done
    assert any(c.purpose == "summary" for c in llm.calls)


def test_a_window_the_context_saw_only_in_part_is_read_by_the_memory_target(tmp_path):
    # GIVEN a room with twelve short messages: the context reads the newest ten for the prompt
    rt, store, _ = room(tmp_path, SMALL_TALK * 3)
    # WHEN a turn is answered
    turn_id = send(rt, "ありがと！")
    # THEN the envelope says the context did not see the whole window, and the memory target reads it
    assert completed(rt, turn_id).context.window_tokens is None
    assert store.reads["document"] == 1 and store.reads["messages"] == 2, store.reads


def test_a_turn_of_several_steps_or_an_older_envelope_is_checked_by_reading(tmp_path):
    # GIVEN the completed envelope of a small turn the envelope alone would settle
    rt, _, _ = room(tmp_path, SMALL_TALK)
    turn = completed(rt, send(rt, "了解です"))
    assert memory.clearly_below(turn, rt)
    # WHEN the same turn took a second step, or came from a context that did not measure the window
    later = turn.model_copy(update={"step": 1})
    older = turn.model_copy(update={"context": turn.context.model_copy(update={"window_tokens": None})})
    # THEN the check reads the conversation instead of deciding from the envelope
    assert not memory.clearly_below(later, rt)
    assert not memory.clearly_below(older, rt)
