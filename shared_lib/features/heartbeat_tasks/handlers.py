"""``schedule_heartbeat_task``: a periodic task given in conversation (seed 001 §17,
「毎週月曜9時に、今週の締め切りをチームに共有して」).

The LLM proposes the schedule as said and the instruction; the schedule is read here by fixed
logic (``state_schedule.read``), never taken from the model's opinion of it, and a schedule
this heartbeat cannot keep is refused with its reason. The task is written inside the
executor's effect transaction, owned by the person who gave it: each run is that person's turn.
The instruction is kept as a person's kept text is (``privacy.sealing``: masked, its values
sealed with the vault's key), opened again only for its creator's own run.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from shared_lib.features.heartbeat_tasks import state_schedule, store
from shared_lib.ports import Transaction
from shared_lib.tools.handlers.base import Params, doc_id, preview, require_text, writer
from shared_lib.tools.registry import PrecheckReads, ToolContext, ToolInputError

TOOL = "schedule_heartbeat_task"
RUN_TURN_PREFIX = "t-hb-"  # a run's turn (``steps_tick.turn_id_for``; this floor does not import it)


class ScheduleHeartbeatTaskParams(Params):
    schedule: str = Field(
        min_length=1,
        max_length=80,
        description="いつ繰り返すか、言われたとおりに（例: 毎週月曜9時、平日の朝8:30、月末）",
    )
    instruction: str = Field(
        min_length=1, max_length=500, description="そのたびにすること（例: 今週の締め切りをチームに共有する）"
    )


def read_schedule(said: str) -> state_schedule.Schedule:
    """The schedule ``said``, or the ``ToolInputError`` the person reads."""
    try:
        return state_schedule.read(said)
    except state_schedule.ScheduleError as exc:
        if exc.code == "schedule.several":  # 「毎週月曜9時と17時」「毎月15日と月末」: one task each
            raise ToolInputError(str(exc), key="schedule_several", field="schedule", said=said) from exc
        if exc.code == "schedule.unsupported":
            raise ToolInputError(str(exc), key="schedule_unsupported", field="schedule", said=said) from exc
        if exc.code == "schedule.quiet_hours":
            raise ToolInputError(str(exc), key="schedule_quiet_hours", field="schedule", said=said) from exc
        raise ToolInputError(str(exc), key="schedule_unreadable", field="schedule", said=said) from exc


def precheck(p: ScheduleHeartbeatTaskParams, reads: PrecheckReads) -> None:
    """Before the confirmation is asked: a schedule this heartbeat cannot keep (unreadable, in
    the quiet hours, unsupported) is refused at once, not after 「はい」."""
    read_schedule(require_text(p.schedule, "schedule"))
    require_text(p.instruction, "instruction")


def schedule_heartbeat_task(
    p: ScheduleHeartbeatTaskParams, ctx: ToolContext, txn: Transaction | None
) -> dict[str, Any]:
    if ctx.job_id:
        raise ToolInputError("a delegated job sets no periodic task", key="job_nested", field="schedule")
    if ctx.turn_id.startswith(RUN_TURN_PREFIX):  # a run sets no task of its own: no task breeds tasks
        raise ToolInputError(
            "a heartbeat run sets no periodic task", key="heartbeat_nested", field="schedule"
        )
    instruction = require_text(p.instruction, "instruction")
    schedule = read_schedule(require_text(p.schedule, "schedule"))
    next_due = schedule.next_due(ctx.now)
    shown = {"schedule": schedule.describe(), "instruction": instruction, "next_due_at": next_due.isoformat()}
    if ctx.dry_run:
        return preview(TOOL, **shown)
    out = writer(ctx, txn)
    task_id = doc_id(ctx, "hb")
    if out.get(store.task_path(ctx.org_id, task_id)) is None:
        if store.count(ctx.store, ctx.org_id) >= store.MAX_PER_ORG:
            raise ToolInputError("too many periodic tasks", key="heartbeat_too_many", field="schedule")
        doc = store.new_task(
            task_id=task_id,
            org_id=ctx.org_id,
            creator=ctx.user_id,
            instruction=instruction,
            schedule=schedule,
            where={"channel": ctx.channel, "room_id": ctx.room_id, "conversation_key": ctx.conversation_key},
            now=ctx.now,
            created_by=ctx.user_id,
            cipher=ctx.cipher,
        )
        out.set(store.task_path(ctx.org_id, task_id), doc)
    return {"task_id": task_id, **shown}
