"""Task tools (seed 000 §6.3.1): create, complete, search, delete, the team's tasks.

Tasks go through ``ctx.task_backend`` (the store in the transaction, or ChatWork's API).
The assignee is resolved against the directory (「自分」 is the sender; two matches are
a clarification); the deadline is normalised in Japan time; only the sender's own tasks
(assigned to or created by them) can be completed or deleted.

A store task's body is kept masked with its values sealed (``sealing``); it is read in clear
only by the task's own people, its assignee and its creator (``reads_in_clear``), the values
listed as ``_revealed`` for the reply. Anyone else listing it (a colleague searching someone's
tasks, the team's view) reads the placeholders, which a reply shows as words.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from shared_lib.ports import Transaction
from shared_lib.privacy.sealing import SEALED_FIELD, masked_values, revealed, unseal
from shared_lib.tools.directory import (
    Person,
    department_doc,
    department_members,
    get_person,
    is_self,
    resolve_person,
)
from shared_lib.tools.handlers.base import Params, pick_one, preview, require_text
from shared_lib.tools.normalize import PAST_DATE, DocId, normalize_deadline, normalize_time
from shared_lib.tools.registry import ToolContext, ToolInputError
from shared_lib.tools.task_backend import Task, TaskDraft, task_marker

MAX_LISTED = 20


def reads_in_clear(task: Task, user_id: str, task_account_id: str | None) -> bool:
    """Whether ``user_id`` (with their task account) reads ``task``'s sealed values: its creator
    or its assignee, no one else whatever their level."""
    return task.created_by == user_id or (task_account_id is not None and task.assignee_id == task_account_id)


def shown_tasks(ctx: ToolContext, tasks: list[Task]) -> tuple[list[dict[str, Any]], list[str]]:
    """The tasks as the asker reads them (``public``), and the values opened for them."""
    me = get_person(ctx.store, ctx.org_id, ctx.user_id) if any(t.sealed for t in tasks) else None
    shown, given = [], []
    for t in tasks:
        public = t.public()
        if t.sealed and reads_in_clear(t, ctx.user_id, me.task_account_id if me else None):
            opened, values = unseal({"body": t.body, SEALED_FIELD: t.sealed}, ctx.cipher)
            public["body"] = opened["body"]
            given += values
        shown.append(public)
    return shown, given


class TaskCreateParams(Params):
    body: str = Field(min_length=1, max_length=1000, description="タスクの内容")
    assignee_name: str = Field(
        min_length=1,
        max_length=100,
        description="担当者名。「俺」「自分」「私」は依頼者自身（そのまま渡してよい）",
    )
    limit_date: str | None = Field(
        default=None,
        max_length=40,
        description="期限日。YYYY-MM-DD、または「明日」「来週金曜」「月末」などの表現",
    )
    limit_time: str | None = Field(default=None, max_length=20, description="期限時刻（HH:MM）。省略可")


def task_create(p: TaskCreateParams, ctx: ToolContext, txn: Transaction | None) -> dict[str, Any]:
    body = require_text(p.body, "body")
    assignee = resolve_person(ctx.store, ctx.org_id, p.assignee_name, sender_id=ctx.user_id)
    limit, said_at = normalize_deadline(p.limit_date, ctx.now, allow_past=PAST_DATE in ctx.confirmed)
    at = normalize_time(p.limit_time) or said_at  # 「明日の朝イチ」: the time the deadline says
    if at and not limit:
        raise ToolInputError("時刻だけでは期限になりません", key="time_without_date", field="limit_date")
    draft = TaskDraft(
        body=body,
        assignee_id=assignee.task_account_id,
        assignee_name=assignee.name,
        limit_date=limit,
        limit_time=at,
        room_id=ctx.room_id,
        created_by=ctx.user_id,
        marker=task_marker(ctx.org_id, ctx.turn_id),
    )
    shown = {"body": body, "assignee": assignee.name, "limit_date": limit, "limit_time": at}
    if ctx.dry_run:
        return preview("chatwork_task_create", task=shown)
    task = ctx.task_backend.create(ctx.org_id, draft, txn=txn, recover=ctx.recovering)
    return {"task_id": task.task_id, **shown, **revealed(masked_values(body)[1])}  # its creator reads it


def _me(ctx: ToolContext) -> Person:
    me = get_person(ctx.store, ctx.org_id, ctx.user_id)
    if me is None:
        raise ToolInputError("送信者が名簿にいません", key="sender_unknown", field="user")
    return me


class TaskSearchParams(Params):
    assignee_name: str = Field(
        default="自分", max_length=100, description="誰のタスクか（人物名。「自分」「俺」は依頼者自身）"
    )
    status: Literal["open", "done", "all"] = Field(default="open", description="タスクの状態")
    target_user_id: DocId | None = Field(default=None, description="対象者の社員ID（わかる場合のみ）")


def task_search(p: TaskSearchParams, ctx: ToolContext, txn: Transaction | None) -> dict[str, Any]:
    if p.target_user_id is not None:
        person = get_person(ctx.store, ctx.org_id, p.target_user_id)
        if person is None:
            raise ToolInputError(
                "指定された社員が見つかりません", key="person_unknown_id", field="target_user_id"
            )
        if (
            not is_self(p.assignee_name)
            and resolve_person(ctx.store, ctx.org_id, p.assignee_name, sender_id=ctx.user_id).user_id
            != person.user_id
        ):
            raise ToolInputError(
                "担当者名と社員IDが一致しません", key="person_id_mismatch", field="target_user_id"
            )
    else:
        person = resolve_person(ctx.store, ctx.org_id, p.assignee_name, sender_id=ctx.user_id)
    tasks = ctx.task_backend.list(
        ctx.org_id, room_id=ctx.room_id, assignee_ids=[person.task_account_id], status=p.status
    )
    shown, given = shown_tasks(ctx, tasks[:MAX_LISTED])
    return {
        "assignee": person.name,
        "status": p.status,
        "count": len(tasks),
        "tasks": shown,
        **revealed(given),
    }


class TaskCompleteParams(Params):
    task_query: str = Field(
        min_length=1,
        max_length=200,
        description="完了にするタスクを特定する情報（内容の一部、または一覧の番号）",
    )
    task_id: DocId | None = Field(default=None, description="タスクID（わかる場合のみ）")


def _own_open(ctx: ToolContext, me: Person) -> list[Task]:
    return ctx.task_backend.list(
        ctx.org_id, room_id=ctx.room_id, assignee_ids=[me.task_account_id], status="open"
    )


def task_complete(p: TaskCompleteParams, ctx: ToolContext, txn: Transaction | None) -> dict[str, Any]:
    tasks = _own_open(ctx, _me(ctx))
    chosen = pick_one("タスク", "task_query", [(t.task_id, t.body) for t in tasks], p.task_query, p.task_id)
    task = next(t for t in tasks if t.task_id == chosen)
    (shown,), given = shown_tasks(ctx, [task])
    if ctx.dry_run:
        return preview("chatwork_task_complete", task=shown)
    done = ctx.task_backend.complete(ctx.org_id, task, txn=txn)
    return {"task_id": done.task_id, "body": shown["body"], "status": "done", **revealed(given)}


class DeleteTaskParams(Params):
    task_query: str | None = Field(default=None, max_length=200, description="削除するタスクを特定する情報")
    task_id: DocId | None = Field(default=None, description="タスクID（わかる場合のみ）")
    assignee_name: str = Field(
        default="自分", max_length=100, description="そのタスクの担当者名（既定は自分）"
    )

    @model_validator(mode="after")
    def _one_target(self) -> DeleteTaskParams:
        if not self.task_query and not self.task_id:
            raise ValueError("task_query か task_id のどちらかが必要です")
        return self


def delete_task(p: DeleteTaskParams, ctx: ToolContext, txn: Transaction | None) -> dict[str, Any]:
    me = _me(ctx)
    assignee = resolve_person(ctx.store, ctx.org_id, p.assignee_name, sender_id=ctx.user_id)
    tasks = ctx.task_backend.list(
        ctx.org_id, room_id=ctx.room_id, assignee_ids=[assignee.task_account_id], status="all"
    )
    # only tasks the sender owns: assigned to them, or created by them
    mine = [t for t in tasks if t.assignee_id == me.task_account_id or t.created_by == me.user_id]
    chosen = pick_one("タスク", "task_query", [(t.task_id, t.body) for t in mine], p.task_query, p.task_id)
    task = next(t for t in mine if t.task_id == chosen)
    (shown,), given = shown_tasks(ctx, [task])
    if ctx.dry_run:
        return preview("delete_task", task=shown)
    ctx.task_backend.delete(ctx.org_id, task, txn=txn)
    return {"task_id": task.task_id, "body": shown["body"], "deleted": True, **revealed(given)}


class ViewTeamTasksParams(Params):
    target_department_id: DocId | None = Field(
        default=None, description="対象部署のID（省略時は依頼者の部署）"
    )
    status: Literal["open", "done", "all"] = Field(default="open", description="タスクの状態")


def team_department(ctx: ToolContext, target: str | None) -> tuple[str, str]:
    """The department a team view reads (the asker's when none is named) and its name as people
    say it (the id when the directory names none): a reply says 「開発部」, never ``d-dev``."""
    department = target or _me(ctx).department_id
    if not department:
        raise ToolInputError(
            "部署が登録されていません", key="department_missing", field="target_department_id"
        )
    doc = department_doc(ctx.store, ctx.org_id, department)
    if doc is None:
        raise ToolInputError(
            "指定された部署が見つかりません", key="department_unknown", field="target_department_id"
        )
    return department, str(doc.get("name") or department)


def view_team_tasks(p: ViewTeamTasksParams, ctx: ToolContext, txn: Transaction | None) -> dict[str, Any]:
    department, name = team_department(ctx, p.target_department_id)
    members = department_members(ctx.store, ctx.org_id, department)
    tasks = ctx.task_backend.list(
        ctx.org_id,
        room_id=ctx.room_id,
        assignee_ids=[m.task_account_id for m in members],
        status=p.status,
        limit=100,
    )
    shown, given = shown_tasks(ctx, tasks[:50])  # the asker's own in clear, the others' as words
    return {
        "department_id": department,
        "department": name,
        "member_count": len(members),
        "count": len(tasks),
        "tasks": shown,
        **revealed(given),
    }
