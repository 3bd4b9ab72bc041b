"""A past date the user confirmed is done as confirmed (seed 000: a past date is asked about,
never silently moved; a year-less date is the next one unless its written weekday pins the
past day, as here: 2025-01-10 was a Friday). The guardian asks with the reading shown; 「はい」 creates the task on
that very date; 「いいえ」 creates nothing; a past date nobody confirmed is still refused."""

from __future__ import annotations

import pytest

from tests.unit.policy.policy_fakes import ORG, Pipeline, pipeline, tool_call

ASK = "田中さんに1/10(金)までに見積書を作成するタスクをお願い"  # said on 2025-01-15: five days ago
PAST_TASK = tool_call(
    "chatwork_task_create",
    {"body": "見積書を作成", "assignee_name": "田中", "limit_date": "1/10(金)"},
)


def tasks(pipe: Pipeline) -> list[dict]:
    return [doc for _, doc in pipe.rt.store.query(f"orgs/{ORG}/tasks")]


@pytest.fixture
def pipe(monkeypatch: pytest.MonkeyPatch) -> Pipeline:
    p = pipeline(monkeypatch)
    p.script[ASK] = PAST_TASK
    return p


def test_a_past_date_is_asked_about_with_its_reading_and_done_as_confirmed(pipe):
    # WHEN a task is asked for with a date five days ago
    question = pipe.say(ASK)
    # THEN nothing is done yet: the question shows the date as read, not moved to next year
    assert "1月10日（金）" in question and "過去" in question
    assert tasks(pipe) == []
    # WHEN the user confirms
    pipe.say("はい")
    # THEN the task exists once, on the date the user confirmed
    [task] = tasks(pipe)
    assert str(task.get("limit_date", "")).startswith("2025-01-10"), task


def test_no_creates_nothing(pipe):
    pipe.say(ASK)
    pipe.say("いいえ")
    assert tasks(pipe) == []


def test_a_past_date_nobody_confirmed_is_still_refused_by_the_handler():
    from datetime import datetime

    from shared_lib.policy.reasons import GUARDIAN_REASONS
    from shared_lib.tools.normalize import JST, PAST_DATE, normalize_date
    from shared_lib.tools.registry import ToolInputError

    # the handlers' code is the guardian's, a confirmation of it
    assert GUARDIAN_REASONS[PAST_DATE].action == "confirm"
    now = datetime(2025, 1, 15, 10, 0, tzinfo=JST)
    with pytest.raises(ToolInputError):
        normalize_date("1/10(金)", now)  # approved for another reason, or not at all: refused
    assert normalize_date("1/10(金)", now, allow_past=True) == "2025-01-10"


def test_an_approval_for_another_reason_does_not_let_a_past_date_through(pipe):
    from shared_lib.layers.executor import _confirmed
    from shared_lib.turn.envelope import Turn

    turn = Turn.model_validate(
        {
            "conversation_key": "k",
            "org_id": ORG,
            "user_id": "u1",
            "room_id": "r1",
            "channel": "http",
            "inbound": {
                "channel": "http",
                "org_id": ORG,
                "room_id": "r1",
                "user_id": "u1",
                "text": "はい",
                "message_id": "m",
                "event_id": "e",
                "received_at": "2025-01-15T10:00:00+09:00",
            },
        }
    )
    turn.proposal.approval = {"approved": True, "reasons": ["confidence.low"]}
    assert PAST_TASK and _confirmed(turn) == frozenset({"confidence.low"})
    turn.proposal.approval = {"approved": False, "reasons": ["date.past"]}
    assert _confirmed(turn) == frozenset()
