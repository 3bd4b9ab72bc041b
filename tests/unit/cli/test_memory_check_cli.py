"""``charter memory check``: an operator's check of an organisation's memory index and its
repair, through the command line, on a MemoryStore with the tests' n-gram embedder: a clean index
exits 0, a broken one exits 1 naming each finding (in text and JSON), ``--repair`` fixes it and
exits 0, and another organisation's index is not touched."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from shared_lib.adapters.inproc_bus import InProcessBus
from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.cli import main
from shared_lib.cli import memory_check as check_cli
from shared_lib.memory.index import chunk_path, source_path
from shared_lib.memory.ingest import add_item
from shared_lib.wiring.composition import build_runtime
from tests.unit.memory.memory_fakes import NgramEmbedder

NOW = datetime(2026, 11, 25, 9, 0, tzinfo=UTC)
EMBEDDER = NgramEmbedder()
RULE = "有給休暇の申請は３日前までに上長へ。半休もOKです🌴"


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> MemoryStore:
    s = MemoryStore()
    rt = build_runtime(store=s, llm=None, bus=InProcessBus(), notifiers=[], embedder=EMBEDDER)
    monkeypatch.setattr(check_cli, "runtime_for", lambda _args: rt)
    # GIVEN two organisations with the same knowledge indexed
    for org in ("acme", "globex"):
        add_item(s, EMBEDDER, org, kind="knowledge", text=RULE, now=NOW, title="休暇の申請")
    return s


def test_a_clean_index_exits_0(store: MemoryStore, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", "check", "--org", "acme"]) == 0
    assert "1 source(s)" in capsys.readouterr().out


def test_a_broken_entry_is_named_then_repaired(
    store: MemoryStore, capsys: pytest.CaptureFixture[str]
) -> None:
    kid = next(i for i, _ in store.query("orgs/acme/knowledge"))
    (cid,) = (store.get(source_path("acme", "knowledge", kid)) or {})["chunk_ids"]
    # GIVEN acme's chunk lost its vector
    store.set(chunk_path("acme", cid), {"embedding": None}, merge=True)
    # WHEN checked THEN exit 1, the finding named with its source and chunk
    assert main(["memory", "check", "--org", "acme"]) == 1
    out = capsys.readouterr().out
    assert "no_vector" in out and kid in out and cid in out
    assert main(["memory", "check", "--org", "acme", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["counts"] == {"no_vector": 1} and report["repaired"] is None
    # WHEN repaired THEN exit 0, the chunk re-embedded, and a check after it finds nothing
    assert main(["memory", "check", "--org", "acme", "--repair", "--json"]) == 0
    fixed = json.loads(capsys.readouterr().out)
    assert fixed["repaired"]["reembedded_chunks"] == 1 and fixed["after"]["findings"] == []
    assert (store.get(chunk_path("acme", cid)) or {})["embedding"]
    # AND the other organisation was neither read as broken nor written
    assert main(["memory", "check", "--org", "globex", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["findings"] == []
