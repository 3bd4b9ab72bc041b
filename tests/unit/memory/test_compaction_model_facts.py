"""The model's share of compaction's facts (seed 001 §19.7) at no extra round trip: the level-2
summary call lists the facts it read after its summary, merged with the rules' facts, each once;
an answer whose list is not the schema leaves the rules' facts as they are; the values behind the
placeholders the call read are sealed again, and a placeholder is never kept as a value."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from cryptography.fernet import Fernet, MultiFernet

from infra.fake_llm import summary as fake_summary
from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.context.compaction import Compactor, Levels, compact, usage_of
from shared_lib.context.history import append_message, conversation_path, history_path
from shared_lib.context.memory_config import CompactionConfig
from shared_lib.context.summary_facts import split_facts
from shared_lib.context.summary_prompt import system_prompt, transcript
from shared_lib.memory.fact_memory import Keeper
from shared_lib.memory.index import chunks_path
from shared_lib.ports import LLMRequest, LLMResponse
from shared_lib.privacy.sealing import destroyed, unseal

ORG, ROOM, USER = "acme", "r-keiri", "u-kobayashi"
KEY = f"{ORG}/{ROOM}/{USER}"
MONDAY = datetime(2026, 11, 23, 0, 30, tzinfo=UTC)  # 11月23日（月） 9:30 in Tokyo
CIPHER = MultiFernet([Fernet(Fernet.generate_key())])
MOBILE = "090-3321-8876"
SAID = [
    ("user", "おつかれさまです〜 月曜からバタバタですね💦"),
    ("assistant", "おつかれさまウル！今週もがんばるウル🐺"),
    ("user", "経理から連絡あって、来期の交際費はひとり5,000円が上限らしいです"),
    ("user", "じゃあ来週から経費はクラウド精算で決定で"),
    ("user", f"取引先の山本さんの携帯は{MOBILE}です"),
    ("user", "昨日の送別会たのしかったですね〜🍻"),
    ("user", "はい、そうしましょう"),
    ("assistant", "了解ウル"),
]
# what the rules keep of SAID (the model's list aside)
RULES_KEEP = "クラウド精算"
PLACEHOLDER = re.compile(r"\[[A-Z][A-Z_]*(?:_\d+)?\]")


class Summaries:
    """A summary model answering with a fixed tail after its summary; records what it was sent."""

    def __init__(self, tail: str) -> None:
        self.tail = tail
        self.requests: list[LLMRequest] = []

    def complete(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        text = "経費の話と取引先の連絡先の話をしたウル\n" + self.tail
        return LLMResponse(
            content=[{"type": "text", "text": text}], stop_reason="end_turn", model=request.model
        )


def facts_tail(*facts: tuple[str, str]) -> str:
    return "<facts>" + json.dumps([{"kind": k, "text": t} for k, t in facts], ensure_ascii=False) + "</facts>"


def chat(store: MemoryStore, cipher: MultiFernet | None) -> None:
    for n, (role, text) in enumerate(SAID):
        append_message(
            store,
            ORG,
            KEY,
            f"m{n:03d}-0-{'in' if role == 'user' else 'out'}",
            role=role,
            text=text,
            at=MONDAY + timedelta(minutes=5 * n),
            user_id=USER,
            room_id=ROOM,
            cipher=cipher,
        )


def light_window(store: MemoryStore, cipher: MultiFernet | None) -> int:
    """A window the conversation fills to 75 %: one level-2 summary call."""
    docs = [unseal(d, cipher)[0] if cipher else d for _, d in store.query(history_path(ORG, KEY))]
    return max(int(usage_of(Levels(), docs, 1) / 0.75), 1)


def compacted(tail: str, cipher: MultiFernet | None = None):
    store, llm = MemoryStore(), Summaries(tail)
    chat(store, cipher)
    c = Compactor(
        CompactionConfig(min_raw_messages=2),
        light_window(store, cipher),
        llm,
        "claude-haiku-4-5",
        keeper=Keeper(None, cipher, timedelta(days=90)),
    )
    result = compact(store, ORG, KEY, c, now=MONDAY + timedelta(hours=1))
    facts = [
        d for p, d in store.dump().items() if p.startswith(chunks_path(ORG)) and d["source_kind"] == "fact"
    ]
    return result, llm, store, facts


def test_the_summary_call_lists_what_the_rules_miss_and_each_fact_is_kept_once():
    # GIVEN a model whose summary lists the allowance (no rule word in it) and restates the decision
    tail = facts_tail(
        ("decision", "来期の交際費はひとり5,000円が上限"),
        ("decision", "来週から経費はクラウド精算で決定"),
    )
    # WHEN the conversation is compacted at 75 % of its window
    result, llm, store, facts = compacted(tail)
    # THEN one summary call was made, and it asked for the facts in the same answer
    assert result.level == "light" and result.calls == 1 and len(llm.requests) == 1
    assert "<facts>" in llm.requests[0].system[0]["text"]
    # AND the allowance the rules miss is kept, and the decision both found is kept once
    texts = [d["text"] for d in facts]
    assert [t for t in texts if "5,000円" in t or "5000円" in t], texts
    assert len([t for t in texts if RULES_KEEP in t]) == 1, texts
    assert result.detail["facts_proposed"] == 2
    # AND the summary stored holds no facts line
    summary = (store.get(conversation_path(ORG, KEY)) or {})["summary"]
    assert "経費の話" in summary and "<facts" not in summary


@pytest.mark.parametrize(
    "tail",
    [
        "<facts>交際費はひとり5,000円</facts>",  # not JSON
        facts_tail(("budget", "交際費はひとり5,000円が上限")),  # a kind the rules do not know
        '<facts>[{"kind": "decision", "text": "交際費は5,000円", "confidence": 0.9}]</facts>',  # a field too many
        '<facts>[{"kind": "decision", "text": 5000}]</facts>',  # a text that is not one
        '<facts>[{"kind": "decision", "text": "交際費はひとり5,000円が上',  # cut short by the token limit
        facts_tail(*[("decision", f"交際費の件その{i}") for i in range(21)]),  # more than a summary holds
        "",  # no list at all
    ],
)
def test_an_answer_whose_list_is_not_the_schema_keeps_the_rules_facts_as_they_are(tail):
    # GIVEN a model answering its summary with a facts line that is not the schema
    result, _, store, facts = compacted(tail)
    # THEN nothing of its list is kept, and every fact of the rules is
    texts = [d["text"] for d in facts]
    assert result.written and result.detail["facts_proposed"] == 0
    assert not [t for t in texts if "5,000円" in t or "その" in t], texts
    assert [t for t in texts if RULES_KEEP in t], texts
    # AND the summary stored is the summary alone
    summary = (store.get(conversation_path(ORG, KEY)) or {})["summary"]
    assert "経費の話" in summary and "<facts" not in summary and "kind" not in summary


def test_a_value_the_call_read_as_a_placeholder_is_kept_sealed_and_a_made_up_one_as_words():
    # GIVEN a sealed history; the model lists the mobile by the placeholder it read, and one it made up
    tail = facts_tail(("remember", "山本さんの携帯は[PHONE_1]"), ("remember", "山本さんの自宅は[PHONE_7]"))
    # WHEN the conversation is compacted with the vault's key
    result, llm, _, facts = compacted(tail, CIPHER)
    assert result.level == "light" and result.written
    # THEN the model read the placeholder, never the number
    assert "[PHONE_1]" in str(llm.requests[0].messages[0]["content"]) and MOBILE not in str(llm.requests[0])
    # AND the kept fact holds the number sealed, opened by the key, with no placeholder destroyed
    mobile = next(d for d in facts if "携帯" in d["text"] and "remember" in d["tags"])
    assert MOBILE not in json.dumps(mobile, ensure_ascii=False, default=str) and destroyed(mobile) == []
    assert MOBILE in unseal(mobile, CIPHER)[0]["text"]
    # AND the made-up placeholder is kept as the words a reply shows, never as a value
    home = next(d for d in facts if "自宅" in d["text"])
    assert "（電話番号・非表示）" in home["text"] and not PLACEHOLDER.search(unseal(home, CIPHER)[0]["text"])


def test_a_decision_the_conversation_reversed_is_not_kept_from_the_models_list_either():
    # GIVEN a model that lists the first choice of a decision the person reversed later
    said = [("user", "打ち上げは焼肉でいきましょう"), ("user", "やっぱ焼肉はなしで、お寿司にしよう")]
    tail = facts_tail(("decision", "打ち上げは焼肉でいきましょう"), ("decision", "打ち上げはお寿司"))
    store, llm = MemoryStore(), Summaries(tail)
    for n, (role, text) in enumerate([*said, *SAID[:2]]):
        append_message(store, ORG, KEY, f"m{n:03d}-0-in", role=role, text=text, at=MONDAY, user_id=USER)
    c = Compactor(
        CompactionConfig(min_raw_messages=2),
        light_window(store, None),
        llm,
        "claude-haiku-4-5",
        keeper=Keeper(None, None, timedelta(days=90)),
    )
    compact(store, ORG, KEY, c, now=MONDAY + timedelta(hours=1))
    # THEN memory holds the later choice, and not the reversed one
    texts = [
        d["text"]
        for p, d in store.dump().items()
        if p.startswith(chunks_path(ORG)) and d["source_kind"] == "fact"
    ]
    assert [t for t in texts if "お寿司" in t] and not [t for t in texts if "焼肉でいきましょう" in t], texts


def test_the_scripted_model_lists_the_facts_of_the_conversation_it_was_given_in_the_schema():
    # GIVEN the level-2 summary call compaction makes of a conversation (numbered placeholders in it)
    said = [
        {"role": "user", "text": "じゃあ来週から経費はクラウド精算で決定で", "at": MONDAY},
        {"role": "user", "text": "見積は金曜までに送ります🙏 先方は[PHONE_1]", "at": MONDAY},
        {"role": "user", "text": "会議は水曜にする？", "at": MONDAY},
        {"role": "assistant", "text": "「見積送付」のタスクを登録したウル", "at": MONDAY},
        {"role": "user", "text": "昨日のカレーうまかった😋", "at": MONDAY},
    ]
    system = system_prompt(None, "level2")
    # WHEN the local stack's scripted model answers it
    answer = fake_summary.summarise(system, transcript(said))
    summary, facts = split_facts(answer)
    # THEN its list is the schema, made of the person's lines as said, questions and chit-chat left out
    assert summary and facts is not None
    assert [(f.kind, f.text) for f in facts] == [
        ("decision", "じゃあ来週から経費はクラウド精算で決定で"),
        ("commitment", "見積は金曜までに送ります🙏 先方は[PHONE_1]"),
    ]
    # AND a summary call that does not ask for facts gets none
    assert "<facts>" not in fake_summary.summarise(
        system_prompt(None, "level3"), "これまでの要約:\n- 経費の件\n\n要約:"
    )
