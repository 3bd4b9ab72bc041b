"""``charter episodes list|show`` and ``charter tags list|search`` over a store holding a digest
and tagged chunks: the seed's JSON form, the tags with their confidences, AND/OR search."""

from __future__ import annotations

import json

import pytest
from episode_fakes import DAY, MODEL, NOW, ORG, RETENTION, busy_day, chunk, put, scripted, story

from shared_lib.adapters.sqlite_store import SQLiteStore
from shared_lib.cli import main as charter
from shared_lib.memory.episodes import daily_digest
from shared_lib.persona.catalogue import load_persona


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "memory.sqlite"
    store = SQLiteStore(path)
    for user_id, name in {"u-suzuki": "鈴木", "u-tanaka": "田中"}.items():
        store.set(f"orgs/{ORG}/users/{user_id}", {"name": name})
    busy_day(store)
    outcome = daily_digest(
        store, scripted(story()), load_persona(), ORG, DAY, NOW, MODEL, retention=RETENTION
    )
    both, one = chunk(store, "both", "見積と請求"), chunk(store, "one", "見積だけ")
    put(store, both, ("見積", 0.9), ("請求", 0.8))
    put(store, one, ("見積", 0.7))
    return str(path), outcome.episode_id


def run(capsys, *argv: str) -> tuple[int, str]:
    code = charter(list(argv))
    return code, capsys.readouterr().out


def test_episodes_list_and_show(db, capsys):
    path, eid = db
    code, out = run(capsys, "episodes", "list", "--org", ORG, "--json", "--store", path)
    [row] = json.loads(out)["episodes"]
    assert code == 0 and row["id"] == eid and row["type"] == "daily_digest" and row["date"] == "2026-11-24"
    assert row["metadata"]["topics"] == ["見積書"] and row["tags"] == ["見積書"]
    code, out = run(
        capsys, "episodes", "list", "--org", ORG, "--day", "2026-11-23", "--json", "--store", path
    )
    assert code == 0 and json.loads(out)["episodes"] == []
    code, out = run(capsys, "episodes", "show", eid, "--org", ORG, "--store", path)
    assert (
        code == 0
        and "daily_digest" in out
        and "tag scores      見積書 (0.7)" in out
        and "みんながんばったウル" in out
    )
    assert charter(["episodes", "show", eid, "--org", "other-org", "--store", path]) == 1


def test_tags_list_and_search(db, capsys):
    path, _ = db
    code, out = run(capsys, "tags", "list", "--org", ORG, "--json", "--store", path)
    assert code == 0 and [t["tag"] for t in json.loads(out)["tags"]] == ["見積", "見積書", "請求"]
    code, out = run(
        capsys, "tags", "search", "見積", "請求", "--org", ORG, "--mode", "and", "--json", "--store", path
    )
    [hit] = json.loads(out)["hits"]
    assert (
        code == 0
        and hit["id"] == "both"
        and hit["matched"]
        == [
            {"tag": "見積", "confidence": 0.9},
            {"tag": "請求", "confidence": 0.8},
        ]
    )
    # ﾐﾂﾓﾘ reads 見積; 見積 is also the start of the digest's 見積書: both chunks and the digest
    code, out = run(capsys, "tags", "search", "ﾐﾂﾓﾘ", "見積", "--org", ORG, "--store", path)
    assert code == 0 and out.splitlines()[-1] == "3 hit(s)"
    assert "ﾐﾂﾓﾘ: 見積 (normalised), 見積書 (containment)" in out
