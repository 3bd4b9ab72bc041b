"""Pseudonyms in the fine-tuning export: no name of the directory, @mention or user id leaves in
a dataset; the same person is the same pseudonym across exports; the mapping is sealed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shared_lib.brain.vault import vault_cipher
from shared_lib.features.finetune.state.export import card_path, export
from shared_lib.features.finetune.state.pseudonyms import Matcher, Pseudonyms, mapping_path
from shared_lib.tools.directory import seed_directory
from tests.unit.finetune.ft_fakes import NOW, ORG, opted_in_store, plant, tool_proposal

CIPHER = vault_cipher("test", None)
PEOPLE = [
    {
        "user_id": "u-tanaka",
        "name": "田中太郎",
        "reading": "たなか たろう",
        "level": 2,
        "department_id": "d1",
    },
    {
        "user_id": "u-sato1",
        "name": "佐藤一郎",
        "reading": "さとう いちろう",
        "level": 3,
        "department_id": "d1",
    },
    {"user_id": "u-sato2", "name": "佐藤花子", "reading": "さとう はなこ", "level": 2, "department_id": "d1"},
    {
        "user_id": "u-hayashi",
        "name": "林 誠",
        "reading": "はやし まこと",
        "level": 2,
        "department_id": "d1",
        "chatwork_account_id": "3141592",
    },
    {"user_id": "u-kazu", "name": "カズ", "reading": "かず", "level": 6, "department_id": "d1"},
]
# every form of a directory person's name that a test text below uses
NAMES = [
    "田中",
    "太郎",
    "佐藤",
    "一郎",
    "花子",
    "林",
    "誠",
    "カズ",
    "かず",
    "tanaka",
    "sato",
    "u-tanaka",
    "3141592",
]


def matcher() -> Matcher:
    return Matcher(PEOPLE)


@pytest.mark.parametrize(
    ("text", "gone"),
    [
        ("田中さんに明日までに見積書をお願いできる？", "田中"),
        ("田中　太郎さん（営業部）の件です", "田中"),
        ("ﾀﾅｶさんの資料、もう届いてる？", "ﾀﾅｶ"),
        ("Tanaka-san, could you check this?", "Tanaka"),
        ("TANAKA TARO 様宛てで送って", "TANAKA"),
        ("たなかくんにも共有しといて〜", "たなか"),
        ("@田中 これ見といて🙏", "田中"),
        ("u-tanakaの依頼です", "u-tanaka"),
        ("[To:3141592]林さん\n会議室の予約お願いします", "3141592"),
        ("林さん、いつもありがとう！", "林さん"),
        ("カズ社長の指示で来週に延期", "カズ"),
        ("佐藤花子さんと佐藤一郎課長に連絡", "佐藤"),
        ("Satoh-sanに聞いてみる", "Satoh"),
        ("@yamamoto_k よろしく", "yamamoto"),
    ],
)
def test_every_kind_of_mention_of_a_person_is_replaced(text, gone):  # type: ignore[no-untyped-def]
    out = matcher().replace(text, Pseudonyms())
    assert gone.lower() not in out.lower() and "社員" in out


def test_words_that_only_contain_a_short_name_are_left_as_they_are():
    # 「林」 alone is a word (森林, 林業); a name only before a title or honorific
    names = Pseudonyms()
    assert matcher().replace("森林の保全と林業の話", names) == "森林の保全と林業の話"
    assert matcher().replace("誠に申し訳ございません", names) == "誠に申し訳ございません"
    assert names.mapping == {}


def test_the_same_person_is_the_same_pseudonym_in_every_form_and_two_people_never_share_one():
    names, m = Pseudonyms(), matcher()
    tanaka = {m.replace(t, names) for t in ("田中太郎", "たなか たろう", "タナカタロウ", "u-tanaka")}
    hanako, ichiro = m.replace("佐藤花子", names), m.replace("佐藤一郎", names)
    assert len(tanaka) == 1 and len({*tanaka, hanako, ichiro}) == 3
    # a surname two people share is its own pseudonym: neither of them, and not the name
    shared = m.replace("佐藤", names)
    assert shared not in {*tanaka, hanako, ichiro} and "佐藤" not in shared


def _export(store, out: Path):  # type: ignore[no-untyped-def]
    return export(store, ORG, fmt="openai", out=out, now=NOW, cipher=CIPHER)


def test_an_export_carries_no_name_and_keeps_each_persons_pseudonym_across_exports(tmp_path):  # type: ignore[no-untyped-def]
    # GIVEN a directory and accepted examples naming its people in the message, the context
    # and the proposal's parameters
    store = opted_in_store()
    seed_directory(store, ORG, PEOPLE, {"d1": None})
    plant(
        store,
        "t1",
        user_text="田中さんに金曜までに見積書のタスクお願い🙏 @カズ さんにもCCで",
        context="# 相手\n佐藤花子（u-sato2）\n# 最近\n[To:3141592]林さん 了解です",
        tool="create_task",
        proposal=tool_proposal(title="見積書", assignee_name="田中太郎"),
    )
    # WHEN it is exported
    first = tmp_path / "one.jsonl"
    assert _export(store, first).ok
    body = first.read_text(encoding="utf-8")
    # THEN no name, reading, @mention or id of a person is in it
    for name in [*NAMES, "u-sato2"]:
        assert name not in body, name
    (line,) = body.splitlines()
    answer = json.loads(json.loads(line)["messages"][-1]["content"])
    tanaka = answer["tool_calls"][0]["parameters"]["assignee_name"]
    assert tanaka.startswith("社員") and f"{tanaka}さんに金曜まで" in line  # one person, one pseudonym
    card = json.loads(card_path(first).read_text(encoding="utf-8"))
    assert card["pseudonymised"]["names"] is True and card["pseudonymised"]["people"] == 4
    # AND the mapping is sealed: no name in clear in the store
    sealed = store.get(mapping_path(ORG))
    assert sealed and not any(n in json.dumps(sealed, ensure_ascii=False) for n in ("田中", "u-tanaka"))
    # WHEN a later export has another example about 田中
    plant(store, "t2", user_text="田中くんの見積書どうなった？", created_at=NOW.replace(hour=4))
    second = tmp_path / "two.jsonl"
    assert _export(store, second).ok
    # THEN 田中 has the same pseudonym as before
    lines = second.read_text(encoding="utf-8").splitlines()
    assert f"{tanaka}くんの見積書" in lines[1] and "田中" not in lines[1]
