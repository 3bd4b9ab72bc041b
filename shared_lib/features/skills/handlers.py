"""``propose_skill`` (seed 001 §23.4): the model proposes a skill; it is stored as a draft only.

The spec (name, what users read, input schema, examples, code or prompt template) is validated
as a ``skills.spec.SkillSpec`` (author ``model``); once the call's transaction committed (never
on a replay) it is stored as a draft version, and that is all: its code is never run in the
proposing person's turn (a draft is untrusted code; running it there let anyone who can chat
set it off). It runs in the sandbox only when a level-6 person asks (``charter skills test``,
or ``charter skills approve``, which tests an untested version first). It is stored after the
commit, not through the effect's transaction, because that one masks what it writes
(``tools.at_rest``): a masked implementation would no longer be the code its hash names. The
same code again is the same version, so a retry adds none. A spec holding a secret or a personal
value is refused before anything is stored (a tool error the persona phrases). Nothing here
enables it: only a level-6 person's approval does, and only for a version whose test passed.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError

from shared_lib.features.skills.state.spec import SkillSpec
from shared_lib.features.skills.store import SkillError, propose, refuse_secrets
from shared_lib.ports import Store, Transaction
from shared_lib.tools.handlers.base import Params, preview
from shared_lib.tools.registry import ToolContext, ToolInputError

log = logging.getLogger(__name__)


class ProposeSkillParams(Params):
    name: Annotated[
        str,
        Field(description="スキルの内部名（英小文字とアンダースコア）", pattern=r"^[a-z][a-z0-9_]{1,40}$"),
    ]
    display_name: str = Field(description="利用者に見せるスキル名（日本語）")
    description: str = Field(description="スキルが何をするか")
    input_schema: dict[str, Any] = Field(
        description="入力の JSON Schema（type: object, properties, required）"
    )
    parameter_display: dict[str, str] = Field(description="入力項目ごとの日本語の表示名")
    trigger_examples: list[str] = Field(description="このスキルを使う依頼の例（3〜5件）")
    keywords: list[str] = Field(description="このスキルを呼ぶキーワード")
    kind: Literal["code", "prompt"] = Field(
        description="code: Python の run(input, view)、prompt: 文章のテンプレート"
    )
    implementation: str = Field(
        description="実装（code なら run(input, view) を定義する Python、prompt なら $名前 のテンプレート）"
    )
    examples: list[dict[str, Any]] = Field(description="入力と期待する出力の例（input, output）1〜10件")
    min_level: int = Field(default=2, ge=2, le=6, description="使えるようになる権限レベル（2〜6）")
    reads: list[str] = Field(
        default_factory=list,
        description="コードが読む組織のデータ（tasks, goals, users, departments, salaries のうち必要なものだけ）",
    )


def _store_draft(org_id: str, spec: SkillSpec, by: str, now: datetime) -> Any:
    def store_draft(store: Store, retention: timedelta | None) -> None:
        version, created = propose(store, org_id, spec, by=by, now=now)
        log.info("skill %s v%d: %s", spec.name, version, "a new draft" if created else "the same code")

    return store_draft


def propose_skill(params: ProposeSkillParams, ctx: ToolContext, txn: Transaction | None) -> dict[str, Any]:
    try:
        spec = SkillSpec.model_validate({**params.model_dump(), "author": "model"})
    except ValidationError as exc:
        log.info("propose_skill: invalid spec: %s", exc.errors()[:3])
        raise ToolInputError("invalid skill spec", key="skill_invalid") from exc
    try:
        refuse_secrets(spec)  # checked now: the draft is stored after the commit, unmasked
    except SkillError as exc:
        log.info("propose_skill: refused: %s", exc)
        raise ToolInputError("skill spec holds a secret or personal value", key="skill_secret") from exc
    if ctx.dry_run or txn is None:
        return preview("propose_skill", display_name=spec.display_name)
    ctx.after_commit.append(_store_draft(ctx.org_id, spec, ctx.user_id, ctx.now))
    return {"display_name": spec.display_name, "draft": True}
