"""Re-embedding after a model change (``charter memory reindex``): every chunk of another model
gets a vector of the current one, a run cut short is finished by running it again, and a run
over chunks already current does nothing."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import pytest

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.memory.index import chunks_path, index_text
from shared_lib.memory.reembed import reembed
from shared_lib.memory.search import Reader, search
from shared_lib.ports import EmbedKind, Vector
from tests.unit.memory.memory_fakes import NgramEmbedder

NOW = datetime(2026, 11, 25, 9, 0, tzinfo=UTC)
ORG = "acme"
DOCUMENTS = {
    "k-pc": "ノートPCが壊れたら情報システム部（内線2100）へ。代替機は当日貸し出します💻",
    "k-expense": "経費精算は毎月25日締め。領収書はスマホで撮ってアップロードしてください。",
    "k-leave": "有給休暇の申請は３日前までに上長へ。半休もOKです。",
    "k-visitor": "来客対応：受付は1Fエントランス。入館証を発行してお待ちいただく。",
    "k-wifi": "社内Wi-Fiにつながらない時は、一度ログアウトして証明書を入れ直してください。",
}


class CrashingEmbedder(NgramEmbedder):
    """The new model, cut off (a crash, a timeout) after ``calls_left`` batches."""

    def __init__(self, name: str, calls_left: int) -> None:
        super().__init__(name)
        self.calls_left = calls_left

    def embed(self, texts: Sequence[str], *, kind: EmbedKind) -> list[Vector]:
        if self.calls_left == 0:
            raise KeyboardInterrupt  # what an operator's Ctrl-C or the platform's kill looks like
        self.calls_left -= 1
        return super().embed(texts, kind=kind)


@pytest.fixture
def store() -> MemoryStore:
    # GIVEN an organisation indexed with the old model, one long document cut into several chunks
    store = MemoryStore()
    old = NgramEmbedder("old-model")
    for sid, text in DOCUMENTS.items():
        index_text(store, old, ORG, source_kind="knowledge", source_id=sid, text=text, now=NOW)
    long_text = "社内規程の改定履歴です。" + "出張旅費規程を改定し、日当を見直しました。" * 120
    index_text(store, old, ORG, source_kind="teaching", source_id="t-long", text=long_text, now=NOW)
    return store


def _models(store: MemoryStore) -> dict[str, str]:
    return {cid: str(doc.get("model")) for cid, doc in store.query(chunks_path(ORG))}


def test_every_chunk_of_the_old_model_gets_the_new_one(store: MemoryStore) -> None:
    chunks = len(_models(store))
    assert chunks > len(DOCUMENTS) + 1  # the long teaching is several chunks
    new = NgramEmbedder("new-model", dimensions=128)
    seen: list[tuple[int, int]] = []
    # WHEN re-embedded with the new model
    done = reembed(store, new, ORG, progress=lambda d, t: seen.append((d, t)), batch=2)
    # THEN every chunk is of the new model, embedded as a document, with the progress reported
    assert set(_models(store).values()) == {"new-model"}
    assert (done.embedded, done.current, done.changed) == (chunks, 0, 0)
    assert {kind for _, kind in new.calls} == {"document"}
    assert seen[0] == (0, chunks) and seen[-1] == (chunks, chunks)
    assert all(len(doc["embedding"]) == 128 for _, doc in store.query(chunks_path(ORG)))
    # AND the vector search of the new model finds what it could not before
    hits = search(store, new, ORG, "経費精算の締め日", reader=Reader(None, 1), mode="vector", limit=1)
    assert [h.source_id for h in hits] == ["k-expense"]


def test_a_run_cut_short_is_finished_by_running_it_again(store: MemoryStore) -> None:
    chunks = len(_models(store))
    # GIVEN a run that dies after two batches of two
    with pytest.raises(KeyboardInterrupt):
        reembed(store, CrashingEmbedder("new-model", calls_left=2), ORG, batch=2)
    # THEN what it wrote is kept: four chunks are of the new model, the rest still of the old
    after_crash = _models(store)
    assert sorted(after_crash.values()).count("new-model") == 4
    assert sorted(after_crash.values()).count("old-model") == chunks - 4
    # WHEN run again
    again = NgramEmbedder("new-model")
    done = reembed(store, again, ORG, batch=2)
    # THEN only the rest is embedded, and everything is of the new model
    assert (done.current, done.embedded) == (4, chunks - 4)
    assert sum(n for n, _ in again.calls) == chunks - 4
    assert set(_models(store).values()) == {"new-model"}


def test_a_second_run_does_nothing(store: MemoryStore) -> None:
    new = NgramEmbedder("new-model")
    reembed(store, new, ORG)
    before = {cid: dict(doc) for cid, doc in store.query(chunks_path(ORG))}
    # WHEN run again with the same model
    again = NgramEmbedder("new-model")
    done = reembed(store, again, ORG)
    # THEN nothing is embedded and nothing changes
    assert again.calls == []
    assert (done.embedded, done.current) == (0, len(before))
    assert {cid: dict(doc) for cid, doc in store.query(chunks_path(ORG))} == before


def test_a_chunk_reindexed_during_the_run_keeps_what_the_index_wrote(store: MemoryStore) -> None:
    # GIVEN a document edited (and re-indexed with the new model) while a batch was being embedded
    class EditingEmbedder(NgramEmbedder):
        def embed(self, texts: Sequence[str], *, kind: EmbedKind) -> list[Vector]:
            if not self.calls:
                edited = "有給休暇は２日前までに申請。急な体調不良の時は当日朝にチャットで連絡🙏"
                index_text(store, NgramEmbedder("new-model"), ORG, source_kind="knowledge",
                           source_id="k-leave", text=edited, now=NOW)  # fmt: skip
            return super().embed(texts, kind=kind)

    done = reembed(store, EditingEmbedder("new-model"), ORG)
    # THEN the edited chunk is left as the index wrote it (its own text's vector), not overwritten
    leave = [doc for _, doc in store.query(chunks_path(ORG)) if doc["source_id"] == "k-leave"]
    assert len(leave) == 1 and "２日前" in leave[0]["text"]
    expected = NgramEmbedder("new-model").embed([leave[0]["text"]], kind="document")[0]
    assert tuple(leave[0]["embedding"]) == tuple(expected)
    assert done.changed == 1
    assert set(_models(store).values()) == {"new-model"}
