"""The heartbeat tick runs the periodic tasks come due (seed 001 §17.2: タスク実行).

Lent to the tick as ``Hooks.heartbeat_tasks`` and called by ``ops.due_tasks.run`` outside the
quiet hours, after the tick's own claim. Each task whose ``next_due_at`` has come has its slot
taken once (``store.claim_slot``: a transaction that records the run and moves the task past
it), then runs as a turn of the assistant: its creator's message (``Turn.user_id`` is the
creator, so the guardian and the gate judge it as for that person, never more) in the room it
was given in, published to ``turns.received`` as a delegated job's turn is. Its turn id names
the run, so a publish repeated by the next tick (the run's record still unpublished) is the
same turn, which the layers take once. The brain reads the instruction after
``HEARTBEAT_MARKER``: a task the person set earlier, not words said now.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from shared_lib.delivery.topology import TOPOLOGY
from shared_lib.features.heartbeat_tasks import store
from shared_lib.features.heartbeat_tasks.handlers import RUN_TURN_PREFIX
from shared_lib.observability.logs import log_event
from shared_lib.turn.envelope import Turn
from shared_lib.turn.inbound import InboundMessage

if TYPE_CHECKING:
    from datetime import datetime

    from cryptography.fernet import MultiFernet

    from shared_lib.runtime import Runtime

HEARTBEAT_MARKER = "【定期タスク】"


def turn_id_for(run_id: str) -> str:
    return f"{RUN_TURN_PREFIX}{run_id}"


def run_turn(task: dict[str, Any], run_id: str, now: datetime, cipher: MultiFernet | None = None) -> Turn:
    """The run's turn: the creator's instruction (its sealed values opened for them with the
    vault's key ``cipher``) in the room the task was given in."""
    inbound = InboundMessage(
        channel=task["channel"],
        org_id=task["org_id"],
        room_id=task["room_id"],
        user_id=task["user_id"],
        text=HEARTBEAT_MARKER + store.instruction_for_run(task, cipher),
        message_id=run_id,
        event_id=run_id,
        received_at=now,
    )
    turn = Turn.from_inbound(inbound, created_at=now)
    turn.turn_id = turn_id_for(run_id)
    turn.conversation_key = str(task.get("conversation_key") or inbound.conversation_key)
    return turn


def _publish(rt: Runtime, task: dict[str, Any], run_id: str) -> str:
    turn = run_turn(task, run_id, rt.clock(), rt.cipher(str(task["org_id"])))
    data, attrs = turn.to_message("heartbeat", rt.store, blob_ttl_days=rt.settings.blob_ttl_days)
    rt.bus.publish(TOPOLOGY.route("received", smoke=False), data, attrs, ordering_key=turn.conversation_key)
    store.mark_published(rt.store, str(task["org_id"]), run_id, turn.turn_id)
    log_event("heartbeat_task.run", turn=turn, layer="admin", task_id=str(task["task_id"]), run_id=run_id)
    return turn.turn_id


def _try_publish(rt: Runtime, task: dict[str, Any], run_id: str) -> str:
    """Publish one run; one task that cannot never holds up the others. A task whose turn cannot
    be built (written without its conversation's channel) is given up; a bus that failed leaves
    the run unpublished for the next tick."""
    try:
        _publish(rt, task, run_id)
    except ValidationError as exc:
        store.abandon(rt.store, str(task["org_id"]), run_id, "unreachable")
        log_event(
            "heartbeat_task.unreachable", layer="admin", severity="WARNING", run_id=run_id, error=str(exc)
        )
        return "unreachable"
    except Exception as exc:  # the bus's own failure: the next tick publishes the run again
        log_event(
            "heartbeat_task.publish_failed", layer="admin", severity="WARNING", run_id=run_id, error=repr(exc)
        )
        return "failed"
    return "ok"


def run_due(rt: Runtime) -> dict[str, int]:
    """Run each task come due once per due slot; what happened, counted."""
    now = rt.clock()
    counts: dict[str, int] = {}

    def count(what: str) -> None:
        counts[what] = counts.get(what, 0) + 1

    for run in store.unpublished(rt.store):  # claimed by a tick that died before its publish
        task = rt.store.get(store.task_path(str(run["org_id"]), str(run["task_id"])))
        if task is None:  # removed since: nothing to run
            store.abandon(rt.store, str(run["org_id"]), str(run["run_id"]), "task_removed")
            continue
        outcome = _try_publish(rt, task, str(run["run_id"]))
        count("republished" if outcome == "ok" else outcome)
    for task in store.due(rt.store, now):
        taken = store.claim_slot(rt.store, task, now)
        if taken is None:
            count("already")
            continue
        outcome = _try_publish(rt, taken["task"], str(taken["run_id"]))
        count("started" if outcome == "ok" else outcome)
    return counts
