"""``charter memory``: add, list, search (JSON shape), delete through the command line, on a
MemoryStore with the tests' n-gram embedder (tests/unit/memory/memory_fakes.py; the operator
runtime gives the real one)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shared_lib.adapters.inproc_bus import InProcessBus
from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.cli import main
from shared_lib.cli import memory as memory_cli
from shared_lib.wiring.composition import build_runtime
from tests.unit.memory.memory_fakes import NgramEmbedder


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> MemoryStore:
    s = MemoryStore()
    s.set("orgs/acme/users/ceo", {"name": "社長", "level": 6})
    s.set("orgs/acme/users/staff", {"name": "社員", "level": 2})
    s.set("orgs/globex/users/ceo", {"name": "他社の社長", "level": 6})
    rt = build_runtime(store=s, llm=None, bus=InProcessBus(), notifiers=[], embedder=NgramEmbedder())
    monkeypatch.setattr(memory_cli, "runtime_for", lambda _args: rt)
    return s


def _json(capsys: pytest.CaptureFixture[str]) -> dict:
    return json.loads(capsys.readouterr().out)


def test_add_search_list_delete(store: MemoryStore, capsys: pytest.CaptureFixture[str]):
    # GIVEN a teaching added by the CEO
    assert (
        main(
            ["memory", "add", "--org", "acme", "--kind", "teaching", "--by", "ceo", "約束の時間を必ず守る。"]
        )
        == 0
    )
    added = capsys.readouterr().out
    tid = added.split()[1]
    assert tid.startswith("T-")
    # WHEN a staff member searches by an exact term
    assert main(["memory", "search", "--org", "acme", "--as", "staff", "--json", "約束"]) == 0
    found = _json(capsys)
    # THEN the JSON has the ranked hit with both scores
    assert found["query"] == "約束"
    hit = found["hits"][0]
    assert set(hit) == {"rank", "kind", "source_id", "text", "score", "keyword_score", "vector_score"}
    assert (hit["rank"], hit["kind"], hit["source_id"]) == (1, "teaching", tid)
    assert hit["keyword_score"] > 0 and hit["vector_score"] > 0
    # and another organisation finds nothing of it
    assert main(["memory", "search", "--org", "globex", "--as", "ceo", "--json", "約束"]) == 0
    assert _json(capsys)["hits"] == []
    assert main(["memory", "list", "--org", "acme", "--json"]) == 0
    assert [i["id"] for i in _json(capsys)["items"]] == [tid]
    # WHEN staff tries to delete it: refused (1); the CEO may
    assert main(["memory", "delete", "--org", "acme", "--by", "staff", tid]) == 1
    assert "level 6" in capsys.readouterr().err
    assert main(["memory", "delete", "--org", "acme", tid]) == 0
    assert "1 chunk" in capsys.readouterr().out
    assert main(["memory", "search", "--org", "acme", "--json", "約束"]) == 0
    assert _json(capsys)["hits"] == []


def test_staff_may_not_add_a_teaching(store: MemoryStore, capsys: pytest.CaptureFixture[str]):
    assert main(["memory", "add", "--org", "acme", "--kind", "teaching", "--by", "staff", "方針。"]) == 1
    assert "needs level 6" in capsys.readouterr().err
    assert store.query("orgs/acme/teachings") == []


def test_import_a_jsonl_file(store: MemoryStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    f = tmp_path / "k.jsonl"
    f.write_text(
        json.dumps({"text": "請求書は毎月25日締め。", "title": "請求"}, ensure_ascii=False)
        + "\n"
        + json.dumps({"text": "役員会の議事録。", "min_level": 5}, ensure_ascii=False)
        + "\n",
        encoding="utf-8",
    )
    assert main(["memory", "import", "--org", "acme", "--kind", "knowledge", str(f)]) == 0
    assert capsys.readouterr().out.count("added K-") == 2
    # the staff member (level 2) does not see the level-5 document
    assert main(["memory", "search", "--org", "acme", "--as", "staff", "--json", "議事録 請求書"]) == 0
    assert [h["text"] for h in _json(capsys)["hits"]] == ["請求書は毎月25日締め。"]


def test_reindex_indexes_documents_written_before_the_index(
    store: MemoryStore, capsys: pytest.CaptureFixture[str]
):
    # GIVEN a knowledge document, a teaching, an inactive teaching and a memory written by hand
    store.set("orgs/acme/knowledge/k1", {"title": "経費", "content": "経費精算は月末締め。", "min_level": 3})
    store.set("orgs/acme/teachings/t1", {"content": "挨拶を大切に。", "priority": 1, "active": True})
    store.set("orgs/acme/teachings/t2", {"content": "古い教え。", "active": False})
    store.set(
        "orgs/acme/memories/m1", {"content": "昼食はそば派", "user_id": "staff", "category": "preference"}
    )
    # WHEN reindexed THEN each is searchable, the memory only by its owner, the level kept
    assert main(["memory", "reindex", "--org", "acme"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "teaching 1, knowledge 1, value 0, memory 1, episode 0 indexed",
        "0 chunks re-embedded with test-ngram, 3 already of it",
    ]
    assert (
        main(["memory", "search", "--org", "acme", "--as", "staff", "--json", "経費精算 挨拶 古い教え そば"])
        == 0
    )
    assert sorted(h["source_id"] for h in _json(capsys)["hits"]) == ["m1", "t1"]  # k1 needs level 3
    mine = ["--kind", "knowledge", "--kind", "memory"]
    assert main(["memory", "search", "--org", "acme", "--as", "ceo", *mine, "--json", "経費精算 そば"]) == 0
    assert [h["source_id"] for h in _json(capsys)["hits"]] == ["k1"]  # not staff's own memory


def test_reindex_after_a_model_change_re_embeds_with_a_bar_and_is_idempotent(
    store: MemoryStore, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    # GIVEN two documents indexed with yesterday's model
    store.set("orgs/acme/knowledge/k1", {"title": "経費", "content": "経費精算は毎月25日締め🧾"})
    store.set("orgs/acme/knowledge/k2", {"title": "ＰＣ", "content": "PCが壊れたら情シス（内線2100）へ"})
    old = build_runtime(
        store=store, llm=None, bus=InProcessBus(), notifiers=[], embedder=NgramEmbedder("old")
    )
    monkeypatch.setattr(memory_cli, "runtime_for", lambda _args: old)
    assert main(["memory", "reindex", "--org", "acme"]) == 0
    capsys.readouterr()
    # WHEN the model changes and the operator reindexes
    new = build_runtime(
        store=store, llm=None, bus=InProcessBus(), notifiers=[], embedder=NgramEmbedder("new")
    )
    monkeypatch.setattr(memory_cli, "runtime_for", lambda _args: new)
    assert main(["memory", "reindex", "--org", "acme"]) == 0
    # THEN the documents are not indexed again, their chunks get the new model's vectors,
    # and the progress is drawn on stderr (stdout stays the result)
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "teaching 0, knowledge 0, value 0, memory 0, episode 0 indexed",
        "2 chunks re-embedded with new, 0 already of it",
    ]
    assert "re-embedding (new) [" in err and "] 2/2" in err
    models = {d["model"] for _, d in store.query("orgs/acme/memory_chunks")}
    assert models == {"new"}
    # AND a second run has nothing to do; --all indexes every document again
    assert main(["memory", "reindex", "--org", "acme"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == "0 chunks re-embedded with new, 2 already of it"
    assert main(["memory", "reindex", "--org", "acme", "--all"]) == 0
    assert (
        capsys.readouterr().out.splitlines()[0]
        == "teaching 0, knowledge 2, value 0, memory 0, episode 0 indexed"
    )
