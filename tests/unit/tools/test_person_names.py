"""People as users name them: titles, honorifics, departments around the name, kana and romaji."""

from __future__ import annotations

import pytest

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.brain.integration import failure_text
from shared_lib.persona.catalogue import load_persona
from shared_lib.tools.directory import resolve_person, seed_directory
from shared_lib.tools.person_names import parse, romaji_key, to_romaji
from shared_lib.tools.registry import ToolInputError
from shared_lib.turn.steps import ToolResult

ORG = "acme"
PEOPLE = [
    {"user_id": "u-me", "name": "小林優子", "reading": "こばやし ゆうこ", "department_id": "d-gen"},
    {"user_id": "u-tanaka-s", "name": "田中太郎", "reading": "たなか たろう", "department_id": "d-sales"},
    {"user_id": "u-tanaka-k", "name": "田中花子", "reading": "たなか はなこ", "department_id": "d-acc"},
    {"user_id": "u-yamada", "name": "山田次郎", "reading": "やまだ じろう", "department_id": "d-sales"},
    {"user_id": "u-ito", "name": "伊藤翔平", "reading": "いとう しょうへい", "department_id": "d-dev"},
    {"user_id": "u-ohno", "name": "大野純一", "reading": "おおの じゅんいち", "department_id": "d-acc"},
    {"user_id": "u-honma", "name": "本間真奈美", "reading": "ほんま まなみ", "department_id": "d-dev"},
    {"user_id": "u-hattori", "name": "服部一茶", "reading": "はっとり いっちゃ", "department_id": "d-dev"},
]
DEPARTMENTS = {"d-gen": None, "d-sales": None, "d-acc": None, "d-dev": None}
NAMES = {"d-gen": "総務部", "d-sales": "営業部", "d-acc": "経理部", "d-dev": "開発部"}
READINGS = {"d-gen": "そうむぶ", "d-sales": "えいぎょうぶ", "d-acc": "けいりぶ", "d-dev": "かいはつぶ"}


@pytest.fixture
def store():
    s = MemoryStore()
    seed_directory(s, ORG, PEOPLE, DEPARTMENTS, NAMES, READINGS)
    return s


def who(store, said: str) -> str:
    return resolve_person(store, ORG, said, sender_id="u-me").user_id


@pytest.mark.parametrize(
    ("said", "user_id"),
    [
        ("山田部長", "u-yamada"),
        ("山田課長代理", "u-yamada"),
        ("山田部長さん", "u-yamada"),
        ("営業部の山田部長", "u-yamada"),
        ("山田 次郎マネージャー", "u-yamada"),
        ("伊藤リーダー", "u-ito"),
        ("伊藤くん", "u-ito"),
        ("大野専務", "u-ohno"),
        ("大野常務殿", "u-ohno"),
        ("本間主任", "u-honma"),
        ("服部先生", "u-hattori"),
        ("服部係長", "u-hattori"),
        ("本間ちゃん", "u-honma"),
        ("大野氏", "u-ohno"),
        ("伊藤室長", "u-ito"),
        ("田中さん（経理）", "u-tanaka-k"),
        ("経理部の田中さん", "u-tanaka-k"),
        ("営業の田中課長", "u-tanaka-s"),
        ("田中花子次長", "u-tanaka-k"),
        # titles of other ranks and of other kinds of organisation, and an addressee's marks
        ("山田副部長", "u-yamada"),
        ("山田課長補佐", "u-yamada"),
        ("大野執行役員", "u-ohno"),
        ("大野顧問", "u-ohno"),
        ("本間主査", "u-honma"),
        ("伊藤GM", "u-ito"),
        ("伊藤 PM", "u-ito"),
        ("大野CFO", "u-ohno"),
        ("本間グループリーダー", "u-honma"),
        ("@服部さん", "u-hattori"),
        ("＠伊藤", "u-ito"),
        ("山田部長宛て", "u-yamada"),
        ("本間さんへ", "u-honma"),
        ("けいりの田中さん", "u-tanaka-k"),  # the department said by its reading
        ("田中さん（えいぎょう）", "u-tanaka-s"),
    ],
)
def test_given_a_name_with_titles_and_a_department_when_resolved_then_that_person(store, said, user_id):
    # GIVEN a directory with two 田中 in different departments WHEN named as colleagues do
    # THEN titles and honorifics are not part of the name and the department picks one
    assert who(store, said) == user_id


