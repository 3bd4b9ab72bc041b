"""Heartbeat tasks' documents (seed 001 §17: HEARTBEAT.md's periodic tasks, one document each).

``orgs/{org}/heartbeat_tasks/{task_id}``: the schedule (``state_schedule.Schedule.to_doc``) and
its words, the creator (whose authorization each run has), the instruction kept as a person's
kept text is (``privacy.sealing``: masked, its values sealed for its creator), where it was given (channel, room,
conversation: where each run answers) and ``next_due_at``, the one due slot still to run.

``orgs/{org}/heartbeat_runs/{task_id}-{slot}``: one record per run, written in the same
transaction that moves ``next_due_at`` past the slot (``claim_slot``): a second tick, a doubled
scheduler call or a racing process finds the slot moved and runs nothing. The record says
whether the run's turn was published; one that was not is published again by the next tick
under the same turn id (the layers' claims take a turn once).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from cryptography.fernet import MultiFernet

from shared_lib.collections import collection_path, path
from shared_lib.features.heartbeat_tasks.state_schedule import Schedule
from shared_lib.ports import Store, Transaction
from shared_lib.privacy.sealing import SEALED_FIELD, seal, unseal
from shared_lib.state import paging

MAX_PER_ORG = 20
SCAN_LIMIT = 500  # run records read at once (the unpublished ones, an organisation's)
PAGE_SIZE = 200  # due tasks read a page at a time (all organisations)
PAGES = 25  # pages of due tasks one tick reads at most
RUN_TTL = timedelta(days=90)


def task_path(org_id: str, task_id: str) -> str:
    return path("heartbeat_tasks", org=org_id, id=task_id)


def run_id_for(task_id: str, slot: datetime) -> str:
    """The run of ``task_id`` at ``slot``: the same slot always names the same run (and turn)."""
    return f"{task_id}-{slot.astimezone(UTC):%Y%m%dT%H%M}"


def run_path(org_id: str, run_id: str) -> str:
    return path("heartbeat_runs", org=org_id, id=run_id)


def new_task(
    *,
    task_id: str,
    org_id: str,
    creator: str,
    instruction: str,
    schedule: Schedule,
    where: dict[str, str],
    now: datetime,
    created_by: str,
    cipher: MultiFernet | None,
) -> dict[str, Any]:
    """A task's document, its ``instruction`` sealed (masked; its values under the vault's key
    ``cipher``, masked only without one); ``where``: channel, room_id, conversation_key of the
    conversation it was given in (where its runs answer)."""
    kept = seal({"instruction": instruction}, cipher)
    return {
        **kept,
        **{
            "task_id": task_id,
            "org_id": org_id,
            "user_id": creator,
            "schedule": schedule.to_doc(),
            "schedule_text": schedule.describe(),
            "channel": where["channel"],
            "room_id": where["room_id"],
            "conversation_key": where.get("conversation_key") or f"{org_id}/{where['room_id']}/{creator}",
            "created_at": now,
            "created_by": created_by,  # the creator, or the operator who added it
            "next_due_at": schedule.next_due(now),
            "last_run_at": None,
            "runs": 0,
        },
    }


def instruction_for_run(task: dict[str, Any], cipher: MultiFernet | None) -> str:
    """The instruction as its creator gave it, for the creator's own run (their sealed values
    opened; the masked text without the key)."""
    opened, _ = unseal(
        {"instruction": task.get("instruction") or "", SEALED_FIELD: task.get(SEALED_FIELD)}, cipher
    )
    return str(opened["instruction"])


def count(store: Store, org_id: str) -> int:
    return len(store.query(collection_path("heartbeat_tasks", org=org_id), limit=MAX_PER_ORG + 1))


def list_tasks(store: Store, org_id: str) -> list[dict[str, Any]]:
    rows = store.query(collection_path("heartbeat_tasks", org=org_id), limit=SCAN_LIMIT)
    return sorted((doc for _, doc in rows), key=lambda d: str(d.get("created_at") or ""))


def remove(store: Store, org_id: str, task_id: str) -> dict[str, Any] | None:
    """Delete a task (its run records stay, the audit of what it did); the task, or ``None``."""
    doc = store.get(task_path(org_id, task_id))
    if doc is not None:
        store.delete(task_path(org_id, task_id))
    return doc


def due(
    store: Store, now: datetime, *, page_size: int = PAGE_SIZE, pages: int = PAGES
) -> Iterator[dict[str, Any]]:
    """The tasks whose ``next_due_at`` has come, across organisations, a page at a time, oldest
    due first. No cursor is kept between ticks: a task run leaves the query (its ``next_due_at``
    moves past now), so what one tick's ``pages`` did not reach is still due at the next."""
    rows = paging.scan(
        store,
        "heartbeat_tasks",
        where=[("next_due_at", "<=", now)],
        order_by="next_due_at",
        size=page_size,
        group=True,
        max_pages=pages,
    )
    return (doc for _, doc in rows)


def claim_slot(store: Store, task: dict[str, Any], now: datetime) -> dict[str, Any] | None:
    """Take the task's due slot in one transaction: the run's record is created and the task's
    ``next_due_at`` moved to its next due time after ``now`` (a slot missed while quiet or down
    runs once, not once per missed slot). ``None``: another tick took it, or the task is gone."""
    org_id, task_id, slot = str(task["org_id"]), str(task["task_id"]), task["next_due_at"]

    def txn_fn(txn: Transaction) -> dict[str, Any] | None:
        current = txn.get(task_path(org_id, task_id))
        if current is None or current.get("next_due_at") != slot:
            return None
        run_id = run_id_for(task_id, slot)
        if txn.get(run_path(org_id, run_id)) is not None:
            return None
        schedule = Schedule.from_doc(current["schedule"])
        txn.set(
            task_path(org_id, task_id),
            {
                **current,
                "next_due_at": schedule.next_due(max(now, slot)),
                "last_run_at": now,
                "runs": int(current.get("runs") or 0) + 1,
            },
        )
        run = {
            "run_id": run_id,
            "task_id": task_id,
            "org_id": org_id,
            "slot": slot,
            "started_at": now,
            "published": False,
            "expires_at": now + RUN_TTL,
        }
        txn.set(run_path(org_id, run_id), run)
        return {**run, "task": current}

    return store.run_transaction(txn_fn)


def mark_published(store: Store, org_id: str, run_id: str, turn_id: str) -> None:
    store.set(run_path(org_id, run_id), {"published": True, "turn_id": turn_id}, merge=True)


def abandon(store: Store, org_id: str, run_id: str, reason: str) -> None:
    store.set(run_path(org_id, run_id), {"published": None, "abandoned": reason}, merge=True)


def unpublished(store: Store, limit: int = SCAN_LIMIT) -> list[dict[str, Any]]:
    """Runs whose turn was never published (a process died between the claim and the publish)."""
    rows = store.query("heartbeat_runs", where=[("published", "==", False)], group=True, limit=limit)
    return [doc for _, doc in rows]


def runs(store: Store, org_id: str, limit: int = SCAN_LIMIT) -> list[dict[str, Any]]:
    rows = store.query(collection_path("heartbeat_runs", org=org_id), limit=limit)
    return sorted((doc for _, doc in rows), key=lambda d: str(d.get("started_at") or ""))
