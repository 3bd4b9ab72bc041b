"""The ``TaskBackend`` port: where tasks live, and its embedded adapter.

Two peers implement it: ``StoreTaskBackend`` (the default: tasks are documents under
``orgs/{org}/tasks``, written in the executor's transaction) and ``ChatWorkTaskBackend``
(``shared_lib.tools.chatwork_tasks``: ChatWork's REST API, an external effect). The
settings pick one (``build_task_backend``): ``CHARTER_TASK_BACKEND=chatwork`` with
``CHATWORK_API_TOKEN`` and ``CHATWORK_API_BASE`` (or ``CHATWORK_TASKS_API_BASE`` when
the task API is served elsewhere than the message API, as on the local stack).

Every created task carries a *marker* derived from the tool call, so a redelivered call
can find the task an earlier attempt created (ChatWork has no idempotency key).

>>> from shared_lib.adapters.memory_store import MemoryStore
>>> backend = StoreTaskBackend(MemoryStore())
>>> backend.external
False
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Literal, NoReturn, Protocol

from pydantic import BaseModel, ConfigDict

from shared_lib.adapters.scoped import WriteRefused
from shared_lib.errors import CharterError, ConfigError
from shared_lib.ids import utc_now
from shared_lib.ports import Op, Store, Transaction
from shared_lib.settings import Settings

TaskStatus = Literal["open", "done", "deleted"]
StatusFilter = Literal["open", "done", "all"]
_MARKER = re.compile(r"\s*\[ref:([a-z0-9]{6,32})\]\s*$")
IN_QUERY_LIMIT = 30  # Firestore's limit on values of an ``in`` filter


def task_marker(org_id: str, call_id: str) -> str:
    """A short stable marker for one tool call (found again after a crash)."""
    return "c" + hashlib.sha256(f"{org_id}:{call_id}".encode()).hexdigest()[:12]


def body_with_marker(body: str, marker: str) -> str:
    return f"{body}\n[ref:{marker}]"


def split_marker(body: str) -> tuple[str, str | None]:
    m = _MARKER.search(body)
    return (body[: m.start()], m.group(1)) if m else (body, None)


class Task(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    task_id: str
    body: str
    assignee_id: str | None = None
    assignee_name: str | None = None
    limit_date: str | None = None
    limit_time: str | None = None
    status: TaskStatus = "open"
    room_id: str = ""
    created_by: str | None = None
    marker: str | None = None
    sealed: dict[str, Any] = {}  # the store's sealed values of the body (``sealing``): opened for its readers

    def public(self) -> dict[str, Any]:
        """What a tool result shows (never the marker)."""
        return {
            "task_id": self.task_id,
            "body": self.body,
            "assignee": self.assignee_name,
            "limit_date": self.limit_date,
            "status": self.status,
        }


class TaskDraft(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    body: str
    assignee_id: str
    assignee_name: str
    limit_date: str | None = None
    limit_time: str | None = None
    room_id: str
    created_by: str
    marker: str


class TaskBackendError(CharterError):
    """The backend failed (after its retries); maps to ``external_api_error``."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class TaskOperationUnsupported(TaskBackendError):
    """The backend cannot do this at all (ChatWork's API cannot delete a task)."""


class TaskBackend(Protocol):
    """Where tasks live. ``external`` backends are not covered by the store transaction."""

    name: str
    external: bool

    def create(
        self, org_id: str, draft: TaskDraft, *, txn: Transaction | None, recover: bool = False
    ) -> Task:
        """Create one task; with ``recover`` first look for a task carrying ``draft.marker``."""
        ...

    def list(
        self,
        org_id: str,
        *,
        room_id: str | None = None,
        assignee_ids: Sequence[str] | None = None,
        status: StatusFilter = "open",
        limit: int = 50,
    ) -> list[Task]:
        """Tasks by status and assignees. ``room_id`` is the conversation's room: backends whose
        tasks live in rooms (ChatWork) list that room; the store's tasks are organisation-wide."""
        ...

    def complete(self, org_id: str, task: Task, *, txn: Transaction | None) -> Task: ...

    def delete(self, org_id: str, task: Task, *, txn: Transaction | None) -> None: ...

    def with_store(self, store: Store) -> TaskBackend:
        """The same backend over ``store`` (the executor passes its organisation-scoped view)."""
        ...


def _sort(tasks: list[Task]) -> list[Task]:
    return sorted(tasks, key=lambda t: (t.limit_date or "9999-12-31", t.limit_time or "", t.task_id))