@pytest.mark.parametrize(
    ("said", "user_id"),
    [
        ("やまだ", "u-yamada"),
        ("ヤマダ", "u-yamada"),
        ("ﾔﾏﾀﾞ", "u-yamada"),
        ("やまだじろう", "u-yamada"),
        ("ヤマダ ジロウ", "u-yamada"),
        ("Yamada", "u-yamada"),
        ("YAMADA-san", "u-yamada"),
        ("yamada jiro", "u-yamada"),
        ("Ｙａｍａｄａ", "u-yamada"),
        ("Ito", "u-ito"),
        ("Itou Shouhei", "u-ito"),
        ("Itoh", "u-ito"),
        ("Ohno", "u-ohno"),
        ("Ono", "u-ohno"),
        ("Oono", "u-ohno"),
        ("Honma", "u-honma"),
        ("Homma", "u-honma"),
        ("Hattori", "u-hattori"),
        ("ほんまさん", "u-honma"),
        ("いとう部長", "u-ito"),
        ("Junichi Ohno", "u-ohno"),  # the given name first, as in English
        ("Manami Homma", "u-honma"),
    ],
)
def test_given_a_reading_in_kana_or_romaji_when_resolved_then_that_person(store, said, user_id):
    assert who(store, said) == user_id


@pytest.mark.parametrize("said", ["たなか", "タナカ", "Tanaka", "田中部長", "田中さん"])
def test_given_two_people_of_that_name_when_resolved_then_one_persona_line_asks_which(store, said):
    # GIVEN two 田中 WHEN a user names 田中 in any writing THEN nobody is guessed
    with pytest.raises(ToolInputError) as err:
        who(store, said)
    assert err.value.key == "person_ambiguous"
    # AND the user reads one line in the persona's voice naming both with their departments
    result = ToolResult(
        tool_name="chatwork_task_create",
        call_index=0,
        ok=False,
        error_code="validation_error",
        result={"error_key": err.value.key, "values": err.value.values, "field": err.value.field},
    )
    text = failure_text(load_persona(), result)
    assert "営業部の田中太郎さん" in text and "経理部の田中花子さん" in text
    assert text.endswith("ウル？") and "\n" not in text


def test_given_an_unknown_name_with_a_title_when_resolved_then_the_persona_says_the_bare_name(store):
    with pytest.raises(ToolInputError) as err:
        who(store, "鈴木課長")
    result = ToolResult(
        tool_name="chatwork_task_create",
        call_index=0,
        ok=False,
        error_code="validation_error",
        result={"error_key": err.value.key, "values": err.value.values, "field": err.value.field},
    )
    text = failure_text(load_persona(), result)
    assert text.startswith("鈴木さんは") and "ウル" in text and "課長" not in text


@pytest.mark.parametrize("title", ["部長", "社長", "様", "さん"])
def test_given_only_a_title_when_parsed_then_it_is_not_emptied(title):
    assert parse(title).name == title


@pytest.mark.parametrize(
    ("reading", "spelled"),
    [
        ("さとう", "Sato"),
        ("さとう", "Satoh"),
        ("しょうへい", "Syohei"),
        ("じゅんいち", "Zyunichi"),
        ("はっとり", "hattori"),
    ],
)
def test_given_romaji_spellings_when_keyed_then_they_meet_the_reading(reading, spelled):
    assert romaji_key(spelled) == romaji_key(to_romaji(reading))
