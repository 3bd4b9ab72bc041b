"""Authorization Gate (seed 000 §6.4): levels from the directory, never from the proposal;
minimum levels per tool; data and department access by the level table; fail closed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.layers import authorizer
from shared_lib.policy.authorization import authorize
from shared_lib.policy.directory import MemoryDirectory
from shared_lib.tools.registry import ToolRegistry
from shared_lib.turn.envelope import Turn
from shared_lib.turn.inbound import InboundMessage
from shared_lib.turn.proposal import Proposal
from shared_lib.wiring.composition import build_runtime
from shared_lib.wiring.features import tool_registry
from tests.unit.policy.policy_fakes import NOW, tool_call

SEED_LEVELS = {  # seed 000 §6.4.4 TOOL_REQUIRED_LEVELS
    "chatwork_task_create": 1,
    "chatwork_task_complete": 1,
    "chatwork_task_search": 1,
    "save_memory": 1,
    "query_memory": 1,
    "goal_registration": 2,
    "goal_progress_report": 2,
    "view_team_tasks": 3,
    "view_team_goals": 3,
    "view_all_users": 5,
    "view_salary_info": 6,
    "change_permission": 6,
}
# hq ─┬─ sales ─── sales_east ─── sales_east_tokyo        (three levels below the root)
#     ├─ dev
#     └─ secret_lab (top secret) ─── secret_team
DEPARTMENTS = {
    "hq": {"parent": None},
    "sales": {"parent": "hq"},
    "sales_east": {"parent": "sales"},
    "sales_east_tokyo": {"parent": "sales_east"},
    "dev": {"parent": "hq"},
    "secret_lab": {"parent": "hq", "classification": "top_secret"},
    "secret_team": {"parent": "secret_lab"},
}
TARGETS = ["sales", "sales_east", "sales_east_tokyo", "hq", "dev", "secret_lab", "secret_team"]
# which targets a user of department "sales" may see, by level
VISIBLE = {
    1: {"sales"},
    2: {"sales"},
    3: {"sales", "sales_east"},
    4: {"sales", "sales_east", "sales_east_tokyo"},
    5: {"sales", "sales_east", "sales_east_tokyo", "hq", "dev"},
    6: set(TARGETS),
}


def directory(level: int, **extra_users: dict[str, Any]) -> MemoryDirectory:
    users = {"me": {"level": level, "department_id": "sales"}, **extra_users}
    return MemoryDirectory.from_data(users=users, departments=DEPARTMENTS)


def check(proposal: Proposal, level: int, *, registry: ToolRegistry | None = None, **users: dict[str, Any]):
    return authorize(
        proposal,
        store=MemoryStore(),
        org_id="acme",
        user_id="me",
        registry=registry or tool_registry(),
        directory=directory(level, **users),
    )


@pytest.mark.parametrize("level", range(1, 7))
@pytest.mark.parametrize("tool", sorted(SEED_LEVELS))
def test_every_level_against_every_seed_tool(tool, level):
    # GIVEN a user of ``level`` WHEN they propose ``tool`` (no target)
    for registry in (tool_registry(), ToolRegistry([])):
        decision = check(tool_call(tool), level, registry=registry)
        # THEN the gate allows exactly when the level reaches the seed's minimum
        expected = ("allowed", "pass") if level >= SEED_LEVELS[tool] else ("denied", "level.insufficient")
        assert (decision.result, decision.reason_code) == expected
        assert decision.required_level == SEED_LEVELS[tool]


def test_an_unknown_tool_needs_level_two():
    assert check(tool_call("brand_new_tool"), 1).reason_code == "level.insufficient"
    assert check(tool_call("brand_new_tool"), 2).result == "allowed"


@pytest.mark.parametrize("level", range(1, 7))
@pytest.mark.parametrize("target", TARGETS)
def test_department_access_follows_the_level_table(level, target):
    decision = check(tool_call("query_memory", {"query": "x", "target_department_id": target}), level)
    if target in VISIBLE[level]:
        assert decision.result == "allowed"
    else:
        assert (decision.result, decision.reason_code) == ("denied", "department.no_access")


@pytest.mark.parametrize("level", range(1, 7))
@pytest.mark.parametrize("target", TARGETS)
def test_data_access_follows_the_level_table(level, target):
    decision = check(
        tool_call("chatwork_task_search", {"target_user_id": "them"}),
        level,
        them={"level": 2, "department_id": target},
    )
    if target in VISIBLE[level]:
        assert decision.result == "allowed"
    else:
        assert (decision.result, decision.reason_code) == ("denied", "data.no_access")


def test_own_data_is_always_visible_and_unknown_targets_never():
    assert check(tool_call("chatwork_task_search", {"target_user_id": "me"}), 1).result == "allowed"
    assert (
        check(tool_call("chatwork_task_search", {"target_user_id": "ghost"}), 6).reason_code
        == "data.no_access"
    )
    assert (
        check(tool_call("query_memory", {"query": "x", "target_department_id": "nowhere"}), 6).reason_code
        == "department.no_access"
    )


def test_top_secret_people_need_level_six_even_in_scope():
    secret_person = {"level": 2, "department_id": "sales", "classification": "top_secret"}
    assert (
        check(tool_call("chatwork_task_search", {"target_user_id": "spy"}), 5, spy=secret_person).reason_code
        == "data.no_access"
    )
    assert (
        check(tool_call("chatwork_task_search", {"target_user_id": "spy"}), 6, spy=secret_person).result
        == "allowed"
    )


def test_every_call_and_every_target_is_checked():
    two_calls = tool_call(
        "",
        calls=[
            {"tool_name": "save_memory", "parameters": {"content": "x"}},
            {"tool_name": "view_all_users", "parameters": {}},
        ],
    )
    assert check(two_calls, 4).reason_code == "level.insufficient"
    several = tool_call("query_memory", {"query": "x", "target_department_id": ["sales", "dev"]})
    assert check(several, 4).reason_code == "department.no_access"


def test_the_level_never_comes_from_the_proposal():
    # GIVEN a level-2 user whose proposal claims a higher level in every place it can
    claims = tool_call(
        "view_all_users",
        {"level": 6, "user_level": 6},
        reasoning={"intent_understanding": "このユーザーはレベル6の代表なので全員を見られる"},
    )
    # THEN the gate reads the directory
    decision = check(claims, 2)
    assert (decision.result, decision.user_level, decision.required_level) == ("denied", 2, 5)


def test_the_stricter_of_registry_and_seed_table_applies():
    from pydantic import BaseModel

    from shared_lib.tools.registry import ToolSpec

    class NoParams(BaseModel):
        pass

    lax = ToolRegistry(
        [ToolSpec("view_salary_info", "給与を見る", (), NoParams, lambda p, c, t: {}, min_level=1)]
    )
    assert check(tool_call("view_salary_info"), 5, registry=lax).reason_code == "level.insufficient"


def test_a_user_missing_from_the_directory_is_denied():
    decision = authorize(
        tool_call("save_memory", {"content": "x"}),
        store=MemoryStore(),
        org_id="acme",
        user_id="stranger",
        registry=tool_registry(),
    )
    assert (decision.result, decision.reason_code) == ("denied", "level.insufficient")


@pytest.mark.parametrize(
    "broken",
    [
        {"users": {"me": {"level": "admin", "department_id": "sales"}}, "departments": {}},
        {
            "users": {"me": {"level": 4, "department_id": "a"}, "t": {"level": 2, "department_id": "b"}},
            "departments": {"a": {"parent": "b"}, "b": {"parent": "a"}},
        },
    ],
)
def test_an_unreadable_directory_denies(broken):
    store = MemoryStore()
    for uid, doc in broken["users"].items():
        store.set(f"orgs/acme/users/{uid}", doc)
    for did, doc in broken["departments"].items():
        store.set(f"orgs/acme/departments/{did}", doc)
    decision = authorize(
        tool_call("chatwork_task_search", {"target_user_id": "t"}),
        store=store,
        org_id="acme",
        user_id="me",
        registry=tool_registry(),
    )
    assert (decision.result, decision.reason_code) == ("denied", "directory.unavailable")


class _BrokenStore(MemoryStore):
    def get(self, path: str) -> dict[str, Any] | None:
        raise ConnectionError("firestore is down")


def test_a_store_error_denies_and_alerts_the_admins():
    # GIVEN the authorizer layer over a store that cannot be read
    rt = build_runtime(
        {"CHARTER_ENV": "test", "CHARTER_LLM": "none", "CHARTER_CHANNELS": "recording"},
        store=_BrokenStore(),
        clock=lambda: NOW,
    )
    msg = InboundMessage(
        channel="http",
        org_id="acme",
        room_id="r1",
        user_id="me",
        text="x",
        message_id="m",
        event_id="e",
        received_at=NOW,
    )
    turn = Turn.from_inbound(msg)
    turn.proposal.proposal = tool_call("save_memory", {"content": "x"})
    # WHEN it runs
    outcome = authorizer.run(turn, rt)
    # THEN it denies with access_control_error, and an alert is published
    assert (outcome.outcome, outcome.reason_code) == ("denied", "directory.unavailable")
    assert [e.code for e in turn.errors] == ["access_control_error"]
    alerts = [attrs for topic, _, attrs, _ in rt.bus.published if topic == "events"]  # type: ignore[attr-defined]
    assert alerts and alerts[0]["code"] == "access_control_error"


def test_the_authorizer_run_again_on_a_redelivery_raises_its_alert_under_the_same_event_id():
    # GIVEN the authorizer (it runs without a claim) over a store that cannot be read
    rt = build_runtime(
        {"CHARTER_ENV": "test", "CHARTER_LLM": "none", "CHARTER_CHANNELS": "recording"},
        store=_BrokenStore(),
        clock=lambda: NOW,
    )
    msg = InboundMessage(
        channel="http",
        org_id="acme",
        room_id="r1",
        user_id="u-sato",
        text="佐藤です、メモ残しといて〜🙏",
        message_id="m2",
        event_id="e2",
        received_at=NOW,
    )
    turn = Turn.from_inbound(msg)
    turn.proposal.proposal = tool_call("save_memory", {"content": "来週の定例は木曜15時"})
    # WHEN the same turn's step runs twice (a redelivery) and another turn once
    for _ in range(2):
        authorizer.run(turn.model_copy(deep=True), rt)
    other = turn.model_copy(deep=True)
    other.turn_id = "01OTHERTURN00000000000000"
    authorizer.run(other, rt)
    # THEN the redelivery's alert carries the first one's event id (the observer stores it once)
    ids = [
        json.loads(data)["event_id"]
        for topic, data, _, _ in rt.bus.published  # type: ignore[attr-defined]
        if topic == "events"
    ]
    assert len(ids) == 3 and ids[0] == ids[1] != ids[2]


def test_a_text_answer_is_not_applicable():
    from tests.unit.policy.policy_fakes import text_answer

    assert check(text_answer("こんにちは"), 1).result == "not_applicable"


# -- a target person given by name (seed 000 §6.4.3 applies exactly as for an id) ---------------
def named_store() -> MemoryStore:
    from shared_lib.tools.directory import seed_directory

    store = MemoryStore()
    seed_directory(
        store,
        "acme",
        [
            {"user_id": "me", "name": "鈴木一郎", "level": 2, "department_id": "sales"},
            {"user_id": "u-taro", "name": "田中太郎", "level": 2, "department_id": "sales"},
            {"user_id": "u-hana", "name": "田中花子", "level": 2, "department_id": "dev"},
        ],
        {k: v["parent"] for k, v in DEPARTMENTS.items()},
    )
    return store


def by_store(proposal: Proposal):
    return authorize(proposal, store=named_store(), org_id="acme", user_id="me", registry=tool_registry())


def test_a_level_two_user_naming_someone_of_another_department_is_denied_as_by_id():
    # GIVEN a level-2 user of sales, and 田中花子 (u-hana) of dev
    by_id = by_store(tool_call("chatwork_task_search", {"target_user_id": "u-hana"}))
    # WHEN the target is given by name instead (her tasks, a task of hers deleted, her permission)
    named = [
        by_store(tool_call("chatwork_task_search", {"assignee_name": "田中花子さん"})),
        by_store(tool_call("delete_task", {"task_query": "見積書", "assignee_name": "田中花子"})),
        by_store(tool_call("change_permission", {"target_user_name": "田中花子", "new_level": 1})),
    ]
    # THEN it is denied the same way: same reason, same target
    assert by_id.result == "denied" and by_id.reason_code == "data.no_access"
    for decision in named[:2]:
        assert (decision.result, decision.reason_code) == ("denied", "data.no_access")
        assert decision.details["target_user_id"] == by_id.details["target_user_id"] == "u-hana"
    assert named[2].reason_code == "level.insufficient"  # change_permission needs level 6 first


def test_asking_a_colleague_of_another_department_for_a_task_reads_none_of_their_data():
    # a task created for 田中花子 (dev) gives her work; it shows the sales user nothing of hers
    decision = by_store(
        tool_call("chatwork_task_create", {"body": "見積書", "assignee_name": "田中花子さん"})
    )
    assert decision.result == "allowed"
    # while reading her tasks is data access, and is denied
    assert by_store(tool_call("chatwork_task_search", {"assignee_name": "田中花子"})).result == "denied"


@pytest.mark.parametrize("name", ["田中太郎", "俺", "田中"])
def test_a_name_within_scope_or_not_resolved_to_one_person_is_allowed_by_the_gate(name):
    # 田中太郎 is in sales, 俺 is the sender, 田中 is two people: the handler asks which one
    decision = by_store(tool_call("chatwork_task_create", {"body": "見積書", "assignee_name": name}))
    assert decision.result == "allowed"


def test_a_directory_that_cannot_be_read_while_resolving_a_name_denies():
    class Broken(MemoryStore):
        def query(self, *args, **kwargs):
            raise OSError("firestore down")

    store = Broken()
    store.set("orgs/acme/users/me", {"name": "鈴木一郎", "level": 2, "department_id": "sales"})
    decision = authorize(
        tool_call("chatwork_task_search", {"assignee_name": "田中花子"}),
        store=store,
        org_id="acme",
        user_id="me",
        registry=tool_registry(),
    )
    assert (decision.result, decision.reason_code) == ("denied", "directory.unavailable")
