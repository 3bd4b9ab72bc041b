"""The scripted model's heartbeat rules (infra/fake_llm/heartbeat.py): a recurring request sets a
task with the schedule as said, a run's turn reads the creator's tasks, and a one-off deadline or a
task for someone else stays with its own rule."""

from __future__ import annotations

import pytest

from infra.fake_llm.scripted import proposal_rule_for, propose


@pytest.mark.parametrize(
    ("said", "schedule", "instruction"),
    [
        (
            "毎週月曜9時に、今週の締め切りをチームに共有して",
            "毎週月曜9時",
            "今週の締め切りをチームに共有して",
        ),
        ("平日の朝８時半に今日の期限のタスクを教えて🙏", "平日の朝８時半", "今日の期限のタスクを教えて🙏"),
        ("月末の17時に経費精算の締めを周知して", "月末の17時", "経費精算の締めを周知して"),
        (
            "月曜と木曜の朝に今週の締め切りをチームに共有して",
            "月曜と木曜の朝",
            "今週の締め切りをチームに共有して",
        ),
        (
            "毎月最終営業日の17時に経費精算のリマインドをして",
            "毎月最終営業日の17時",
            "経費精算のリマインドをして",
        ),
    ],
)
def test_a_recurring_request_sets_a_heartbeat_task_with_the_schedule_as_said(
    said, schedule, instruction
) -> None:
    (call,) = propose(said)["tool_calls"]
    assert call["tool_name"] == "schedule_heartbeat_task"
    assert call["parameters"] == {"schedule": schedule, "instruction": instruction}


@pytest.mark.parametrize(
    ("said", "rule"),
    [
        ("【定期タスク】今週の締め切りをチームに共有して", "heartbeat_run"),
        ("山田さんに議事録の共有を月末までにお願い", "task_create"),
        ("毎月第2金曜に締切が前倒しになるって覚えて", "save_memory"),
    ],
)
def test_a_run_and_what_is_not_a_recurring_request(said, rule) -> None:
    assert proposal_rule_for(said).name == rule
