"""Organisation tools: announcements (``announce``, ``send_to_all``), the staff list and
``change_permission`` (registered so that the charter can refuse it; its handler still
checks, with fixed logic, that nobody grants more than they hold or changes their own).

An announcement is an outbox document (``orgs/{org}/announcements``, status ``queued``)
written in the executor's transaction; a delivery worker sends it through the channels.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from shared_lib.ports import Store, Transaction
from shared_lib.tools.directory import (
    Person,
    department_members,
    get_person,
    list_people,
    resolve_department,
    resolve_person,
)
from shared_lib.tools.handlers.base import Params, doc_id, preview, require_text, target_person, writer
from shared_lib.tools.normalize import DocId
from shared_lib.tools.registry import PrecheckReads, ToolContext, ToolInputError

MAX_NAMED_RECIPIENTS = 50


class AnnounceParams(Params):
    message: str = Field(min_length=1, max_length=2000, description="お知らせの本文")
    recipients: Literal["all"] | list[str] = Field(
        default="all", description='宛先。全員なら "all"、特定の人なら名前のリスト'
    )
    department: str | None = Field(
        default=None,
        max_length=100,
        description='部署宛てなら部署名（例: "営業部"）。その部署と配下の部署の全員に送る（recipients は省く）',
    )


def _outbox(
    ctx: ToolContext, txn: Transaction | None, message: str, people: list[Person], tool: str
) -> dict[str, Any]:
    names = [p.name for p in people]
    shown = {"message": message, "recipient_count": len(people), "recipients": names[:20]}
    if ctx.dry_run:
        return preview(tool, **shown)
    ann_id = doc_id(ctx, "a")
    writer(ctx, txn).set(
        f"orgs/{ctx.org_id}/announcements/{ann_id}",
        {
            "message": message,
            "recipients": [p.user_id for p in people],
            "recipient_names": names,
            "room_id": ctx.room_id,
            "by": ctx.user_id,
            "status": "queued",
            "created_at": ctx.now,
        },
    )
    return {"announcement_id": ann_id, **shown}


def _department(p: AnnounceParams, store: Store, org_id: str) -> str | None:
    """The department an announcement is for (``None``: everyone or names); refused when the
    directory does not hold it (or holds it twice), or when names are said beside it."""
    if not p.department:
        return None
    if p.recipients != "all":
        raise ToolInputError("部署と名前の両方は宛先にできません", key="recipients_mixed", field="department")
    return resolve_department(store, org_id, p.department)


def announce_precheck(p: AnnounceParams, reads: PrecheckReads) -> None:
    """Before the confirmation is asked: what ``_department`` refuses is refused at once, not
    after 「はい」. One query."""
    _department(p, reads.store, reads.org_id)


def announce(p: AnnounceParams, ctx: ToolContext, txn: Transaction | None) -> dict[str, Any]:
    message = require_text(p.message, "message")
    if (dept := _department(p, ctx.store, ctx.org_id)) is not None:
        people = department_members(ctx.store, ctx.org_id, dept)
    elif p.recipients == "all":
        people = list_people(ctx.store, ctx.org_id)
    else:
        if not p.recipients or len(p.recipients) > MAX_NAMED_RECIPIENTS:
            raise ToolInputError(
                f"宛先は1〜{MAX_NAMED_RECIPIENTS}人で指定してください",
                key="recipients_count",
                field="recipients",
                most=MAX_NAMED_RECIPIENTS,
            )
        resolved = [
            resolve_person(ctx.store, ctx.org_id, n, sender_id=ctx.user_id, field="recipients")
            for n in p.recipients
        ]
        people = list({x.user_id: x for x in resolved}.values())
    if not people:
        raise ToolInputError("宛先の社員がいません", key="recipients_none", field="recipients")
    return _outbox(ctx, txn, message, sorted(people, key=lambda x: x.name), "announce")


class SendToAllParams(Params):
    message: str = Field(min_length=1, max_length=2000, description="全社員に送るメッセージ本文")


def send_to_all(p: SendToAllParams, ctx: ToolContext, txn: Transaction | None) -> dict[str, Any]:
    people = sorted(list_people(ctx.store, ctx.org_id), key=lambda x: x.name)
    if not people:
        raise ToolInputError("宛先の社員がいません", key="recipients_none", field="message")
    return _outbox(ctx, txn, require_text(p.message, "message"), people, "send_to_all")


class ViewAllUsersParams(Params):
    pass


def view_all_users(p: ViewAllUsersParams, ctx: ToolContext, txn: Transaction | None) -> dict[str, Any]:
    people = sorted(list_people(ctx.store, ctx.org_id), key=lambda x: (x.department_id or "", x.name))
    return {
        "count": len(people),
        "users": [{"name": x.name, "department_id": x.department_id, "level": x.level} for x in people],
    }


class ChangePermissionParams(Params):
    target_user_name: str = Field(min_length=1, max_length=100, description="権限を変更する社員の名前")
    new_level: int = Field(ge=1, le=6, description="新しい権限レベル（1〜6）")
    target_user_id: DocId | None = Field(default=None, description="対象社員のID（わかる場合のみ）")


def change_permission(p: ChangePermissionParams, ctx: ToolContext, txn: Transaction | None) -> dict[str, Any]:
    me = get_person(ctx.store, ctx.org_id, ctx.user_id)
    target = target_person(
        ctx, p.target_user_name, p.target_user_id, name_field="target_user_name", id_field="target_user_id"
    )
    if me is None or target.user_id == me.user_id:
        raise ToolInputError(
            "自分自身の権限は変更できません", key="permission_self", field="target_user_name"
        )
    if p.new_level > me.level:
        raise ToolInputError(
            "自分より高い権限は付与できません", key="permission_above_own", field="new_level"
        )
    shown = {"user": target.name, "old_level": target.level, "new_level": p.new_level}
    if ctx.dry_run:
        return preview("change_permission", **shown)
    w = writer(ctx, txn)
    w.set(f"orgs/{ctx.org_id}/users/{target.user_id}", {"level": p.new_level}, merge=True)
    w.set(
        f"orgs/{ctx.org_id}/permission_changes/{doc_id(ctx, 'p')}",
        {
            "user_id": target.user_id,
            "old_level": target.level,
            "new_level": p.new_level,
            "by": me.user_id,
            "at": ctx.now,
        },
    )
    return shown
