"""The memory search takes tags as a signal: a query naming a tag (in any spelling) lifts the
chunks carrying it, within the reader's rights, for one cached read of the tag master; the
related tags of a tag (co-occurring, similar)."""

from __future__ import annotations

from datetime import UTC, datetime

from episode_fakes import put
from memory_fakes import NgramEmbedder

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.memory.index import chunks_path, index_text
from shared_lib.memory.search import Reader, search
from shared_lib.memory.tag_match import embed_tags
from shared_lib.memory.tag_signal import masters, related_tags

NOW = datetime(2026, 11, 25, 9, 0, tzinfo=UTC)
ORG = "acme"
ANYONE = Reader(user_id="u-sato", level=6)
DOCS = {
    "expense": "立て替えた交通費やタクシー代は、月末までに領収書の写真を添えて申請してください。",
    "pc": "新しいノートパソコンは情報システム部に申請。届くまで一週間くらいかかります。",
    "meeting": "定例の打ち合わせは毎週月曜10時から。議事録は当番が共有フォルダに置く。",
    "leave": "有給休暇は3日前までに上長へ。半休も取れます。",
    "quote": "見積書の雛形は営業部の共有ドライブにあります。金額は税抜きで書く。",
    "travel": "出張の新幹線は会社のアカウントで予約する。ホテルは1泊1万円まで。",
    "wifi": "会議室のWi-Fiが遅いときはルーターを再起動してみてください。",
    "print": "プリンターの紙詰まりは、まず背面のカバーを開けて確認。",
}


def indexed(tags: dict[str, list[tuple[str, float]]] | None = None, **private: str) -> MemoryStore:
    store, emb = MemoryStore(), NgramEmbedder()
    for sid, text in DOCS.items():
        index_text(
            store,
            emb,
            ORG,
            source_kind="knowledge",
            source_id=sid,
            text=text,
            now=NOW,
            user_id=private.get(sid),
        )
    for sid, given in (tags or {}).items():
        for cid, doc in store.query(chunks_path(ORG)):
            if doc["source_id"] == sid:
                put(store, f"{chunks_path(ORG)}/{cid}", *given)
    return store


def rank_of(hits, sid):
    return next((i for i, h in enumerate(hits, 1) if h.source_id == sid), None)


def test_a_query_naming_a_tag_lifts_what_carries_it():
    # GIVEN the expense rule tagged 経費精算 (its text never says 経費 nor 精算)
    plain = indexed()
    tagged = indexed({"expense": [("経費精算", 0.9)], "travel": [("出張", 0.8)]})
    emb = NgramEmbedder()
    for query in ("経費の精算ってどうやるんだっけ？", "けいひせいさんの締め切りいつ", "経費精算"):
        # WHEN someone asks about it in their words
        before = search(plain, emb, ORG, query, reader=ANYONE, limit=8)
        after = search(tagged, emb, ORG, query, reader=ANYONE, limit=8)
        # THEN the tagged rule ranks first, above where it stood without its tag
        assert rank_of(after, "expense") == 1, query
        assert rank_of(before, "expense") is None or rank_of(before, "expense") > 1, query
        assert after[0].tag_rank == 1 and "経費精算" in after[0].tags


def test_a_query_naming_no_tag_is_ranked_as_before():
    plain = indexed()
    tagged = indexed({"expense": [("経費精算", 0.9)], "pc": [("パソコン", 0.9)]})
    emb = NgramEmbedder()
    query = "プリンターが紙詰まりした😇"
    before = [(h.source_id, round(h.score, 9)) for h in search(plain, emb, ORG, query, reader=ANYONE)]
    after = [(h.source_id, round(h.score, 9)) for h in search(tagged, emb, ORG, query, reader=ANYONE)]
    assert before == after


def test_a_tag_never_shows_someone_else_a_private_chunk():
    # GIVEN the pc note private to 田中 and tagged パソコン
    store = indexed({"pc": [("パソコン", 0.9)]}, pc="u-tanaka")
    emb = NgramEmbedder()
    # WHEN 佐藤 asks about a ＰＣ THEN the tag does not bring him 田中's note
    assert rank_of(search(store, emb, ORG, "ＰＣ届かないんだけど", reader=ANYONE), "pc") is None
    tanaka = Reader(user_id="u-tanaka", level=1)
    assert rank_of(search(store, emb, ORG, "ＰＣ届かないんだけど", reader=tanaka), "pc") == 1


class CountingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.reads: list[str] = []

    def query(self, collection, *args, **kwargs):
        self.reads.append(collection)
        return super().query(collection, *args, **kwargs)


def test_the_tag_master_is_read_once_per_process_window():
    store = CountingStore()
    emb = NgramEmbedder()
    for sid, text in DOCS.items():
        index_text(store, emb, ORG, source_kind="knowledge", source_id=sid, text=text, now=NOW)
    put(store, f"{chunks_path(ORG)}/{next(c for c, _ in store.query(chunks_path(ORG)))}", ("打ち合わせ", 0.8))
    store.reads.clear()
    for query in ("明日の打合せ何時？", "有給って何日前？", "打ち合せの議事録どこ"):
        search(store, emb, ORG, query, reader=ANYONE)
    assert store.reads.count(f"orgs/{ORG}/memory_tags") == 1


def test_related_tags_co_occur_or_are_near():
    # GIVEN 経費精算 seen with 交通費 on two memories of three and 領収書 on one
    store, emb = indexed(), NgramEmbedder()
    cids = [cid for cid, _ in store.query(chunks_path(ORG))]
    put(store, f"{chunks_path(ORG)}/{cids[0]}", ("経費精算", 0.9), ("交通費", 0.8))
    put(store, f"{chunks_path(ORG)}/{cids[1]}", ("経費精算", 0.9), ("交通費", 0.7), ("領収書", 0.6))
    put(store, f"{chunks_path(ORG)}/{cids[2]}", ("経費精算", 0.7))
    put(store, f"{chunks_path(ORG)}/{cids[3]}", ("経費精算書", 0.7))
    for p, doc in masters(store, ORG, fresh=True):  # the names' vectors as the embedder left them
        vector = {"経費精算": [1.0, 0.0], "経費精算書": [0.95, 0.3122]}.get(doc["tag"], [0.0, 1.0])
        store.set(p, {"embedding": vector, "embedding_model": emb.name}, merge=True)
    # WHEN its related tags are asked
    related = related_tags(store, ORG, "経費精算")
    # THEN by score: the near name, then the co-occurring by share (a far name is not related)
    assert related == [
        ("経費精算書", 0.95, "similar"),
        ("交通費", round(2 / 3, 4), "co-occurs"),
        ("領収書", round(1 / 3, 4), "co-occurs"),
    ]


def test_tag_names_are_embedded_once_and_again_when_renamed():
    store, emb = indexed({"expense": [("経費精算", 0.9)], "pc": [("パソコン", 0.9)]}), NgramEmbedder()
    assert embed_tags(store, emb, masters(store, ORG, fresh=True)) == 2
    assert embed_tags(store, emb, masters(store, ORG, fresh=True)) == 0
    p = next(p for p, d in masters(store, ORG, fresh=True) if d["tag"] == "パソコン")
    store.set(p, {"tag": "PC"}, merge=True)
    assert embed_tags(store, emb, masters(store, ORG, fresh=True)) == 1
    assert emb.calls == [(2, "query"), (1, "query")]
