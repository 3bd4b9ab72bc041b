"""Person resolution against the directory: the sender, unique names, ambiguity, departments."""

from __future__ import annotations

import pytest
from tool_fakes import ORG, SENDER, seed

from shared_lib.tools.directory import department_members, department_tree, resolve_person
from shared_lib.tools.registry import ToolInputError


@pytest.fixture
def store(memory_store):
    seed(memory_store)
    return memory_store


@pytest.mark.parametrize("word", ["俺", "自分", "私", "僕", "自分さん", "me", "sender"])
def test_given_a_self_word_when_resolved_then_it_is_the_sender(store, word):
    assert resolve_person(store, ORG, word, sender_id=SENDER).user_id == SENDER


@pytest.mark.parametrize("name", ["山田", "山田さん", "山田次郎", "山田 次郎様"])
def test_given_a_unique_name_with_or_without_honorific_when_resolved_then_that_person(store, name):
    assert resolve_person(store, ORG, name, sender_id=SENDER).user_id == "u-yamada"


def test_given_two_people_named_tanaka_when_resolved_then_it_is_a_clarification_with_both(store):
    with pytest.raises(ToolInputError) as err:
        resolve_person(store, ORG, "田中さん", sender_id=SENDER)
    assert err.value.is_clarification
    assert err.value.options == ["田中太郎", "田中花子"]


def test_given_a_full_name_among_namesakes_when_resolved_then_the_exact_one(store):
    assert resolve_person(store, ORG, "田中花子", sender_id=SENDER).user_id == "u-tanaka2"


def test_given_an_unknown_name_when_resolved_then_it_is_an_input_error_on_the_field(store):
    with pytest.raises(ToolInputError) as err:
        resolve_person(store, ORG, "佐藤", sender_id=SENDER, field="recipients")
    assert err.value.field == "recipients" and not err.value.is_clarification


def test_given_nested_departments_when_members_are_listed_then_sub_departments_are_included(store):
    assert department_tree(store, ORG, "d-sales") == {"d-sales", "d-sales-east"}
    assert {p.user_id for p in department_members(store, ORG, "d-sales")} == {
        "u-suzuki",
        "u-tanaka1",
        "u-yamada",
    }


def test_given_two_people_with_the_same_full_name_when_resolved_then_the_options_tell_them_apart(store):
    store.set("orgs/acme/users/u-tanaka3", {"name": "田中太郎", "level": 2, "department_id": "d-dev"})
    with pytest.raises(ToolInputError) as err:
        resolve_person(store, ORG, "田中太郎", sender_id=SENDER)
    assert err.value.options == ["田中太郎（d-dev）", "田中太郎（d-sales）"]
