"""``TaskBackend`` over ChatWork's task API: tasks live in ChatWork (Truth order 1, the
real-time API), so nothing is mirrored in the store.

Exactly-once without a provider idempotency key: each task body ends with the call's
marker (``[ref:c…]``). A call that may already have reached ChatWork (``recover``, or a
POST retried after an ambiguous failure) lists the room's tasks and reuses the one that
carries its marker instead of creating a second.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, time
from typing import Any

from shared_lib.ports import Store, Transaction
from shared_lib.tools.chatwork_api import ChatWorkClient
from shared_lib.tools.normalize import JST
from shared_lib.tools.task_backend import (
    StatusFilter,
    Task,
    TaskDraft,
    TaskOperationUnsupported,
    body_with_marker,
    split_marker,
)


def _limit(draft: TaskDraft) -> tuple[int | None, str]:
    if draft.limit_date is None:
        return None, "none"
    day = date.fromisoformat(draft.limit_date)
    if draft.limit_time:
        hh, mm = (int(x) for x in draft.limit_time.split(":"))
        return int(datetime.combine(day, time(hh, mm), JST).timestamp()), "time"
    return int(datetime.combine(day, time(0, 0), JST).timestamp()), "date"


def task_from_api(room_id: str, item: dict[str, Any]) -> Task:
    body, marker = split_marker(str(item.get("body", "")))
    account = item.get("account") or {}
    by = item.get("assigned_by_account") or {}
    limit = int(item.get("limit_time") or 0)
    limit_type = item.get("limit_type", "date" if limit else "none")
    local = datetime.fromtimestamp(limit, JST) if limit else None
    return Task(
        task_id=str(item.get("task_id")),
        body=body,
        marker=marker,
        room_id=room_id,
        assignee_id=str(account.get("account_id")) if account.get("account_id") is not None else None,
        assignee_name=account.get("name"),
        created_by=str(by.get("account_id")) if by.get("account_id") is not None else None,
        limit_date=local.date().isoformat() if local and limit_type != "none" else None,
        limit_time=local.strftime("%H:%M") if local and limit_type == "time" else None,
        status="done" if item.get("status") == "done" else "open",
    )


class ChatWorkTaskBackend:
    name = "chatwork"
    external = True

    def __init__(self, client: ChatWorkClient) -> None:
        self._client = client

    def with_store(self, store: Store) -> ChatWorkTaskBackend:
        return self  # nothing of ours lives in the store

    def _find(self, room_id: str, marker: str) -> Task | None:
        for item in self._client.list_tasks(room_id):
            task = task_from_api(room_id, item)
            if task.marker == marker:
                return task
        return None

    def create(
        self, org_id: str, draft: TaskDraft, *, txn: Transaction | None, recover: bool = False
    ) -> Task:
        if recover and (found := self._find(draft.room_id, draft.marker)) is not None:
            return found

        def recheck() -> list[str] | None:
            again = self._find(draft.room_id, draft.marker)
            return [again.task_id] if again else None

        limit, limit_type = _limit(draft)
        ids = self._client.create_task(
            draft.room_id,
            body=body_with_marker(draft.body, draft.marker),
            to_ids=[draft.assignee_id],
            limit=limit,
            limit_type=limit_type,
            recheck=recheck,
        )
        return Task(
            task_id=ids[0],
            body=draft.body,
            assignee_id=draft.assignee_id,
            assignee_name=draft.assignee_name,
            limit_date=draft.limit_date,
            limit_time=draft.limit_time,
            room_id=draft.room_id,
            created_by=draft.created_by,
            marker=draft.marker,
        )

    def list(
        self,
        org_id: str,
        *,
        room_id: str | None = None,
        assignee_ids: Sequence[str] | None = None,
        status: StatusFilter = "open",
        limit: int = 50,
    ) -> list[Task]:
        if not room_id:
            return []  # ChatWork lists tasks per room only
        account = assignee_ids[0] if assignee_ids is not None and len(assignee_ids) == 1 else None
        items = self._client.list_tasks(
            room_id, account_id=account, status=None if status == "all" else status
        )
        wanted = set(assignee_ids) if assignee_ids is not None else None
        tasks = [task_from_api(room_id, item) for item in items]
        tasks = [t for t in tasks if wanted is None or t.assignee_id in wanted]
        return sorted(tasks, key=lambda t: (t.limit_date or "9999-12-31", t.task_id))[:limit]

    def complete(self, org_id: str, task: Task, *, txn: Transaction | None) -> Task:
        self._client.complete_task(task.room_id, task.task_id)  # PUT status=done is idempotent
        return task.model_copy(update={"status": "done"})

    def delete(self, org_id: str, task: Task, *, txn: Transaction | None) -> None:
        raise TaskOperationUnsupported("ChatWork's API cannot delete a task")
