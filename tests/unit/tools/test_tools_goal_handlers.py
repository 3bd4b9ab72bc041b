"""Goal tools: the multi-step goal-setting session, progress, deletion, the team's goals."""

from __future__ import annotations

from tool_fakes import ORG, ROOM, SENDER, call, docs

from shared_lib.collections import session_path

SESSION = session_path(ORG, f"{ORG}/{ROOM}/{SENDER}")


def register(ex, n, **params):
    return call(ex, "goal_registration", params, call_id=f"goal-{n}")


def test_given_no_flow_when_goal_registration_starts_then_a_draft_and_the_first_question(ex, store):
    out = register(ex, 1)
    assert out.ok and out.result["started"] is True and out.result["status"] == "draft"
    assert (out.result["next_step"], out.result["next_question"]) == ("title", "どんな目標を立てますか？")
    session = store.get(SESSION)
    assert session["mode"] == "multi_step_flow" and session["goal_flow"]["goal_id"] == out.result["goal_id"]


def test_given_a_flow_when_each_answer_arrives_then_fixed_logic_asks_the_next_and_activates_at_the_end(
    ex, store
):
    goal_id = register(ex, 1, title="資格を取る").result["goal_id"]
    step2 = register(ex, 2, why="業務の幅を広げたい")
    assert (step2.result["goal_id"], step2.result["next_step"], step2.result["started"]) == (
        goal_id,
        "how",
        False,
    )
    done = register(ex, 3, how="毎朝30分勉強する", deadline="来月末")
    assert done.result["status"] == "active" and done.result["next_step"] is None
    goal = docs(store, "goals")[goal_id]
    assert (goal["title"], goal["deadline"], goal["status"], goal["user_id"]) == (
        "資格を取る",
        "2026-02-28",
        "active",
        SENDER,
    )
    assert store.get(SESSION)["goal_flow"] is None and store.get(SESSION)["mode"] == "normal"


def test_a_goal_keeps_the_conversation_it_was_set_in_for_the_heartbeats_check_ins(ex, store):
    goal_id = call(
        ex, "goal_registration", {"title": "資格を取る"}, call_id="goal-ch-1", channel="chatwork"
    ).result["goal_id"]
    goal = docs(store, "goals")[goal_id]
    assert (goal["org_id"], goal["room_id"], goal["channel"]) == (ORG, ROOM, "chatwork")


def test_given_an_expired_flow_when_goal_registration_is_called_then_a_new_goal_starts(ex, store, clock):
    first = register(ex, 1, title="売上を伸ばす").result["goal_id"]
    clock.advance(minutes=31)
    again = register(ex, 2, title="英語を学ぶ")
    assert again.result["started"] is True and again.result["goal_id"] != first


def test_given_a_deadline_in_the_past_when_registered_then_refused(ex):
    out = register(ex, 1, title="x", deadline="2020-01-01")
    assert out.error_code == "validation_error" and out.result["field"] == "deadline"


def _active_goal(ex, title, n):
    return register(ex, n, title=title, why="w", how="h", deadline="月末").result["goal_id"]


def test_given_active_goals_when_progress_is_asked_then_listed_and_when_reported_then_recorded(ex, store):
    sales = _active_goal(ex, "売上目標", 1)
    _active_goal(ex, "資格取得", 2)
    listed = call(ex, "goal_progress_report", {}, call_id="p0")
    assert listed.ok and listed.result["count"] == 2
    out = call(
        ex,
        "goal_progress_report",
        {"goal_query": "売上", "progress_content": "商談3件", "progress_percent": 40},
        call_id="p1",
    )
    assert out.ok and (out.result["goal_id"], out.result["progress"]) == (sales, 40)
    goal = docs(store, "goals")[sales]
    assert goal["progress"] == 40 and goal["reports"][-1]["content"] == "商談3件"


def test_given_two_active_goals_when_progress_names_neither_then_a_clarification(ex):
    _active_goal(ex, "売上目標", 1)
    _active_goal(ex, "資格取得", 2)
    out = call(ex, "goal_progress_report", {"progress_percent": 10}, call_id="p1")
    assert out.result["clarification"] and sorted(out.result["options"]) == ["売上目標", "資格取得"]


def test_given_a_hundred_percent_report_then_the_goal_is_done(ex, store):
    goal = _active_goal(ex, "売上目標", 1)
    call(ex, "goal_progress_report", {"goal_id": goal, "progress_percent": 100}, call_id="p1")
    assert docs(store, "goals")[goal]["status"] == "done"


def test_given_a_goal_when_deleted_then_soft_deleted_and_only_by_its_owner(ex, store):
    goal = _active_goal(ex, "売上目標", 1)
    assert call(ex, "delete_goal", {"goal_id": goal}, user="u-tanaka1").error_code == "validation_error"
    out = call(ex, "delete_goal", {"goal_query": "売上"}, call_id="d1")
    assert out.ok and docs(store, "goals")[goal]["status"] == "deleted"


def test_given_team_members_goals_when_team_goals_are_viewed_then_only_that_department(ex, store):
    _active_goal(ex, "売上目標", 1)
    call(
        ex,
        "goal_registration",
        {"title": "品質", "why": "w", "how": "h", "deadline": "月末"},
        user="u-tanaka2",
        call_id="other",
    )
    out = call(ex, "view_team_goals", {})
    assert out.ok and [(g["owner"], g["title"]) for g in out.result["goals"]] == [("鈴木一郎", "売上目標")]
