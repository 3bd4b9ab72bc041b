"""Issue 36 (sealed, not destroyed) where a conversation is kept: what a person said is stored in
the history masked with its values sealed under the vault's key; compaction's summaries, the facts
it keeps and the daily digest keep those values sealed (the model reads numbered placeholders,
never a value); the memory search tool gives a kept fact back in clear to its own person only,
never to a room mate; and ``charter data purge`` takes every source of the person with them."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

from cryptography.fernet import Fernet, MultiFernet
from episode_fakes import PEOPLE, scripted, story
from memory_fakes import NgramEmbedder

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.cli.data import purge
from shared_lib.context.compaction import Compactor, Levels, compact, usage_of
from shared_lib.context.history import append_message, conversation_path, history_path, recent_messages
from shared_lib.context.memory_config import CompactionConfig
from shared_lib.dates.model import JST
from shared_lib.memory.episode_index import index_episode
from shared_lib.memory.episodes import daily_digest
from shared_lib.memory.fact_memory import Keeper
from shared_lib.memory.index import chunks_path, source_path
from shared_lib.persona.catalogue import load_persona
from shared_lib.ports import LLMRequest, LLMResponse
from shared_lib.privacy.sealing import SEALED_FIELD, destroyed, masked, unseal
from shared_lib.privacy.text_fold import fold
from shared_lib.tools.handlers.memory import QueryMemoryParams, query_memory, search_episodes
from shared_lib.tools.registry import ToolContext

ORG, ROOM = "acme", "r-eigyo"  # a group room: everyone's conversation in it is their own
SUZUKI, TANAKA = "u-suzuki", "u-tanaka"
KEY = f"{ORG}/{ROOM}/{SUZUKI}"
MONDAY = datetime(2026, 11, 23, 0, 30, tzinfo=UTC)  # 11月23日（月） 9:30 in Tokyo
CIPHER = MultiFernet([Fernet(Fernet.generate_key())])
MOBILE, MAIL = "０９０－４４１２－７７０３", "k.sato@sato-kogyo.co.jp"
SAID = [
    ("user", f"覚えておいて：佐藤工業の佐藤さんの携帯は{MOBILE}やで📱"),
    ("assistant", "佐藤さんの携帯、覚えたウル🐺"),
    ("user", f"見積の送り先は {MAIL} でお願いします！"),
    ("assistant", "了解ウル、送り先はそのアドレスにするウル"),
    ("user", "納期は12/4（木）までに決定で"),
    ("assistant", "12月4日（木）で進めるウル"),
    ("user", "ありがとー助かる"),
    ("assistant", "どういたしましてウル🐺"),
]
PLACEHOLDER = re.compile(r"\[[A-Z][A-Z_]*(?:_\d+)?\]")


def digits(text: str) -> str:
    """The value as it reads whatever the width and separators it was typed with."""
    return re.sub(r"(?<=\d)[\s\-－]+(?=\d)", "", fold(text).text).lower()


def raw_values_in(doc: dict) -> set[str]:
    seen = digits(json.dumps(masked(doc), ensure_ascii=False, default=str))
    return {v for v in (MOBILE, MAIL) if digits(v) in seen}


class EchoSummaries:
    """A summary model that keeps every placeholder it was given (as a good summary does) and
    records what it was sent."""

    def __init__(self) -> None:
        self.requests: list[LLMRequest] = []

    def complete(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        kept = " ".join(dict.fromkeys(PLACEHOLDER.findall(str(request.messages[0]["content"]))))
        text = f"佐藤工業の件。連絡先 {kept}、納期は12/4（木）に決定ウル"
        return LLMResponse(
            content=[{"type": "text", "text": text}], stop_reason="end_turn", model=request.model
        )


def chat(store: MemoryStore, lines=SAID, *, user: str = SUZUKI, cipher: MultiFernet | None = CIPHER) -> None:
    key = f"{ORG}/{ROOM}/{user}"
    for n, (role, text) in enumerate(lines):
        append_message(
            store,
            ORG,
            key,
            f"m{n:03d}-0-{'in' if role == 'user' else 'out'}",
            role=role,
            text=text,
            at=MONDAY + timedelta(minutes=5 * n),
            user_id=user,
            room_id=ROOM,
            cipher=cipher,
        )


def window_for(store: MemoryStore, level: str, key: str = KEY) -> int:
    docs = [d for _, d in store.query(history_path(ORG, key))]
    tokens = usage_of(Levels(), [unseal(d, CIPHER)[0] for d in docs], 1)
    share = {"light": 0.75, "aggressive": 0.9, "emergency": 1.2}[level]
    return max(int(tokens / share), 1)


def keeping(budget: int, llm=None, *, embedder=None, cipher: MultiFernet | None = CIPHER) -> Compactor:
    return Compactor(
        CompactionConfig(min_raw_messages=2),
        budget,
        llm,
        "claude-haiku-4-5",
        keeper=Keeper(embedder, cipher, timedelta(days=90)),
    )


def ctx(store: MemoryStore, user: str, embedder=None) -> ToolContext:
    return ToolContext(
        store=store,
        org_id=ORG,
        user_id=user,
        room_id=ROOM,
        turn_id="t-ask-0-0",
        now=MONDAY + timedelta(days=3),
        embedder=embedder,
        cipher=CIPHER,
    )


def test_a_message_with_a_phone_number_is_kept_sealed_in_the_history_not_destroyed():
    # GIVEN a person telling the assistant a colleague's mobile, typed full-width
    store = MemoryStore()
    # WHEN it is appended to the history with the vault's key
    chat(store, SAID[:1])
    [(_, doc)] = store.query(history_path(ORG, KEY))
    # THEN the stored text holds no value in clear, and no placeholder with nothing behind it
    assert raw_values_in(doc) == set() and "[PHONE]" in doc["text"]
    assert doc[SEALED_FIELD] and destroyed(doc) == []
    # AND the key opens it as it was typed
    assert MOBILE in unseal(doc, CIPHER)[0]["text"]
    # AND what the context reads of it (for the model) is the placeholder
    assert [m["text"] for m in recent_messages(store, ORG, KEY, 5)] == [doc["text"]]


def test_a_summary_keeps_the_values_sealed_and_the_model_reads_only_numbered_placeholders():
    # GIVEN a conversation holding a mobile number and an address, at 70-85 % of its window
    store, llm = MemoryStore(), EchoSummaries()
    chat(store)
    budget = window_for(store, "light")
    # WHEN compaction summarises its oldest messages
    result = compact(store, ORG, KEY, keeping(budget, llm), now=MONDAY + timedelta(hours=1))
    assert result.level == "light" and result.written
    # THEN the model read numbered placeholders, never a value
    sent = str(llm.requests[0].messages[0]["content"])
    assert "[PHONE_1]" in sent and "[EMAIL_1]" in sent
    assert digits(MOBILE) not in digits(sent) and MAIL not in sent
    # AND the conversation document keeps the summary masked, its values sealed, none destroyed
    doc = store.get(conversation_path(ORG, KEY)) or {}
    assert raw_values_in(doc) == set() and "[PHONE]" in doc["summary"] and destroyed(doc) == []
    opened = unseal(doc, CIPHER)[0]
    assert MOBILE in opened["summary"] and MAIL in opened["summary"]
    assert MOBILE in opened["summary_levels"]["level2"][0]["summary"]


def test_folding_summaries_into_the_key_points_keeps_their_values_and_leaves_no_stale_seal():
    # GIVEN a conversation summarised once (a level-2 chunk holding the number and the address)
    store, llm = MemoryStore(), EchoSummaries()
    chat(store)
    compact(store, ORG, KEY, keeping(window_for(store, "light"), llm), now=MONDAY + timedelta(hours=1))
    # WHEN more is said and the usage reaches 85-95 %: the chunks fold into level 3
    more = [("user", "来週の打ち合わせは水曜の午後にしよか"), ("assistant", "水曜の午後で押さえたウル")] * 3
    chat(store, more, user=SUZUKI)
    doc = store.get(conversation_path(ORG, KEY)) or {}
    window = [d for _, d in store.query(history_path(ORG, KEY)) if d["seq"] > doc["window_from"]]
    levels = Levels.of(unseal(doc, CIPHER)[0])
    tokens = usage_of(levels, [unseal(d, CIPHER)[0] for d in window], 1)
    result = compact(store, ORG, KEY, keeping(int(tokens / 0.9), llm), now=MONDAY + timedelta(hours=2))
    assert result.level == "aggressive" and result.written
    # THEN level 3 holds the values, sealed; every sealed entry stands for a placeholder still there
    doc = store.get(conversation_path(ORG, KEY)) or {}
    opened = unseal(doc, CIPHER)[0]
    assert MOBILE in opened["summary_levels"]["level3"] and raw_values_in(doc) == set()
    assert destroyed(doc) == []
    for path, entries in doc[SEALED_FIELD].items():
        text = doc
        for part in path.split("/"):
            text = text[int(part)] if isinstance(text, list) else text[part]
        assert len(PLACEHOLDER.findall(str(text))) == len(entries), path


def test_a_fact_cut_from_the_window_is_sealed_and_read_in_clear_by_its_person_only():
    # GIVEN Suzuki's conversation in the group room pushed past 95 %, and Tanaka in the same room
    store, embedder = MemoryStore(), NgramEmbedder()
    for user, name in PEOPLE.items():
        store.set(f"orgs/{ORG}/users/{user}", {"name": name, "level": 2})
    chat(store)
    # WHEN the emergency cut keeps the facts of what leaves the window
    result = compact(
        store,
        ORG,
        KEY,
        keeping(window_for(store, "emergency"), embedder=embedder),
        now=MONDAY + timedelta(hours=1),
    )
    assert result.level == "emergency" and result.detail["facts_written"] >= 2
    # THEN the kept facts hold no value in clear and no placeholder without its sealed value
    facts = {
        p: d for p, d in store.dump().items() if p.startswith(chunks_path(ORG)) and d["source_kind"] == "fact"
    }
    assert facts and all(raw_values_in(d) == set() and destroyed(d) == [] for d in facts.values())
    assert all(d["user_id"] == SUZUKI for d in facts.values())
    # AND Suzuki asking the memory search gets the number back in clear, saying when it was said
    mine = query_memory(QueryMemoryParams(query="佐藤さんの携帯"), ctx(store, SUZUKI, embedder), None)
    fact = next(m for m in mine["memories"] if "fact_id" in m)
    assert MOBILE in fact["content"] and MOBILE in mine["_revealed"]
    assert datetime.fromisoformat(fact["when"]).astimezone(JST).date() == MONDAY.astimezone(JST).date()
    # AND Tanaka, a member of the same room, gets none of it, by the tool or the context's source
    theirs = query_memory(QueryMemoryParams(query="佐藤さんの携帯"), ctx(store, TANAKA, embedder), None)
    assert not [m for m in theirs["memories"] if "fact_id" in m] and "_revealed" not in theirs
    assert search_episodes(store, ORG, "佐藤さんの携帯", 5, embedder=embedder, user_id=TANAKA) == []
    # AND the context's source gives Suzuki the fact masked (what the model reads)
    recalled = search_episodes(store, ORG, "佐藤さんの携帯", 5, embedder=embedder, user_id=SUZUKI)
    assert recalled and all(digits(MOBILE) not in digits(r["content"]) for r in recalled)


def test_without_the_key_compaction_keeps_masked_text_and_no_placeholder_as_a_value():
    # GIVEN a history stored without a key (masked only), cut past 95 %
    store = MemoryStore()
    chat(store, cipher=None)
    compact(
        store, ORG, KEY, keeping(window_for(store, "emergency"), cipher=None), now=MONDAY + timedelta(hours=1)
    )
    # THEN a fact reads the lost number as words, never as a placeholder standing for it
    facts = [
        d for p, d in store.dump().items() if p.startswith(chunks_path(ORG)) and d["source_kind"] == "fact"
    ]
    assert facts and not [d for d in facts if PLACEHOLDER.search(d["text"])]
    assert any("（電話番号・非表示）" in d["text"] for d in facts)


def test_the_daily_digest_seals_what_the_days_messages_sealed():
    # GIVEN a day on which Suzuki gave a number and an address (sealed in the history)
    store = MemoryStore()
    for user, name in PEOPLE.items():
        store.set(f"orgs/{ORG}/users/{user}", {"name": name, "level": 2})
    chat(store)
    chat(store, [("user", "午後の会議、15時からに変更で"), ("assistant", "15時に変更したウル")], user=TANAKA)
    llm = scripted(
        story("鈴木さんが佐藤工業の佐藤さんの携帯[PHONE_1]と見積の送り先[EMAIL_1]を教えてくれたウル🐺")
    )
    # WHEN the day is told as a digest with the vault's key
    out = daily_digest(
        store,
        llm,
        load_persona(),
        ORG,
        MONDAY.astimezone(JST).date(),
        MONDAY + timedelta(days=1),
        "summary-model",
        retention=timedelta(days=90),
        cipher=CIPHER,
    )
    assert out.status == "written"
    # THEN the model read the values numbered, never in clear
    sent = str(llm.requests[0].messages[0]["content"])
    assert "[PHONE_1]" in sent and digits(MOBILE) not in digits(sent) and MAIL not in sent
    # AND the stored digest holds them sealed, none destroyed, none in clear
    [(_, doc)] = store.query(f"orgs/{ORG}/episodes")
    assert raw_values_in(doc) == set() and destroyed(doc) == [] and doc[SEALED_FIELD]
    assert MOBILE in unseal(doc, CIPHER)[0]["story_text"]


def test_a_purge_removes_every_indexed_source_of_the_person_facts_and_digests_included():
    # GIVEN Suzuki's and Tanaka's conversations cut past 95 % (facts kept for each) and a digest
    # of a day both spoke on, indexed
    store = MemoryStore()
    chat(store)
    chat(store, [(r, t.replace("佐藤", "山本")) for r, t in SAID], user=TANAKA)
    for user in (SUZUKI, TANAKA):
        key = f"{ORG}/{ROOM}/{user}"
        compact(
            store, ORG, key, keeping(window_for(store, "emergency", key)), now=MONDAY + timedelta(hours=1)
        )
    digest = {"type": "daily_digest", "date": "2026-11-23", "time": "23:00:00", "user_ids": [SUZUKI, TANAKA]}
    digest["story_text"] = "今日は佐藤工業と山本工業の見積の話だったウル"
    store.set(f"orgs/{ORG}/episodes/e-day", digest)
    index_episode(store, None, ORG, "e-day", digest, now=MONDAY + timedelta(days=1))

    def sources_of(user: str) -> list[str]:
        """The manifests of ``user``'s chunks."""
        chunks = {
            p.rsplit("/", 1)[1]: d for p, d in store.dump().items() if p.startswith(chunks_path(ORG) + "/")
        }
        return [
            p
            for p, d in store.dump().items()
            if "/memory_sources/" in p
            and any(chunks.get(c, {}).get("user_id") == user for c in d["chunk_ids"])
        ]

    tanaka_facts = [
        d for d in store.dump().values() if d.get("source_kind") == "fact" and d.get("user_id") == TANAKA
    ]
    assert sources_of(SUZUKI) and tanaka_facts
    # WHEN Suzuki is purged
    counts = purge(store, ORG, SUZUKI)
    # THEN no manifest, chunk or sealed value of theirs is left, nor the digest's chunks
    left = store.dump()
    assert not [d for d in left.values() if d.get("user_id") == SUZUKI]
    assert left.get(source_path(ORG, "episode", "e-day")) is None
    assert not [d for d in left.values() if d.get("source_id") == "e-day"]
    assert counts["memory_sources"] >= 2
    # AND Tanaka's facts, manifests and the statistics counting them stay
    assert sources_of(SUZUKI) == [] and sources_of(TANAKA)
    assert [p for p, d in left.items() if "/memory_sources/" in p] == sources_of(TANAKA)
    totals = left[f"orgs/{ORG}/memory_stats/totals"]
    assert totals["chunks"] == len([p for p in left if p.startswith(chunks_path(ORG) + "/")])


def test_a_process_without_the_key_leaves_a_sealed_conversation_to_one_that_has_it():
    # GIVEN a conversation whose history holds sealed values, past 95 %
    store = MemoryStore()
    chat(store)
    before = store.dump()
    # WHEN a process without the vault's key (an operator's tool) tries to compact it
    result = compact(store, ORG, KEY, keeping(window_for(store, "emergency"), cipher=None), now=MONDAY)
    # THEN it writes nothing (no summary or fact would keep the values), and says why
    assert (result.written, result.reason) == (False, "no_key") and store.dump() == before
    # AND a process holding the key compacts it
    assert compact(store, ORG, KEY, keeping(window_for(store, "emergency")), now=MONDAY).written
