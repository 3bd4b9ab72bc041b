"""``view_salary_info`` (seed 000 §6.4.4: level 6, 代表のみ): one person's salary record.

The record is ``orgs/{org}/salaries/{user_id}`` (personal data: ``retention: org``, stored
masked, found and deleted by ``charter data purge``); the payroll import writes it, the tool
only reads. The person is named like every other target (「俺」 is the sender, two 田中さん
is a question, never a guess); the authorization gate has checked the level and the scope.
Only the amounts are returned, never the document's bookkeeping fields.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from shared_lib import collections
from shared_lib.ports import Transaction
from shared_lib.tools.handlers.base import Params, target_person
from shared_lib.tools.normalize import DocId
from shared_lib.tools.registry import ToolContext, ToolInputError

AMOUNTS = {
    "monthly_base": "月額基本給",
    "allowances": "手当",
    "annual_total": "年収合計",
    "last_bonus": "直近の賞与",
}


class ViewSalaryInfoParams(Params):
    target_user_name: str = Field(
        min_length=1, max_length=100, description="給与を確認する社員の名前。自分なら「自分」"
    )
    target_user_id: DocId | None = Field(default=None, description="対象社員のID（わかる場合のみ）")


def view_salary_info(p: ViewSalaryInfoParams, ctx: ToolContext, txn: Transaction | None) -> dict[str, Any]:
    person = target_person(
        ctx, p.target_user_name, p.target_user_id, name_field="target_user_name", id_field="target_user_id"
    )
    doc = ctx.store.get(collections.path("salaries", org=ctx.org_id, id=person.user_id))
    if doc is None:
        raise ToolInputError(
            f"{person.name}さんの給与情報は登録されていません",
            key="salary_none",
            field="target_user_name",
            name=person.name,
        )
    amounts = {k: doc[k] for k in AMOUNTS if isinstance(doc.get(k), int | float)}
    lines = [f"{AMOUNTS[k]}: {v:,.0f}円" for k, v in amounts.items()]
    return {"user": person.name, **amounts, "details": lines}
