"""Kept values under the organisation's vault key (issue 36), through the tools: a memory or a
task body is sealed with its organisation's derived key, read back in clear only by the people
its rule allows (a memory its author; a task its creator and its assignee), masked for a leader
of another department or anyone else, never opened by another organisation's cipher, and a
purge in one organisation leaves another's sealed values as they were."""

from __future__ import annotations

import json
import unicodedata

import pytest
from cryptography.fernet import Fernet, InvalidToken
from tool_fakes import ORG, OTHER_ORG, call, docs, make_executor, seed

from shared_lib.cli.data import purge
from shared_lib.privacy.org_vault import OrgVault
from shared_lib.privacy.sealing import SEALED_FIELD, destroyed

SUZUKI, TANAKA, HANAKO, YAMADA, BOSS = "u-suzuki", "u-tanaka1", "u-tanaka2", "u-yamada", "u-boss"
MOBILE, MAIL = "080-2222-3333", "sato@torihiki.co.jp"
MEMO = f"取引先の佐藤さん、携帯は {MOBILE}、メールは {MAIL} です！来週アポ📅"
TASK_MAIL = "kaneko.m@example.jp"


@pytest.fixture
def vault() -> OrgVault:
    return OrgVault([Fernet.generate_key()])


@pytest.fixture
def ex(store, clock, vault):
    seed(store, OTHER_ORG)  # the same people (same user ids) in another organisation
    return make_executor(store, clock=clock, vault=vault)


def as_stored(text: str) -> str:
    """``text`` as the tools keep it (width folded: 「！」 is kept as "!")."""
    return unicodedata.normalize("NFKC", text)


def as_text(doc: dict) -> str:
    return json.dumps(doc, ensure_ascii=False, default=str)


def tokens(doc: dict) -> list[str]:
    return [t for entries in doc.get(SEALED_FIELD, {}).values() for t in entries if t]


def remember(ex, text: str, *, user: str = SUZUKI, org: str = ORG, n: int = 1):
    out = call(
        ex,
        "save_memory",
        {"content": text, "category": "person", "subject": "佐藤"},
        user=user,
        org=org,
        call_id=f"m{n}",
    )
    assert out.ok, out
    return out


def recall(ex, query: str, *, user: str = SUZUKI, org: str = ORG, n: int = 1):
    out = call(ex, "query_memory", {"query": query}, user=user, org=org, call_id=f"q{n}")
    assert out.ok, out
    return out.result


def test_a_memory_is_sealed_under_its_organisations_key_and_opens_for_its_author_only(ex, store, vault):
    # GIVEN 鈴木 asks the assistant to keep a client's mobile and address
    remember(ex, MEMO)
    (doc,) = docs(store, "memories").values()
    # THEN neither value is stored in clear, and no placeholder lost its value
    assert MOBILE not in as_text(doc) and MAIL not in as_text(doc)
    assert destroyed(doc) == [] and len(tokens(doc)) == 2
    # AND every sealed value opens with the organisation's cipher, never with the bare deployment
    # key nor another organisation's cipher
    for token in tokens(doc):
        assert vault.for_org(ORG).decrypt(token.encode()).decode() in (MOBILE, MAIL)
        for other in (vault.deployment, vault.for_org(OTHER_ORG)):
            with pytest.raises(InvalidToken):
                other.decrypt(token.encode())
    # WHEN 鈴木 asks for it again, THEN the values come back in clear
    mine = recall(ex, "佐藤さんの連絡先")
    assert [m["content"] for m in mine["memories"]] == [as_stored(MEMO)]
    assert sorted(mine["_revealed"]) == sorted([MOBILE, MAIL])
    # AND 田中花子 (another department) asking the same gets no memory and no value
    theirs = recall(ex, "佐藤さんの連絡先", user=HANAKO, n=2)
    assert theirs["memories"] == [] and "_revealed" not in theirs


