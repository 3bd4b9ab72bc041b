"""Heartbeat tasks' store, tool and operator command (seed 001 §17, issue 38) on the in-memory
store: a due slot is taken once even by two ticks that both read the task due, a run whose turn
was never published is published again under the same turn, the tool keeps the instruction
masked and refuses a schedule it cannot keep in the persona's words, and an operator adds, lists
and removes a task."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from shared_lib.adapters.inproc_bus import InProcessBus
from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.cli import main
from shared_lib.features.heartbeat_tasks import cli as hb_cli
from shared_lib.features.heartbeat_tasks import steps_tick
from shared_lib.features.heartbeat_tasks import store as hb_store
from shared_lib.features.heartbeat_tasks.handlers import ScheduleHeartbeatTaskParams, schedule_heartbeat_task
from shared_lib.features.heartbeat_tasks.state_schedule import read
from shared_lib.tools.registry import ToolContext, ToolInputError
from shared_lib.turn.envelope import Turn
from shared_lib.wiring.composition import build_runtime

JST = timezone(timedelta(hours=9))
ORG = "acme"
NOW = datetime(2026, 11, 25, 10, 5, tzinfo=JST)
ENV = {"CHARTER_ENV": "test", "CHARTER_LLM": "none", "CHARTER_CHANNELS": "recording"}


class Clock:
    def __init__(self, at: datetime) -> None:
        self.now = at

    def __call__(self) -> datetime:
        return self.now


def runtime(at: datetime = NOW):
    clock = Clock(at)
    return build_runtime(ENV, store=MemoryStore(), clock=clock, bus=InProcessBus()), clock


def a_task(
    rt, said: str = "毎週月曜9時", text: str = "今週の締め切りをチームに共有して", task_id: str = "hb-1"
):
    doc = hb_store.new_task(
        task_id=task_id,
        org_id=ORG,
        creator="u-sato",
        instruction=text,
        schedule=read(said),
        where={"channel": "chatwork", "room_id": "room-eigyo"},
        now=rt.clock(),
        created_by="u-sato",
        cipher=rt.cipher(ORG),
    )
    rt.store.set(hb_store.task_path(ORG, task_id), doc)
    return doc


def received(rt) -> list[Turn]:
    return [Turn.from_message(d, a, rt.store) for topic, d, a, _ in rt.bus.published if topic == "received"]


def test_two_ticks_that_both_read_the_task_due_run_it_once() -> None:
    # GIVEN a Monday task come due, read by two ticks at once (a slow one and the next)
    rt, clock = runtime()
    a_task(rt)
    clock.now = datetime(2026, 11, 30, 9, 2, tzinfo=JST)
    (seen_by_one,) = hb_store.due(rt.store, clock.now)
    (seen_by_two,) = hb_store.due(rt.store, clock.now)
    # WHEN each claims the slot it read
    one = hb_store.claim_slot(rt.store, seen_by_one, clock.now)
    two = hb_store.claim_slot(rt.store, seen_by_two, clock.now)
    # THEN one run is recorded and the task moves to the next Monday
    assert one is not None and two is None
    assert [r["run_id"] for r in hb_store.runs(rt.store, ORG)] == ["hb-1-20261130T0000"]
    assert rt.store.get(hb_store.task_path(ORG, "hb-1"))["next_due_at"] == datetime(
        2026, 12, 7, 9, 0, tzinfo=JST
    )


def test_the_tick_publishes_the_creators_turn_once_and_a_later_call_finds_nothing_due() -> None:
    # GIVEN a task come due
    rt, clock = runtime()
    a_task(rt)
    clock.now = datetime(2026, 11, 30, 9, 0, tzinfo=JST)
    # WHEN the tick's task step runs twice in the slot (the tick's claim aside)
    first, second = steps_tick.run_due(rt), steps_tick.run_due(rt)
    # THEN one turn, the creator's, in the room the task answers in
    assert first == {"started": 1} and second == {}
    (turn,) = received(rt)
    assert (turn.user_id, turn.room_id, turn.channel) == ("u-sato", "room-eigyo", "chatwork")
    assert turn.turn_id == "t-hb-hb-1-20261130T0000"
    assert turn.inbound.text == "【定期タスク】今週の締め切りをチームに共有して"


def test_a_run_claimed_but_never_published_is_published_again_as_the_same_turn() -> None:
    # GIVEN a tick that claimed the slot and died before its publish
    rt, clock = runtime()
    a_task(rt)
    clock.now = datetime(2026, 11, 30, 9, 0, tzinfo=JST)
    (task,) = hb_store.due(rt.store, clock.now)
    assert hb_store.claim_slot(rt.store, task, clock.now) is not None
    # WHEN the next tick comes, twice
    clock.now += timedelta(minutes=5)
    assert steps_tick.run_due(rt) == {"republished": 1}
    assert steps_tick.run_due(rt) == {}
    # THEN the run's turn is published once, under the id the run names
    assert [t.turn_id for t in received(rt)] == ["t-hb-hb-1-20261130T0000"]


def test_a_run_of_a_task_removed_before_its_publish_is_given_up() -> None:
    rt, clock = runtime()
    a_task(rt)
    clock.now = datetime(2026, 11, 30, 9, 0, tzinfo=JST)
    (task,) = hb_store.due(rt.store, clock.now)
    hb_store.claim_slot(rt.store, task, clock.now)
    hb_store.remove(rt.store, ORG, "hb-1")
    assert steps_tick.run_due(rt) == {} and received(rt) == []
    assert hb_store.unpublished(rt.store) == []


def ctx(rt, *, dry_run: bool = False, call: str = "t-01-0-0") -> ToolContext:
    return ToolContext(
        store=rt.store,
        org_id=ORG,
        user_id="u-sato",
        room_id="room-eigyo",
        turn_id=call,
        now=rt.clock(),
        dry_run=dry_run,
        conversation_key=f"{ORG}/room-eigyo/u-sato",
        channel="chatwork",
        cipher=rt.cipher(ORG),
    )


def call(rt, schedule: str, instruction: str, **kw):
    params = ScheduleHeartbeatTaskParams(schedule=schedule, instruction=instruction)
    c = ctx(rt, **kw)
    if c.dry_run:
        return schedule_heartbeat_task(params, c, None)
    return rt.store.run_transaction(lambda txn: schedule_heartbeat_task(params, c, txn))


def test_the_tool_keeps_the_instruction_masked_and_a_redelivered_call_sets_one_task() -> None:
    # GIVEN an instruction with a phone number in it
    rt, _ = runtime()
    said = "毎月末の17時に、経費精算の締めを090-1234-5678の佐藤さんにも知らせて"
    # WHEN the dry run (the guardian's preview) and the call, delivered twice, run
    preview = call(rt, "毎月末の１７時", said, dry_run=True)
    out = call(rt, "毎月末の１７時", said)
    again = call(rt, "毎月末の１７時", said)
    # THEN the preview says when, one task is kept, its number masked
    assert preview["dry_run"] and preview["schedule"] == "毎月末 17:00"
    assert out["task_id"] == again["task_id"]
    (task,) = hb_store.list_tasks(rt.store, ORG)
    assert "090-1234-5678" not in json.dumps(task, ensure_ascii=False, default=str)
    assert "経費精算" in task["instruction"] and task["sealed"]
    assert task["next_due_at"] == datetime(2026, 11, 30, 17, 0, tzinfo=JST)


def test_the_creators_run_has_the_instruction_as_they_gave_it_and_without_the_key_masked() -> None:
    # GIVEN a task whose instruction holds a phone number, kept sealed
    rt, _ = runtime()
    said = "毎月末の17時に、経費精算の締めを090-1234-5678の佐藤さんにも知らせて"
    call(rt, "毎月末の17時", said)
    (task,) = hb_store.list_tasks(rt.store, ORG)
    # WHEN its run's turn is made with the vault's key, and without
    run_at = datetime(2026, 11, 30, 17, 0, tzinfo=JST)
    opened = steps_tick.run_turn(task, "hb-x-20261130T0800", run_at, rt.cipher(ORG))
    closed = steps_tick.run_turn(task, "hb-x-20261130T0800", run_at, None)
    # THEN the creator's own turn reads what they said; without the key it stays masked
    assert opened.inbound.text == "【定期タスク】" + said
    assert "090-1234-5678" not in closed.inbound.text and "経費精算" in closed.inbound.text


@pytest.mark.parametrize(
    ("schedule", "key"),
    [
        ("隔週の月曜", "schedule_unsupported"),
        ("毎月15日と月末", "schedule_several"),  # two schedules: one task each, said so
        ("毎朝6時", "schedule_quiet_hours"),
        ("そのうち", "schedule_unreadable"),
    ],
)
def test_the_tool_refuses_a_schedule_it_cannot_keep_in_the_persona_words(schedule, key) -> None:
    rt, _ = runtime()
    with pytest.raises(ToolInputError) as err:
        call(rt, schedule, "進捗を聞いて")
    assert err.value.key == key and err.value.field == "schedule"
    assert rt.persona.message(f"tool_error.{key}", said=schedule).endswith(("ウル！", "ウル🐺"))
    assert hb_store.list_tasks(rt.store, ORG) == []


def test_an_operator_adds_lists_and_removes_a_task(monkeypatch, capsys) -> None:
    # GIVEN the operator's command over a runtime
    rt, _ = runtime()
    monkeypatch.setattr(hb_cli, "runtime_for", lambda _args: rt)
    # WHEN a task is added, listed, removed, and removed again
    who = ["--org", ORG, "--user", "u-sato", "--room", "room-eigyo"]
    added = main(["heartbeat", "add", *who, "--schedule", "平日の朝８時半", "今日の期限のタスクを教えて"])
    assert added == 0 and "平日 8:30" in capsys.readouterr().out
    assert main(["heartbeat", "list", "--org", ORG, "--json"]) == 0
    (task,) = json.loads(capsys.readouterr().out)["tasks"]
    assert task["user_id"] == "u-sato" and task["created_by"] == "operator"
    assert main(["heartbeat", "remove", "--org", ORG, task["task_id"]]) == 0
    assert main(["heartbeat", "remove", "--org", ORG, task["task_id"]]) == 1
    # THEN nothing is left, and a schedule in the quiet hours is bad input
    assert hb_store.list_tasks(rt.store, ORG) == []
    assert (
        main(["heartbeat", "add", "--org", ORG, "--user", "u", "--room", "r", "--schedule", "毎晩23時", "x"])
        == 2
    )


def test_a_slot_is_named_in_utc_whatever_the_clock_zone() -> None:
    slot = datetime(2026, 12, 31, 9, 0, tzinfo=JST)
    assert (
        hb_store.run_id_for("hb-1", slot)
        == hb_store.run_id_for("hb-1", slot.astimezone(UTC))
        == "hb-1-20261231T0000"
    )


def test_a_task_whose_turn_cannot_be_built_is_given_up_and_the_others_still_run() -> None:
    # GIVEN two tasks come due, one written without its conversation's channel
    rt, clock = runtime()
    a_task(rt, task_id="hb-broken")
    rt.store.set(hb_store.task_path(ORG, "hb-broken"), {"channel": ""}, merge=True)
    a_task(rt, task_id="hb-good")
    clock.now = datetime(2026, 11, 30, 9, 0, tzinfo=JST)
    # WHEN the tick runs, and runs again
    first, again = steps_tick.run_due(rt), steps_tick.run_due(rt)
    # THEN the good one runs, the broken one is given up once (not retried every tick)
    assert first == {"started": 1, "unreachable": 1} and again == {}
    assert [t.turn_id for t in received(rt)] == ["t-hb-hb-good-20261130T0000"]
    assert hb_store.unpublished(rt.store) == []


def test_a_runs_own_turn_sets_no_task() -> None:
    # GIVEN a heartbeat run's turn whose model proposes another periodic task
    rt, _ = runtime()
    with pytest.raises(ToolInputError) as err:
        call(rt, "毎日17時", "日報を催促して", call="t-hb-hb-1-20261130T0000-0-0")
    # THEN it is refused in the persona's words, and nothing is set
    assert err.value.key == "heartbeat_nested"
    assert hb_store.list_tasks(rt.store, ORG) == []
