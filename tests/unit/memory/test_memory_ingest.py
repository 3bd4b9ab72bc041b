"""Teachings, knowledge and values in, with seed 000's levels; what the context reads stays."""

from datetime import UTC, datetime
from pathlib import Path

import pytest

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.errors import ArgumentError
from shared_lib.memory.index import chunks_path
from shared_lib.memory.ingest import ItemNotFound, NotAllowed, add_item, delete_item, list_items, read_import
from shared_lib.memory.search import Reader, search
from tests.unit.memory.memory_fakes import NgramEmbedder

NOW = datetime(2026, 11, 25, 9, 0, tzinfo=UTC)
ORG = "acme"


@pytest.fixture
def store():
    s = MemoryStore()
    for uid, level in (("ceo", 6), ("head", 4), ("staff", 2)):
        s.set(f"orgs/{ORG}/users/{uid}", {"name": uid, "level": level})
    return s


def _add(store, kind, text, now=NOW, **kw):
    return add_item(store, NgramEmbedder(), ORG, kind=kind, text=text, now=now, **kw)


def test_a_teaching_by_the_ceo_is_stored_where_the_context_reads_it_and_indexed(store):
    item = _add(store, "teaching", "お客様の声を最優先にする。", by="ceo", title="顧客第一")
    doc = store.get(f"orgs/{ORG}/teachings/{item['id']}")
    assert doc["content"] == "お客様の声を最優先にする。" and doc["active"] is True and doc["priority"] == 0
    hits = search(store, NgramEmbedder(), ORG, "お客様", reader=Reader("staff", 2))
    assert hits[0].source_id == item["id"] and hits[0].source_kind == "teaching"


@pytest.mark.parametrize(("kind", "by"), [("teaching", "head"), ("value", "head"), ("knowledge", "staff")])
def test_below_the_level_nothing_is_written(store, kind, by):
    with pytest.raises(NotAllowed) as err:
        _add(store, kind, "勝手な方針。", by=by)
    assert err.value.code == "level"
    assert list_items(store, ORG) == [] and store.query(chunks_path(ORG)) == []


def test_a_person_not_in_the_directory_may_not_add(store):
    with pytest.raises(NotAllowed) as err:
        _add(store, "knowledge", "手順。", by="stranger")
    assert err.value.code == "unknown_person"


def test_knowledge_by_a_head_with_a_reading_level(store):
    item = _add(store, "knowledge", "決算の手順\n月末に締める。", by="head", min_level=4)
    assert item["title"] == "決算の手順" and item["min_level"] == 4
    assert search(store, None, ORG, "決算", reader=Reader("staff", 2)) == []
    assert search(store, None, ORG, "決算", reader=Reader("head", 4))[0].source_id == item["id"]


def test_values_are_joined_into_the_company_settings_and_leave_with_delete(store):
    a = _add(store, "value", "誠実であれ。")
    _add(store, "value", "挑戦を楽しむ。", now=NOW.replace(hour=10))
    assert store.get(f"orgs/{ORG}/settings/company")["values"] == "誠実であれ。\n挑戦を楽しむ。"
    delete_item(store, ORG, a["id"])
    assert store.get(f"orgs/{ORG}/settings/company")["values"] == "挑戦を楽しむ。"


def test_the_same_text_twice_is_one_item(store):
    assert _add(store, "knowledge", "同じ文。")["id"] == _add(store, "knowledge", "同じ文。")["id"]
    assert len(list_items(store, ORG, "knowledge")) == 1


def test_delete_removes_the_item_and_its_chunks_by_author_or_level(store):
    item = _add(store, "knowledge", "経費の手順。", by="head")
    with pytest.raises(NotAllowed):
        delete_item(store, ORG, item["id"], by="staff")
    gone = delete_item(store, ORG, item["id"], by="head")
    assert gone["deleted"] and gone["chunks"] == 1
    assert store.query(chunks_path(ORG)) == [] and list_items(store, ORG) == []
    with pytest.raises(ItemNotFound):
        delete_item(store, ORG, item["id"])
    with pytest.raises(ArgumentError):
        delete_item(store, ORG, "X-123")


def test_stored_texts_are_masked(store):
    item = _add(store, "knowledge", "緊急時は 090-1234-5678 に電話。")
    assert "090-1234-5678" not in str(store.get(f"orgs/{ORG}/knowledge/{item['id']}"))
    assert all("090-1234-5678" not in d["text"] for _, d in store.query(chunks_path(ORG)))


def test_read_import_text_and_jsonl(tmp_path: Path):
    md = tmp_path / "a.md"
    md.write_text("# 経費規程\n本文。", encoding="utf-8")
    assert read_import(md) == [{"text": "# 経費規程\n本文。", "title": "経費規程"}]
    jl = tmp_path / "b.jsonl"
    jl.write_text(
        '{"text": "一つ目", "title": "T"}\n\n{"text": "二つ目", "min_level": 3}\n', encoding="utf-8"
    )
    assert [i["text"] for i in read_import(jl)] == ["一つ目", "二つ目"]
    jl.write_text('{"text": 1}\n', encoding="utf-8")
    with pytest.raises(ArgumentError):
        read_import(jl)
    jl.write_text("not json\n", encoding="utf-8")
    with pytest.raises(ArgumentError):
        read_import(jl)
