"""``charter tags search|show`` as an operator runs them: a tag typed in another spelling, a
part of a compound or a reading finds the tag the memories carry, with its related tags."""

from __future__ import annotations

import json

import pytest
from episode_fakes import ORG, chunk, put

from shared_lib.adapters.sqlite_store import SQLiteStore
from shared_lib.cli import main as charter


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "memory.sqlite"
    store = SQLiteStore(path)
    expense = chunk(store, "expense", "タクシー代は月末までに領収書を添えて申請")
    train = chunk(store, "train", "新幹線の回数券は精算できない")
    laptop = chunk(store, "laptop", "ノートPCの入れ替えは来月")
    meeting = chunk(store, "meeting", "月曜の定例の議事録")
    put(store, expense, ("経費精算", 0.9), ("交通費", 0.8))
    put(store, train, ("経費精算", 0.7), ("交通費", 0.6), ("出張", 0.6))
    put(store, laptop, ("パソコン", 0.9))
    put(store, meeting, ("打ち合わせ", 0.8))
    return str(path)


def run(capsys, *argv: str) -> tuple[int, str]:
    code = charter([*argv, "--org", ORG, "--store", argv_store[0]])
    return code, capsys.readouterr().out


argv_store: list[str] = []


@pytest.fixture(autouse=True)
def _store(db):
    argv_store[:] = [db]


@pytest.mark.parametrize("typed", ["経費", "精算", "けいひ", "ｹｲﾋ", "経費清算", "経費・精算"])
def test_tags_search_finds_the_compound_however_it_is_typed(capsys, typed):
    # WHEN the operator searches a part, a reading, half-width kana or a typo
    code, out = run(capsys, "tags", "search", typed, "--json")
    answer = json.loads(out)
    # THEN 経費精算 is matched and both of its memories are found, the surer first
    assert code == 0
    assert answer["matched"][typed][0]["tag"] == "経費精算"
    assert [h["id"] for h in answer["hits"]] == ["expense", "train"]
    # and its related tags are offered
    assert answer["related"]["経費精算"][0] == {"tag": "交通費", "score": 1.0, "why": "co-occurs"}


@pytest.mark.parametrize(
    ("typed", "tag"), [("ＰＣ", "パソコン"), ("打合せ", "打ち合わせ"), ("打ち合せ", "打ち合わせ")]
)
def test_tags_search_in_text_form(capsys, typed, tag):
    code, out = run(capsys, "tags", "search", typed)
    lines = out.splitlines()
    assert code == 0 and lines[0] == f"{typed}: {tag} (normalised)" and lines[-1] == "1 hit(s)"


def test_tags_search_of_nothing_known_says_so(capsys):
    code, out = run(capsys, "tags", "search", "採用")
    assert code == 0 and out.splitlines() == ["採用: no tag matches", "0 hit(s)"]


def test_tags_show_gives_uses_and_related_tags(capsys):
    code, out = run(capsys, "tags", "show", "けいひせいさん")
    assert code == 0
    assert "経費精算 (normalised)" in out.splitlines()[0]
    assert "交通費 (co-occurs 1.00)" in out and "出張 (co-occurs 0.50)" in out
    code, out = run(capsys, "tags", "show", "営業会議", "--json")
    assert code == 1
