"""A periodic task given in conversation (seed 001 §17, issue 38) over the in-process chain with
a moved clock: the guardian asks before it is set, the schedule is read by fixed logic, and the
heartbeat runs it at its next due time as a turn of its creator, judged like any turn, once per
due slot however often the tick is called; never in the quiet hours."""

from __future__ import annotations

import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "loop"))
from loop_fakes import ORG, Chain, Clock, text, tool_call

from shared_lib.features.heartbeat_tasks import store as hb_store
from shared_lib.features.heartbeat_tasks.steps_tick import HEARTBEAT_MARKER
from shared_lib.ops import due_tasks
from shared_lib.turn.envelope import Turn

JST = timezone(timedelta(hours=9))
GIVEN_AT = datetime(2026, 11, 25, 10, 5, tzinfo=JST)  # Wednesday morning
MONDAY_9 = datetime(2026, 11, 30, 9, 0, tzinfo=JST)
ASK = "毎週月曜9時に、今週の締め切りをチームに共有して🙏"
SET = tool_call(
    "schedule_heartbeat_task", {"schedule": "毎週月曜9時", "instruction": "今週の締め切りをチームに共有して"}
)
SHARED = "今週の締め切りは「見積書を送る」ウル🐺"


def heartbeat_turns(chain: Chain) -> list[Turn]:
    """The completed turns the heartbeat started."""
    return [
        Turn.from_message(data, attrs, chain.rt.store)
        for topic, data, attrs, _ in chain.rt.bus.published  # type: ignore[attr-defined]
        if topic == "completed" and attrs["turn_id"].startswith("t-hb-")
    ]


@pytest.fixture
def chain() -> Chain:
    return Chain([SET, text(SHARED), text(SHARED)], clock=Clock(GIVEN_AT))


def given_a_task(chain: Chain) -> dict:
    ask, paused = chain.say(ASK)
    assert paused.response.kind == "confirm", ask  # the guardian asks before it is set
    assert hb_store.list_tasks(chain.rt.store, ORG) == []
    _done, resumed = chain.say("はい")
    assert resumed.execution.results[0].tool_name == "schedule_heartbeat_task"
    assert resumed.execution.results[0].ok
    (task,) = hb_store.list_tasks(chain.rt.store, ORG)
    return task


def test_a_task_given_in_conversation_is_asked_about_then_kept_as_its_creators(chain: Chain) -> None:
    # GIVEN a person asks for a weekly task WHEN they answer the guardian's question yes
    task = given_a_task(chain)
    # THEN the task is theirs, in their room, with the schedule read by fixed logic
    assert (task["user_id"], task["room_id"], task["channel"]) == ("u1", "r1", "http")
    assert task["schedule_text"] == "毎週月曜 9:00"
    assert task["next_due_at"] == MONDAY_9
    assert task["instruction"] == "今週の締め切りをチームに共有して"


def test_the_task_runs_at_its_next_due_time_once_as_its_creators_judged_turn(chain: Chain) -> None:
    # GIVEN the task set on Wednesday
    given_a_task(chain)
    clock: Clock = chain.rt.clock  # type: ignore[assignment]
    # WHEN the heartbeat ticks before it is due THEN nothing runs
    clock.now = MONDAY_9 - timedelta(minutes=5)
    assert due_tasks.run(chain.rt)["tasks"] == {}
    assert heartbeat_turns(chain) == []
    # WHEN it ticks at its due time, and the scheduler calls the same slot again
    clock.now = MONDAY_9 + timedelta(minutes=1)
    first = due_tasks.run(chain.rt)
    again = due_tasks.run(chain.rt)
    # and the next tick comes
    clock.now = MONDAY_9 + timedelta(minutes=6)
    later = due_tasks.run(chain.rt)
    # THEN it ran once, as u1's turn in u1's room, judged by the guardian and the gate
    assert first["tasks"] == {"started": 1} and again["skipped"] == "done" and later["tasks"] == {}
    (run,) = heartbeat_turns(chain)
    assert (run.user_id, run.room_id) == ("u1", "r1")
    assert run.inbound.text == HEARTBEAT_MARKER + "今週の締め切りをチームに共有して"
    assert run.guardian is not None and run.guardian.action == "allow"
    assert chain.replies()[-1] == SHARED
    # and it is recorded, and due again the next Monday
    (record,) = hb_store.runs(chain.rt.store, ORG)
    assert record["published"] is True and record["turn_id"] == run.turn_id
    (task,) = hb_store.list_tasks(chain.rt.store, ORG)
    assert task["runs"] == 1 and task["next_due_at"] == MONDAY_9 + timedelta(days=7)


