"""Goal tools (seed 000 §6.3.2): a multi-step goal-setting session, progress, deletion
and the team's goals. Goals live at ``orgs/{org}/goals/{goal_id}``.

``goal_registration`` starts (or continues) a goal-setting flow held in the session
(``goal_flow`` with its own 30-minute expiry; mode ``multi_step_flow``): each call fills what the user
has said so far; fixed logic asks for the next missing item in the order
title → why → how → deadline and activates the goal when all four are known.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pydantic import Field, model_validator

from shared_lib.collections import session_path
from shared_lib.ports import Transaction
from shared_lib.privacy.sealing import revealed, unseal
from shared_lib.tools.directory import department_members
from shared_lib.tools.handlers.base import Params, doc_id, pick_one, preview, require_text, writer
from shared_lib.tools.handlers.tasks import team_department
from shared_lib.tools.normalize import PAST_DATE, DocId, normalize_date
from shared_lib.tools.registry import ToolContext, ToolInputError
from shared_lib.tools.task_backend import IN_QUERY_LIMIT

STEPS = ("title", "why", "how", "deadline")
QUESTIONS = {
    "title": "どんな目標を立てますか？",
    "why": "その目標を達成したい理由は何ですか？",
    "how": "達成のために具体的に何をしますか？",
    "deadline": "いつまでに達成しますか？",
}
FLOW = "goal_setting"
FLOW_TTL = timedelta(minutes=30)  # seed 000 §5.1.5: a session lives 30 minutes


def goals_path(ctx: ToolContext, goal_id: str = "") -> str:
    return f"orgs/{ctx.org_id}/goals" + (f"/{goal_id}" if goal_id else "")


class GoalRegistrationParams(Params):
    title: str | None = Field(
        default=None, max_length=200, description="目標の内容（ユーザーが述べた場合のみ）"
    )
    why: str | None = Field(
        default=None, max_length=500, description="その目標を立てる理由（述べた場合のみ）"
    )
    how: str | None = Field(default=None, max_length=500, description="達成のための行動（述べた場合のみ）")
    deadline: str | None = Field(
        default=None, max_length=40, description="達成期限（「月末」「2026-03-31」など）"
    )


def _live_flow(session: dict[str, Any], ctx: ToolContext) -> dict[str, Any] | None:
    """The goal flow in progress (it has its own expiry: the session's mode may move on)."""
    flow = session.get("goal_flow") or {}
    expires = flow.get("expires_at")
    if (
        flow.get("kind") == FLOW
        and flow.get("goal_id")
        and isinstance(expires, datetime)
        and expires > ctx.now
    ):
        return dict(flow)
    return None


def goal_registration(p: GoalRegistrationParams, ctx: ToolContext, txn: Transaction | None) -> dict[str, Any]:
    given = {
        "title": p.title and require_text(p.title, "title"),
        "why": p.why and require_text(p.why, "why"),
        "how": p.how and require_text(p.how, "how"),
        "deadline": normalize_date(
            p.deadline, ctx.now, field="deadline", allow_past=PAST_DATE in ctx.confirmed
        ),
    }
    spath = session_path(ctx.org_id, ctx.conversation_key or f"{ctx.org_id}/{ctx.room_id}/{ctx.user_id}")
    reader = txn if txn is not None else ctx.store
    session = reader.get(spath) or {}
    flow = _live_flow(session, ctx)
    goal_id = flow["goal_id"] if flow else doc_id(ctx, "g")
    draft = (reader.get(goals_path(ctx, goal_id)) if flow else None) or {}
    fields = {k: given[k] or draft.get(k) for k in STEPS}
    missing = [k for k in STEPS if not fields[k]]
    status = "draft" if missing else "active"
    result = {
        "goal_id": goal_id,
        "status": status,
        **fields,
        "next_step": missing[0] if missing else None,
        "next_question": QUESTIONS[missing[0]] if missing else None,
        "started": flow is None,
    }
    if ctx.dry_run:
        return preview("goal_registration", **result)
    w = writer(ctx, txn)
    w.set(
        goals_path(ctx, goal_id),
        {
            **draft,
            **fields,
            "user_id": ctx.user_id,
            # where the heartbeat's check-ins go (seed 001 §17): the conversation that set it
            "org_id": ctx.org_id,
            "room_id": ctx.room_id,
            "channel": ctx.channel or draft.get("channel", ""),
            "status": status,
            "progress": int(draft.get("progress", 0)),
            "reports": draft.get("reports", []),
            "created_at": draft.get("created_at", ctx.now),
            "updated_at": ctx.now,
        },
    )
    change: dict[str, Any] = {
        "goal_flow": {"kind": FLOW, "goal_id": goal_id, "step": missing[0], "expires_at": ctx.now + FLOW_TTL}
        if missing
        else None,
        "updated_at": ctx.now,
    }
    if session.get("mode", "normal") in ("normal", "multi_step_flow"):  # never over a pending confirmation
        change["mode"] = "multi_step_flow" if missing else "normal"
        change["expires_at"] = ctx.now + FLOW_TTL
    w.set(spath, change, merge=True)
    return result


def _own_goals(
    ctx: ToolContext, statuses: tuple[str, ...]
) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, list[str]]]:
    """The asker's goals of ``statuses``, opened: what they gave to keep (a phone number in a
    title, ``privacy.sealing``) is theirs to read in clear; and each goal's opened values, for
    the reply (``revealed``: only those of the goals it shows)."""
    docs = ctx.store.query(goals_path(ctx), where=[("user_id", "==", ctx.user_id)], limit=200)
    mine: list[tuple[str, dict[str, Any]]] = []
    values: dict[str, list[str]] = {}
    for gid, d in docs:
        if d.get("status") in statuses and d.get("user_id") == ctx.user_id:
            opened, values[gid] = unseal(d, ctx.cipher)
            mine.append((gid, opened))
    mine.sort(key=lambda item: (str(item[1].get("deadline") or "9999"), item[0]))
    return mine, values