class StoreTaskBackend:
    """Tasks as documents in the store; writes only inside the caller's transaction."""

    name = "store"
    external = False

    def __init__(self, store: Store, *, clock: Callable[[], datetime] = utc_now) -> None:
        self._store = store
        self._clock = clock

    def with_store(self, store: Store) -> StoreTaskBackend:
        return StoreTaskBackend(store, clock=self._clock)

    @staticmethod
    def _path(org_id: str, task_id: str = "") -> str:
        return f"orgs/{org_id}/tasks" + (f"/{task_id}" if task_id else "")

    @staticmethod
    def _require(txn: Transaction | None) -> Transaction:
        if txn is None:
            raise TaskBackendError("the store task backend writes only inside a transaction")
        return txn

    def create(
        self, org_id: str, draft: TaskDraft, *, txn: Transaction | None, recover: bool = False
    ) -> Task:
        task = Task(
            task_id=f"t-{draft.marker}",
            body=draft.body,
            assignee_id=draft.assignee_id,
            assignee_name=draft.assignee_name,
            limit_date=draft.limit_date,
            limit_time=draft.limit_time,
            room_id=draft.room_id,
            created_by=draft.created_by,
            marker=draft.marker,
        )
        doc = task.model_dump(exclude={"task_id", "sealed"})
        self._require(txn).set(self._path(org_id, task.task_id), {**doc, "created_at": self._clock()})
        return task

    def list(
        self,
        org_id: str,
        *,
        room_id: str | None = None,
        assignee_ids: Sequence[str] | None = None,
        status: StatusFilter = "open",
        limit: int = 50,
    ) -> list[Task]:
        statuses = ["open", "done"] if status == "all" else [status]
        chunks: list[list[str] | None] = [None]
        if assignee_ids is not None:
            ids = sorted(set(assignee_ids))
            chunks = [ids[i : i + IN_QUERY_LIMIT] for i in range(0, len(ids), IN_QUERY_LIMIT)]
        found: dict[str, Task] = {}
        for wanted in statuses:
            for chunk in chunks:
                where: list[tuple[str, Op, Any]] = [("status", "==", wanted)]
                if chunk is not None:
                    where.append(("assignee_id", "in", chunk))
                for tid, doc in self._store.query(self._path(org_id), where=where, limit=max(limit, 1) * 4):
                    found[tid] = Task.model_validate({**doc, "task_id": tid})
        return _sort(list(found.values()))[:limit]

    def complete(self, org_id: str, task: Task, *, txn: Transaction | None) -> Task:
        self._require(txn).set(
            self._path(org_id, task.task_id), {"status": "done", "done_at": self._clock()}, merge=True
        )
        return task.model_copy(update={"status": "done"})

    def delete(self, org_id: str, task: Task, *, txn: Transaction | None) -> None:
        self._require(txn).set(
            self._path(org_id, task.task_id), {"status": "deleted", "deleted_at": self._clock()}, merge=True
        )


def build_task_backend(
    settings: Settings, store: Store, clock: Callable[[], datetime] = utc_now
) -> TaskBackend:
    """The backend ``CHARTER_TASK_BACKEND`` names; ``ConfigError`` when it lacks its token."""
    if settings.task_backend == "store":
        return StoreTaskBackend(store, clock=clock)
    from shared_lib.tools.chatwork_api import ChatWorkClient
    from shared_lib.tools.chatwork_tasks import ChatWorkTaskBackend

    token = settings.secret("chatwork_api_token")
    if not token:
        raise ConfigError("CHARTER_TASK_BACKEND=chatwork needs CHATWORK_API_TOKEN")
    base = settings.chatwork_tasks_api_base or settings.chatwork_api_base
    return ChatWorkTaskBackend(ChatWorkClient(base, token))


class DryRunTaskBackend:
    """A backend for dry runs: reads pass through, every change raises ``WriteRefused``."""

    def __init__(self, inner: TaskBackend) -> None:
        self._inner = inner
        self.name = f"dry-run:{inner.name}"
        self.external = inner.external

    def with_store(self, store: Store) -> DryRunTaskBackend:
        return DryRunTaskBackend(self._inner.with_store(store))

    @staticmethod
    def _refuse(what: str) -> NoReturn:
        raise WriteRefused(f"task {what} during a dry run")

    def create(
        self, org_id: str, draft: TaskDraft, *, txn: Transaction | None, recover: bool = False
    ) -> Task:
        self._refuse("create")

    def list(
        self,
        org_id: str,
        *,
        room_id: str | None = None,
        assignee_ids: Sequence[str] | None = None,
        status: StatusFilter = "open",
        limit: int = 50,
    ) -> list[Task]:
        return self._inner.list(
            org_id, room_id=room_id, assignee_ids=assignee_ids, status=status, limit=limit
        )

    def complete(self, org_id: str, task: Task, *, txn: Transaction | None) -> Task:
        self._refuse("complete")

    def delete(self, org_id: str, task: Task, *, txn: Transaction | None) -> None:
        self._refuse("delete")