def test_a_task_due_while_the_heartbeat_was_quiet_runs_once_when_it_may_speak(chain: Chain) -> None:
    # GIVEN a daily 22:30 task, and the heartbeat's ticks came only from 23:10 (quiet hours)
    chain.steps[:] = [
        tool_call("schedule_heartbeat_task", {"schedule": "毎晩22時半", "instruction": "日報を催促して"})
    ]
    chain.steps += [text("日報の提出をお願いしますウル🐺")]
    given_a_task(chain)
    clock: Clock = chain.rt.clock  # type: ignore[assignment]
    # WHEN the ticks of the quiet night come
    for minutes in range(0, 8 * 60 + 50, 5):  # 23:10 to 07:55
        clock.now = datetime(2026, 11, 25, 23, 10, tzinfo=JST) + timedelta(minutes=minutes)
        assert due_tasks.run(chain.rt).get("quiet") is True
    assert heartbeat_turns(chain) == []
    # THEN the first tick after 08:00 runs it once (not once per slot missed), due again tonight
    clock.now = datetime(2026, 11, 26, 8, 0, tzinfo=JST)
    assert due_tasks.run(chain.rt)["tasks"] == {"started": 1}
    assert len(heartbeat_turns(chain)) == 1
    (task,) = hb_store.list_tasks(chain.rt.store, ORG)
    assert task["next_due_at"] == datetime(2026, 11, 26, 22, 30, tzinfo=JST)


def test_a_phone_number_in_the_task_is_kept_sealed_and_its_run_reads_it_as_said() -> None:
    # GIVEN a task whose instruction names a phone number, given in conversation (the model reads
    # the number as the turn's placeholder, as it always does)
    said = "経費精算の締めを090-1234-5678の佐藤さんにも知らせて"
    proposed = {"schedule": "毎月末の17時", "instruction": "経費精算の締めを[PHONE_1]の佐藤さんにも知らせて"}
    # the turn's vault of what the person said expires by the wall clock: the chain keeps real time here
    chain = Chain(
        [tool_call("schedule_heartbeat_task", proposed), text(SHARED)], clock=Clock(datetime.now(JST))
    )
    ask, paused = chain.say("毎月末の17時に、" + said)
    assert paused.response.kind == "confirm", ask
    chain.say("はい")
    (task,) = hb_store.list_tasks(chain.rt.store, ORG)
    # THEN the store keeps it masked, the number sealed beside it
    assert "090-1234-5678" not in str(task) and task["sealed"]
    # WHEN it comes due THEN its run is its creator's turn with the instruction as they said it
    chain.rt.clock.now = task["next_due_at"] + timedelta(minutes=1)  # type: ignore[attr-defined]
    assert due_tasks.run(chain.rt)["tasks"] == {"started": 1}
    (run,) = heartbeat_turns(chain)
    assert run.inbound.text == HEARTBEAT_MARKER + said


@pytest.mark.parametrize(
    ("said", "schedule", "sentence"),
    [
        # in the quiet hours, as people say a night time
        ("毎晩2時にバックアップの結果を教えて", "毎晩2時", "静かにしている時間"),
        ("平日の夜11時半に日報を催促しといて🙏", "平日の23:30", "静かにしている時間"),
        ("毎朝７時に天気を共有して", "毎朝７時", "静かにしている時間"),
        # a time nobody can read
        ("そのうち気が向いたら在庫をチェックしてや", "そのうち気が向いたら", "いつのことか分からなかった"),
        # a rhythm this heartbeat does not keep
        ("3時間おきに問い合わせ件数を報告して", "3時間おき", "まだ覚えられない"),
    ],
)
def test_a_schedule_it_cannot_keep_is_refused_before_any_question(
    said: str, schedule: str, sentence: str
) -> None:
    # GIVEN the model proposes a periodic task with a schedule the heartbeat cannot keep
    chain = Chain(
        [tool_call("schedule_heartbeat_task", {"schedule": schedule, "instruction": said})],
        clock=Clock(GIVEN_AT),
    )
    # WHEN the person asks for it
    reply, turn = chain.say(said)
    # THEN they are told why at once, in the persona's words, and asked nothing
    assert turn.response.kind == "clarify", reply
    assert sentence in reply and "ウル" in reply
    assert "schedule" not in reply and "heartbeat" not in reply
    # and nothing waits for a 「はい」: no pending action, no job, no task
    session = chain.rt.store.get(f"orgs/{ORG}/sessions/{turn.conversation_key}") or {}
    assert not session.get("pending_actions") and not session.get("pending_action")
    assert hb_store.list_tasks(chain.rt.store, ORG) == []
    # WHEN they say 「はい」 anyway THEN nothing is set either
    chain.say("はい")
    assert hb_store.list_tasks(chain.rt.store, ORG) == []


def test_a_schedule_it_can_keep_is_still_asked_about_first(chain: Chain) -> None:
    # GIVEN a readable weekly schedule WHEN it is asked for THEN the guardian's question comes
    reply, turn = chain.say(ASK)
    assert turn.response.kind == "confirm", reply
    assert hb_store.list_tasks(chain.rt.store, ORG) == []
