"""``propose_skill`` (seed 001 §23.4): the model proposes a skill; it is stored as a draft only.

The spec (name, what users read, input schema, examples, code or prompt template) is validated
as a ``skills.spec.SkillSpec`` (author ``model``), stored as a new draft version in the effect's
transaction, and, once that committed, its examples run in the sandbox and the result is recorded
on the version. Nothing here enables it: only a level-6 person's approval does
(``charter skills approve``), and only for a version whose test passed.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError

from shared_lib.ports import Store, Transaction
from shared_lib.skills.examples import run_version_test
from shared_lib.skills.spec import SkillSpec
from shared_lib.skills.store import propose_in
from shared_lib.tools.handlers.base import Params, preview, writer
from shared_lib.tools.registry import ToolContext, ToolInputError
from shared_lib.tools.skill_tools import sandbox_config

log = logging.getLogger(__name__)


class ProposeSkillParams(Params):
    name: Annotated[str, Field(description="スキルの内部名（英小文字とアンダースコア）", pattern=r"^[a-z][a-z0-9_]{1,40}$")]
    display_name: str = Field(description="利用者に見せるスキル名（日本語）")
    description: str = Field(description="スキルが何をするか")
    input_schema: dict[str, Any] = Field(description="入力の JSON Schema（type: object, properties, required）")
    parameter_display: dict[str, str] = Field(description="入力項目ごとの日本語の表示名")
    trigger_examples: list[str] = Field(description="このスキルを使う依頼の例（3〜5件）")
    keywords: list[str] = Field(description="このスキルを呼ぶキーワード")
    kind: Literal["code", "prompt"] = Field(description="code: Python の run(input, view)、prompt: 文章のテンプレート")
    implementation: str = Field(description="実装（code なら run(input, view) を定義する Python、prompt なら $名前 のテンプレート）")
    examples: list[dict[str, Any]] = Field(description="入力と期待する出力の例（input, output）1〜10件")
    min_level: int = Field(default=2, ge=2, le=6, description="使えるようになる権限レベル（2〜6）")


def _test_after_commit(org_id: str, name: str, version: int, now: Any) -> Any:
    def test(store: Store, retention: timedelta | None) -> None:
        _, state, report = run_version_test(store, org_id, name, version, sandbox_config(), now)
        log.info("skill %s v%d tested: %s %s", name, version, state, report["error_kinds"])

    return test


def propose_skill(params: ProposeSkillParams, ctx: ToolContext, txn: Transaction | None) -> dict[str, Any]:
    try:
        spec = SkillSpec.model_validate({**params.model_dump(), "author": "model"})
    except ValidationError as exc:
        log.info("propose_skill: invalid spec: %s", exc.errors()[:3])
        raise ToolInputError("スキルの定義が正しくないウル（入力の形・表示名・例を見直してほしいウル）") from exc
    if ctx.dry_run or txn is None:
        return preview("propose_skill", display_name=spec.display_name)
    version, created = propose_in(writer(ctx, txn), ctx.org_id, spec, by=ctx.user_id, now=ctx.now)
    if created:
        ctx.after_commit.append(_test_after_commit(ctx.org_id, spec.name, version, ctx.now))
    return {"display_name": spec.display_name, "version": version, "draft": True}
