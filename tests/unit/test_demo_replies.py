"""The in-process demo (``charter demo``) through every layer with the scripted model: every
reply is there and none shows a mask placeholder, an internal tool or parameter name or an
ISO date (issue 18's leak test, over the demo)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from infra import demo_cli
from shared_lib.adapters.sqlite_store import SQLiteStore
from shared_lib.demo_data import CONVERSATION, DEMO_ORG, MULTI_STEP_TEXT, ROUTED_TEXT
from tests.conftest import DemoRun


def test_leaks_names_each_thing_a_user_must_not_read():
    assert demo_cli.leaks("「アナウンスの送信」を11月25日（水）に送ったウル🐺") == []
    assert demo_cli.leaks("電話は[PHONE_1]、メールは[EMAIL]ウル") == ["[PHONE_1]", "[EMAIL]"]
    assert demo_cli.leaks("announceは注意が必要です") == ["announce"]
    assert demo_cli.leaks("assignee_name、limit_dateを教えて") == ["assignee_name", "limit_date"]
    assert demo_cli.leaks("期限は2026-11-25ウル") == ["2026-11-25"]


@pytest.fixture
def demo_keep(demo_run_once: DemoRun) -> Path:
    """Where the session's demo run keeps its store (the tests here only read it)."""
    return demo_run_once.keep


@pytest.fixture
def demo_run(demo_run_once: DemoRun) -> tuple[list[dict], dict]:
    """The embedded demo with the built-in scripted model (``charter demo --json``), run once for
    the session (the tests only read it): its turns as printed, and the whole of what it printed."""
    return demo_run_once.printed["turns"], demo_run_once.printed


def test_every_demo_reply_is_there_and_leaks_nothing(demo_run):
    # WHEN the embedded demo runs with the built-in scripted model
    turns, printed = demo_run
    # THEN every turn has a reply, and no reply shows what a user must never read
    assert len(turns) == len(CONVERSATION) == len(printed["turns"])
    assert all(t["reply"] for t in turns), [t["turn_id"] for t in turns if not t["reply"]]
    assert {t["turn_id"]: demo_cli.leaks(t["reply"]) for t in turns if demo_cli.leaks(t["reply"])} == {}
    # AND the replies the issue quoted read in Japanese now
    replies = "\n".join(t["reply"] for t in turns)
    # (announcing to everyone is confirmed twice for its recipients, seed 000 §5.3.3b: the reason
    # says so; announce itself is no dangerous operation, so no 「注意が必要な操作」)
    assert (
        "全員に送ることになるウル\n\n【操作の要約】\nアナウンスの送信（" in replies and "「好み」" in replies
    )
    assert "「権限の変更」は自動では実行できない操作ウル" in replies


def test_the_demo_has_a_turn_of_two_steps_that_completes_the_task_once(demo_run, demo_keep):
    _turns, printed = demo_run
    # GIVEN 田中 has two open tasks (the demo asked for 見積書 and 資料作成 earlier)
    (multi,) = [t for t in printed["turns"] if t["text"] == MULTI_STEP_TEXT]
    # THEN his turn took two steps, search then complete, each allowed, and stopped done
    steps = multi["steps"]
    assert [s["step"] for s in steps] == [1, 2] and multi["loop"]["stop_reason"] == "done"
    assert [[c["tool_name"] for c in s["proposal"]["tools"]] for s in steps] == [
        ["chatwork_task_search"],
        ["chatwork_task_complete"],
    ]
    assert [(s["verdict"]["action"], s["authorization"]["result"]) for s in steps] == [
        ("allow", "allowed")
    ] * 2
    found = steps[0]["results"][0]["shown"]["tasks"]
    assert sorted(t["body"] for t in found) == ["見積書を作成", "資料作成"]
    assert all("-" not in str(t["limit_date"]) for t in found)  # shown as a user reads a date
    # AND one reply was sent for the turn (one send receipt, at its last step)
    store = SQLiteStore(demo_keep / "demo.sqlite")
    sent = [key for key, _ in store.query(f"orgs/{DEMO_ORG}/send_receipts") if multi["turn_id"] in key]
    assert multi["reply"] and sent == [f"{multi['turn_id']}-1"]
    # AND the one 資料 task was completed exactly once across the whole demo
    completed = [
        r["shown"]["body"]
        for t in printed["turns"]
        for s in t["steps"]
        for r in s["results"]
        if r["tool"] == "chatwork_task_complete" and r["ok"]
    ]
    assert completed == ["資料作成"]
    status = {d["body"].split("\n")[0]: d["status"] for _, d in store.query(f"orgs/{DEMO_ORG}/tasks")}
    assert status["資料作成"] == "done" and status["見積書を作成"] == "open"


def test_the_demo_has_a_turn_the_rules_route_and_every_turn_shows_its_steps(demo_run):
    _turns, printed = demo_run
    (routed,) = [t for t in printed["turns"] if t["text"] == ROUTED_TEXT]
    assert routed["route"] == {"initial_route": "OPS", "source": "rules", "rule_id": "ops.server_restart"}
    assert routed["reply"] and demo_cli.leaks(routed["reply"]) == []
    # every turn shows at least its one step, with its number and verdict
    assert all(
        t["steps"] and t["steps"][0]["step"] == 1 and t["steps"][0]["verdict"] for t in printed["turns"]
    )


def test_the_text_output_prints_the_steps_of_the_multi_step_turn_on_one_line(tmp_path, capsys):
    demo_cli._embedded(argparse.Namespace(keep=str(tmp_path / "demo"), json=False, stack=False))
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.strip().startswith("steps:")]
    assert lines == [
        "   steps: 1 chatwork_task_search allow/allowed ok → 2 chatwork_task_complete allow/allowed ok  · stop done"
    ]
    assert "   route: OPS by rules (ops.server_restart)" in out


def test_every_demo_turn_shows_its_agent_state_one_transition_at_most_and_its_approval_events(demo_run):
    _turns, printed = demo_run
    five = {"goal", "why_now", "constraints", "plan_brief", "open_questions"}
    for t in printed["turns"]:
        # THEN each turn carries the agent state's five, at most one transition and its approval events
        assert five <= set(t["agent_state"]), t["turn_id"]
        assert len(t["transition"]) <= 1 and isinstance(t["approval_events"], list)
        assert all(e["event"].startswith("approval.") and "job_id" in e for e in t["approval_events"])
    # AND the scripted model filled the state: the first request's goal, plan and the code's move
    first = printed["turns"][0]
    assert "見積書" in first["agent_state"]["goal"] and first["agent_state"]["plan_brief"]
    assert first["transition"] == [
        {"from_step": "PLANNING", "to_step": "EXECUTION", "by": "code", "reason": "tool.executed"}
    ]
    # AND the announcement's confirmation waits for approval; the two-step turn took one transition
    (announce,) = [t for t in printed["turns"] if t["kind"] == "confirm" and "アナウンス" in t["text"]]
    assert announce["agent_state"]["step"] == "AWAITING_APPROVAL" and announce["agent_state"]["pending_gate"]
    (multi,) = [t for t in printed["turns"] if t["text"] == MULTI_STEP_TEXT]
    assert len(multi["steps"]) == 2 and len(multi["transition"]) == 1
    assert [r["reason"] for r in multi["refused_transitions"]] == ["second_transition"]