def test_a_task_body_is_clear_for_its_creator_and_assignee_and_masked_for_leaders_of_other_departments(
    ex, store
):
    # GIVEN 鈴木 gives 田中太郎 a task naming an address
    made = call(
        ex,
        "chatwork_task_create",
        {"body": f"金子さん（{TASK_MAIL}）に見積書を送付", "assignee_name": "田中太郎", "limit_date": "明日"},
        call_id="t1",
    )
    assert made.ok, made
    (stored,) = docs(store, "tasks").values()
    assert TASK_MAIL not in as_text(stored) and destroyed(stored) == []
    # WHEN its creator and its assignee list it, THEN they read the address
    by_creator = call(ex, "chatwork_task_search", {"assignee_name": "田中太郎"}, call_id="s1").result
    by_assignee = call(
        ex, "chatwork_task_search", {"assignee_name": "自分"}, user=TANAKA, call_id="s2"
    ).result
    for seen in (by_creator, by_assignee):
        assert [t["body"] for t in seen["tasks"]] == [as_stored(f"金子さん（{TASK_MAIL}）に見積書を送付")]
        assert seen["_revealed"] == [TASK_MAIL]
    # AND a leader of another department and the CEO viewing the sales team read it masked
    for leader, n in ((YAMADA, 3), (BOSS, 4)):
        team = call(ex, "view_team_tasks", {"target_department_id": "d-sales"}, user=leader, call_id=f"s{n}")
        assert team.ok, team
        (task,) = team.result["tasks"]
        assert TASK_MAIL not in task["body"] and "[EMAIL]" in task["body"]
        assert "_revealed" not in team.result


def test_the_same_person_in_two_organisations_reads_only_the_value_kept_in_each(ex, store):
    # GIVEN 鈴木 (the same user id in acme and globex) keeps a different number in each
    remember(ex, MEMO)
    remember(ex, "佐藤さんの携帯は 070-9999-0000 に変わったらしい", org=OTHER_ORG, n=2)
    # WHEN 鈴木 asks in each organisation
    here = recall(ex, "佐藤さんの携帯")
    there = recall(ex, "佐藤さんの携帯", org=OTHER_ORG, n=2)
    # THEN each reads its own organisation's value only
    assert MOBILE in here["_revealed"] and "070-9999-0000" not in here["_revealed"]
    assert there["_revealed"] == ["070-9999-0000"]


def test_a_purge_in_one_organisation_leaves_another_organisations_sealed_values(ex, store, vault):
    # GIVEN 鈴木 keeps a number in acme and in globex
    remember(ex, MEMO)
    remember(ex, "佐藤さんの携帯は 070-9999-0000 に変わったらしい", org=OTHER_ORG, n=2)
    globex_before = dict(docs(store, "memories", OTHER_ORG))
    # WHEN acme purges 鈴木's data
    counts = purge(store, ORG, SUZUKI)
    # THEN acme holds none of it, and globex's memory is as it was, still opening for its author
    assert counts["memories"] == 1 and docs(store, "memories") == {}
    assert docs(store, "memories", OTHER_ORG) == globex_before
    (doc,) = globex_before.values()
    assert vault.for_org(OTHER_ORG).decrypt(tokens(doc)[0].encode()) == b"070-9999-0000"
    assert recall(ex, "佐藤さんの携帯", org=OTHER_ORG)["_revealed"] == ["070-9999-0000"]


def test_a_goal_set_over_several_messages_keeps_its_values_sealed_and_its_owner_reads_them_back(ex, store):
    # GIVEN 鈴木 sets a goal over the usual four answers, naming a client's mobile and address
    title = f"佐藤さん（{MOBILE}）の案件を年内にまとめる💪"
    answers = [
        {"title": title},
        {"why": f"担当が変わるので、窓口を {MAIL} に一本化したい"},
        {"how": "週1で進捗を電話確認"},
        {"deadline": "年内"},
    ]
    for n, given in enumerate(answers, start=1):
        out = call(ex, "goal_registration", given, call_id=f"g{n}")
        assert out.ok, out
    (goal,) = docs(store, "goals").values()
    # THEN the store keeps neither value in clear, and no placeholder lost its value across the
    # four writes of the flow
    assert goal["status"] == "active"
    assert MOBILE not in as_text(goal) and MAIL not in as_text(goal)
    assert destroyed(goal) == []
    # WHEN 鈴木 asks how the goal stands THEN the title comes back as they said it, the number
    # given to the reply in clear (not 「（電話番号・非表示）」)
    listed = call(ex, "goal_progress_report", {}, call_id="p1").result
    assert [g["title"] for g in listed["goals"]] == [as_stored(title)]
    assert listed["_revealed"] == [MOBILE, MAIL]
    reported = call(ex, "goal_progress_report", {"progress_percent": 30}, call_id="p2").result
    assert reported["title"] == as_stored(title) and MOBILE in reported["_revealed"]
    # AND a leader viewing the team's goals reads it masked, and is given no value
    team = call(ex, "view_team_goals", {"target_department_id": "d-sales"}, user=BOSS, call_id="p3")
    assert team.ok, team
    (shown,) = team.result["goals"]
    assert MOBILE not in shown["title"] and "[PHONE]" in shown["title"]
    assert "_revealed" not in team.result
