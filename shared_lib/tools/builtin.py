"""Built-in tools and their fixed-logic handlers (seed 000 §6.3, §7.3).

Every handler validates with its parameter model, normalises with fixed rules and writes
only through the transaction. Document ids derive from ``(turn_id, call index)`` so a
replay can never create a second copy even before the receipt check.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict, Field

from shared_lib.ports import Transaction
from shared_lib.tools.directory import list_people, resolve_person
from shared_lib.tools.registry import ToolContext, ToolInputError, ToolRegistry, ToolSpec

JST = ZoneInfo("Asia/Tokyo")


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


def normalize_date(expr: str | None, now: datetime) -> str | None:
    """Japanese relative dates and explicit dates to ``YYYY-MM-DD`` in Japan time."""
    if expr is None or not expr.strip():
        return None
    text = expr.strip()
    today = now.astimezone(JST).date()
    relative = {"今日": 0, "本日": 0, "明日": 1, "あした": 1, "明後日": 2, "あさって": 2}
    if text in relative:
        return (today + timedelta(days=relative[text])).isoformat()
    if text == "月末":
        nxt = date(today.year + (today.month == 12), today.month % 12 + 1, 1)
        return (nxt - timedelta(days=1)).isoformat()
    weekdays = "月火水木金土日"
    m = re.fullmatch(r"(今週|来週|再来週)?([月火水木金土日])曜(日)?", text)
    if m:
        offset = {"今週": 0, None: 0, "来週": 7, "再来週": 14}[m.group(1)]
        monday = today - timedelta(days=today.weekday())
        target = monday + timedelta(days=weekdays.index(m.group(2)) + offset)
        if m.group(1) is None and target < today:
            target += timedelta(days=7)
        return target.isoformat()
    m = re.fullmatch(r"(\d{4})[-/年](\d{1,2})[-/月](\d{1,2})日?", text)
    if m:
        return _checked_date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    m = re.fullmatch(r"(\d{1,2})[/月](\d{1,2})日?", text)
    if m:
        year = today.year
        candidate = _checked_date(year, int(m.group(1)), int(m.group(2)))
        if candidate < today.isoformat():
            candidate = _checked_date(year + 1, int(m.group(1)), int(m.group(2)))
        return candidate
    raise ToolInputError(f"日付「{text}」を解釈できません", field="limit_date")


def _checked_date(y: int, m: int, d: int) -> str:
    try:
        return date(y, m, d).isoformat()
    except ValueError as exc:
        raise ToolInputError(f"存在しない日付です: {y}-{m}-{d}", field="limit_date") from exc


def _doc_id(ctx: ToolContext, suffix: str = "") -> str:
    return f"{ctx.turn_id}{suffix}"


# -- save_memory ---------------------------------------------------------------------------
class SaveMemoryParams(_Params):
    content: str = Field(min_length=1, max_length=2000)
    category: Literal["preference", "fact", "person", "other"] = "other"


def save_memory(p: SaveMemoryParams, ctx: ToolContext, txn: Transaction | None) -> dict[str, Any]:
    doc = {"content": p.content, "category": p.category, "user_id": ctx.user_id, "created_at": ctx.now}
    memory_id = _doc_id(ctx)
    if txn is not None:
        txn.set(f"orgs/{ctx.org_id}/memories/{memory_id}", doc)
    return {"memory_id": memory_id, "content": p.content, "category": p.category}


# -- chatwork_task_create ------------------------------------------------------------------
class TaskCreateParams(_Params):
    body: str = Field(min_length=1, max_length=1000)
    assignee_name: str = Field(min_length=1, max_length=100)
    limit_date: str | None = None


def task_create(p: TaskCreateParams, ctx: ToolContext, txn: Transaction | None) -> dict[str, Any]:
    assignee = resolve_person(ctx.store, ctx.org_id, p.assignee_name, sender_id=ctx.user_id)
    limit = normalize_date(p.limit_date, ctx.now)
    task_id = _doc_id(ctx)
    doc = {"body": p.body, "assignee_id": assignee.user_id, "assignee_name": assignee.name,
           "limit_date": limit, "status": "open", "room_id": ctx.room_id, "created_by": ctx.user_id,
           "created_at": ctx.now}
    if txn is not None:
        txn.set(f"orgs/{ctx.org_id}/tasks/{task_id}", doc)
    return {"task_id": task_id, "body": p.body, "assignee": assignee.name, "limit_date": limit}


class TaskSearchParams(_Params):
    assignee_name: str = "自分"
    status: Literal["open", "done", "all"] = "open"


def task_search(p: TaskSearchParams, ctx: ToolContext, txn: Transaction | None) -> dict[str, Any]:
    person = resolve_person(ctx.store, ctx.org_id, p.assignee_name, sender_id=ctx.user_id)
    where: list[Any] = [("assignee_id", "==", person.user_id)]
    if p.status != "all":
        where.append(("status", "==", p.status))
    tasks = ctx.store.query(f"orgs/{ctx.org_id}/tasks", where=where, limit=20)
    return {"assignee": person.name, "count": len(tasks),
            "tasks": [{"task_id": tid, "body": t["body"], "limit_date": t.get("limit_date")} for tid, t in tasks]}


class TaskCompleteParams(_Params):
    task_query: str = Field(min_length=1, max_length=200)


def task_complete(p: TaskCompleteParams, ctx: ToolContext, txn: Transaction | None) -> dict[str, Any]:
    mine = ctx.store.query(f"orgs/{ctx.org_id}/tasks", where=[("assignee_id", "==", ctx.user_id),
                                                              ("status", "==", "open")])
    words = [w for w in re.split(r"[\sのをにはがタスク完了した。、]+", p.task_query) if len(w) >= 2]
    hits = [(tid, t) for tid, t in mine if any(w in t["body"] for w in words)]
    if not hits:
        raise ToolInputError("該当するタスクが見つかりません", field="task_query")
    if len(hits) > 1:
        raise ToolInputError("該当するタスクが複数あります", field="task_query", options=[t["body"] for _, t in hits])
    task_id, task = hits[0]
    if txn is not None:
        txn.set(f"orgs/{ctx.org_id}/tasks/{task_id}", {"status": "done", "done_at": ctx.now}, merge=True)
    return {"task_id": task_id, "body": task["body"], "status": "done"}


# -- announce ------------------------------------------------------------------------------
class AnnounceParams(_Params):
    message: str = Field(min_length=1, max_length=2000)
    recipients: Literal["all"] | list[str] = "all"


def announce(p: AnnounceParams, ctx: ToolContext, txn: Transaction | None) -> dict[str, Any]:
    people = list_people(ctx.store, ctx.org_id)
    if p.recipients == "all":
        targets = [x.user_id for x in people]
    else:
        targets = [resolve_person(ctx.store, ctx.org_id, n, sender_id=ctx.user_id).user_id for n in p.recipients]
    ann_id = _doc_id(ctx)
    if txn is not None:
        txn.set(f"orgs/{ctx.org_id}/announcements/{ann_id}",
                {"message": p.message, "recipients": targets, "room_id": ctx.room_id, "by": ctx.user_id,
                 "created_at": ctx.now})
    return {"announcement_id": ann_id, "recipient_count": len(targets), "message": p.message}


class ViewAllUsersParams(_Params):
    pass


def view_all_users(p: ViewAllUsersParams, ctx: ToolContext, txn: Transaction | None) -> dict[str, Any]:
    people = list_people(ctx.store, ctx.org_id)
    return {"count": len(people), "users": [{"name": x.name, "department_id": x.department_id} for x in people]}


class ChangePermissionParams(_Params):
    target_user_name: str = Field(min_length=1, max_length=100)
    new_level: int = Field(ge=1, le=6)


def change_permission(p: ChangePermissionParams, ctx: ToolContext, txn: Transaction | None) -> dict[str, Any]:
    target = resolve_person(ctx.store, ctx.org_id, p.target_user_name, sender_id=ctx.user_id)
    if txn is not None:
        txn.set(f"orgs/{ctx.org_id}/users/{target.user_id}", {"level": p.new_level}, merge=True)
    return {"user": target.name, "new_level": p.new_level}


def builtin_registry() -> ToolRegistry:
    return ToolRegistry([
        ToolSpec("chatwork_task_create", "ChatWorkのタスクを作成する。担当者・内容・期限を指定する。",
                 ("田中さんに明日までに見積書を作るタスクをお願い", "自分に金曜までの資料作成タスクを作って"),
                 TaskCreateParams, task_create, min_level=1, writes=True,
                 keywords=("タスク", "頼んで", "お願い", "依頼")),
        ToolSpec("chatwork_task_search", "タスクを検索して一覧にする。", ("私のタスクを教えて", "田中さんのタスク一覧"),
                 TaskSearchParams, task_search, min_level=1, keywords=("タスク一覧", "タスク確認", "タスク教えて")),
        ToolSpec("chatwork_task_complete", "タスクを完了にする。", ("見積書のタスク完了した",),
                 TaskCompleteParams, task_complete, min_level=1, writes=True, keywords=("完了",)),
        ToolSpec("save_memory", "ユーザーの好みや事実を記憶する。", ("覚えておいて：私はコーヒーはブラック派",),
                 SaveMemoryParams, save_memory, min_level=1, writes=True, keywords=("覚えて", "記憶して")),
        ToolSpec("announce", "ルームや全員にお知らせを送る。", ("全員に明日の会議は10時からとアナウンスして",),
                 AnnounceParams, announce, min_level=2, writes=True, requires_confirmation=True,
                 keywords=("アナウンス", "お知らせ", "周知")),
        ToolSpec("view_all_users", "全社員の一覧を見る。", ("全社員の一覧を見せて",), ViewAllUsersParams,
                 view_all_users, min_level=5, keywords=("全社員", "社員一覧")),
        ToolSpec("change_permission", "ユーザーの権限レベルを変更する（チャーターが拒否するために登録）。",
                 ("山田さんの権限を管理者に変更して",), ChangePermissionParams, change_permission, min_level=6,
                 danger="high", danger_action="block", writes=True, keywords=("権限", "変更")),
    ])