def _shown(goal_id: str, doc: dict[str, Any]) -> dict[str, Any]:
    return {
        "goal_id": goal_id,
        "title": doc.get("title"),
        "progress": doc.get("progress", 0),
        "deadline": doc.get("deadline"),
        "status": doc.get("status"),
    }


class GoalProgressParams(Params):
    goal_id: DocId | None = Field(
        default=None, description="目標ID（省略時は目標の内容や唯一の目標から特定）"
    )
    goal_query: str | None = Field(
        default=None, max_length=200, description="目標を特定する言葉（内容の一部）"
    )
    progress_content: str | None = Field(default=None, max_length=1000, description="進捗内容（報告の場合）")
    progress_percent: int | None = Field(
        default=None, ge=0, le=100, description="達成率（0〜100、報告の場合）"
    )


def goal_progress_report(p: GoalProgressParams, ctx: ToolContext, txn: Transaction | None) -> dict[str, Any]:
    goals, values = _own_goals(ctx, ("active",))
    if p.progress_content is None and p.progress_percent is None:  # a question, not a report
        if p.goal_id or p.goal_query:
            chosen = pick_one(
                "目標", "goal_query", [(g, d.get("title", "")) for g, d in goals], p.goal_query, p.goal_id
            )
            goals = [(g, d) for g, d in goals if g == chosen]
        shown = goals[:10]
        return {
            "count": len(goals),
            "goals": [_shown(g, d) for g, d in shown],
            **revealed([v for g, _ in shown for v in values[g]]),
        }
    chosen = pick_one(
        "目標", "goal_query", [(g, d.get("title", "")) for g, d in goals], p.goal_query, p.goal_id
    )
    content = require_text(p.progress_content, "progress_content") if p.progress_content else ""
    if ctx.dry_run:
        return preview(
            "goal_progress_report", goal_id=chosen, progress_percent=p.progress_percent, content=content
        )
    w = writer(ctx, txn)
    current = w.get(goals_path(ctx, chosen)) or {}
    if current.get("user_id") != ctx.user_id or current.get("status") != "active":
        raise ToolInputError("その目標には報告できません", key="goal_not_reportable", field="goal_id")
    progress = p.progress_percent if p.progress_percent is not None else int(current.get("progress", 0))
    report = {"at": ctx.now, "content": content, "percent": p.progress_percent}
    w.set(
        goals_path(ctx, chosen),
        {
            "reports": [*current.get("reports", []), report][-50:],
            "progress": progress,
            "status": "done" if progress >= 100 else "active",
            "updated_at": ctx.now,
        },
        merge=True,
    )
    title = dict(goals)[chosen].get("title")  # opened for its owner, as listed
    return {
        "goal_id": chosen,
        "title": title,
        "progress": progress,
        "reported": content,
        **revealed(values[chosen]),
    }


class DeleteGoalParams(Params):
    goal_id: DocId | None = Field(default=None, description="削除する目標のID")
    goal_query: str | None = Field(default=None, max_length=200, description="削除する目標を特定する言葉")

    @model_validator(mode="after")
    def _one_target(self) -> DeleteGoalParams:
        if not self.goal_id and not self.goal_query:
            raise ValueError("goal_id か goal_query のどちらかが必要です")
        return self


def delete_goal(p: DeleteGoalParams, ctx: ToolContext, txn: Transaction | None) -> dict[str, Any]:
    goals, values = _own_goals(ctx, ("draft", "active", "done"))
    chosen = pick_one(
        "目標", "goal_query", [(g, d.get("title") or "") for g, d in goals], p.goal_query, p.goal_id
    )
    title = dict(goals)[chosen].get("title")
    if ctx.dry_run:
        return preview("delete_goal", goal_id=chosen, title=title)
    writer(ctx, txn).set(goals_path(ctx, chosen), {"status": "deleted", "deleted_at": ctx.now}, merge=True)
    return {"goal_id": chosen, "title": title, "deleted": True, **revealed(values[chosen])}


class ViewTeamGoalsParams(Params):
    target_department_id: DocId | None = Field(
        default=None, description="対象部署のID（省略時は依頼者の部署）"
    )


def view_team_goals(p: ViewTeamGoalsParams, ctx: ToolContext, txn: Transaction | None) -> dict[str, Any]:
    department, name = team_department(ctx, p.target_department_id)
    members = {m.user_id: m.name for m in department_members(ctx.store, ctx.org_id, department)}
    ids = sorted(members)
    goals: list[dict[str, Any]] = []
    for i in range(0, len(ids), IN_QUERY_LIMIT):
        for gid, doc in ctx.store.query(
            goals_path(ctx),
            where=[("user_id", "in", ids[i : i + IN_QUERY_LIMIT]), ("status", "==", "active")],
            limit=200,
        ):
            goals.append({**_shown(gid, doc), "owner": members.get(str(doc.get("user_id")))})
    goals.sort(key=lambda g: (str(g["owner"]), str(g["title"])))
    return {
        "department_id": department,
        "department": name,
        "member_count": len(members),
        "count": len(goals),
        "goals": goals[:50],
    }
