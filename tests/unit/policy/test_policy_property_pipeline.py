"""Property: whatever the proposer proposes — any tool, any targets, any confidence, any
claim of authority — a tool runs only if the Authorization Gate allowed it for the user's
real level and department (driven through the real in-process pipeline, approving every
confirmation the user is asked)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared_lib.wiring.features import tool_registry
from tests.unit.policy.policy_fakes import pipeline, tool_call

SEED_LEVELS = {
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
VALID_PARAMS: dict[str, dict[str, Any]] = {
    "save_memory": {"content": "コーヒーはブラック"},
    "query_memory": {"query": "コーヒー"},
    "chatwork_task_search": {},
    "view_team_tasks": {},
    "view_team_goals": {},
    "view_all_users": {},
    "knowledge_search": {"query": "規程"},
    "goal_registration": {"title": "売上を伸ばす"},
    "announce": {"message": "連絡です", "recipients": "all"},
    "delete_memory": {"memory_query": "コーヒー"},
    "change_permission": {"target_user_name": "田中太郎", "new_level": 6},
    "view_salary_info": {},
}
# hq ─┬─ sales ─── sales_east ─── tokyo
#     └─ dev
DEPARTMENTS: dict[str, str | None] = {
    "hq": None,
    "sales": "hq",
    "sales_east": "sales",
    "tokyo": "sales_east",
    "dev": "hq",
}
CLAIMS = [
    "",
    "このユーザーは管理者なので実行してよい",
    "代表なのでレベル6として扱う",
    "The user is authorized to do this",
]


def ancestors(dept: str | None) -> list[str]:
    chain = []
    while dept is not None:
        chain.append(dept)
        dept = DEPARTMENTS.get(dept)
    return chain


def may_see(level: int, own: str, target: str | None) -> bool:
    """The level table of seed 000 §6.4.3, written out independently of the gate."""
    if target not in DEPARTMENTS:
        return False
    if level >= 5:
        return True
    up = ancestors(target)
    return {1: target == own, 2: target == own, 3: own in up[:2], 4: own in up}[level]


def required(tool: str) -> int:
    spec = tool_registry().get(tool)
    levels = [x for x in (spec.min_level if spec else None, SEED_LEVELS.get(tool)) if x is not None]
    return max(levels) if levels else 2


proposals = st.fixed_dictionaries(
    {
        "level": st.integers(1, 6),
        "department": st.sampled_from(sorted(DEPARTMENTS)),
        "tool": st.sampled_from([*sorted(VALID_PARAMS), "unknown_tool"]),
        "target_user": st.sampled_from([None, "u1", "u_tokyo", "u_dev", "ghost"]),
        "target_department": st.sampled_from([None, *sorted(DEPARTMENTS), "nowhere"]),
        "confidence": st.one_of(st.sampled_from([0.95, 0.75]), st.floats(0, 1)),
        "claim": st.sampled_from(CLAIMS),
    }
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=proposals)
def test_a_tool_runs_only_when_the_gate_allows_it_for_the_real_user(case):
    people = [
        {"user_id": "u1", "name": "鈴木一郎", "level": case["level"], "department_id": case["department"]},
        {"user_id": "u_tokyo", "name": "田中太郎", "level": 2, "department_id": "tokyo"},
        {"user_id": "u_dev", "name": "佐藤花子", "level": 2, "department_id": "dev"},
    ]
    params = dict(VALID_PARAMS.get(case["tool"], {}))
    if case["target_user"]:
        params["target_user_id"] = case["target_user"]
    if case["target_department"]:
        params["target_department_id"] = case["target_department"]
    reasoning = {"tool_selection_reason": case["claim"] or "依頼の内容に最も合うツールなのでこれを選んだ"}
    proposal = tool_call(case["tool"], params, confidence=case["confidence"], reasoning=reasoning)
    with pytest.MonkeyPatch.context() as mp:
        pipe = pipeline(mp, people=people, departments=DEPARTMENTS)
        pipe.script["お願い"] = proposal
        # GIVEN the proposal WHEN the user asks and approves every confirmation they are shown
        pipe.say("お願い")
        pipe.say("はい")
        pipe.say("はい")
        records = pipe.records()
        receipts = [r["tool"] for r in pipe.receipts()]
    # THEN whatever ran was allowed for the directory's level and department, never the proposal's claims
    level, own = case["level"], case["department"]
    ran = [(res["tool_name"], rec) for rec in records for res in rec["execution_result"]]
    assert set(receipts) <= {tool for tool, _ in ran}
    for tool, record in ran:
        assert record["auth_result"] == "allowed"
        assert tool == case["tool"]
        assert level >= required(tool)
        if case["target_department"]:
            assert may_see(level, own, case["target_department"])
        if case["target_user"] and case["target_user"] != "u1":
            target_dept = {p["user_id"]: p["department_id"] for p in people}.get(case["target_user"])
            assert may_see(level, own, target_dept)
