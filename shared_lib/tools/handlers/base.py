"""What every handler shares: the parameter base model and the write discipline.

Parameter models forbid unknown keys and strip blanks; a model says what a value may
look like, the handler's fixed logic says what it means (dates, people, ownership).
Handlers derive document ids from the call id, so a replay names the same document.
"""

from __future__ import annotations

import hashlib
from typing import Any

from pydantic import BaseModel, ConfigDict

from shared_lib.ports import Transaction
from shared_lib.tools.directory import Person, get_person, resolve_person
from shared_lib.tools.matching import best_matches
from shared_lib.tools.normalize import clean_text
from shared_lib.tools.registry import ToolContext, ToolInputError


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


def doc_id(ctx: ToolContext, prefix: str) -> str:
    """A stable id for the document this call creates."""
    return f"{prefix}-" + hashlib.sha256(f"{ctx.org_id}:{ctx.turn_id}".encode()).hexdigest()[:20]


def writer(ctx: ToolContext, txn: Transaction | None) -> Transaction:
    """The transaction to write through; a handler that gets none may not write."""
    if ctx.dry_run or txn is None:
        raise RuntimeError("handler tried to write without a transaction (dry run or read-only call)")
    return txn


def preview(action: str, **details: Any) -> dict[str, Any]:
    """The result of a dry run: what would have happened."""
    return {"dry_run": True, "would": action, **details}


def require_text(value: str, field: str) -> str:
    text = clean_text(value)
    if not text:
        raise ToolInputError(f"{field} が空です", key="empty", field=field)
    return text


def pick_one(
    kind: str, field: str, candidates: list[tuple[str, str]], query: str | None, wanted_id: str | None
) -> str:
    """Choose exactly one of ``(id, label)`` by id, list number or keywords; ask when unsure."""
    if wanted_id is not None:
        if wanted_id not in {cid for cid, _ in candidates}:
            raise ToolInputError(
                f"指定された{kind}が見つかりません", key="item_unknown", field=field, kind=kind
            )
        return wanted_id
    text = clean_text(query or "")
    if text.isdigit():
        index = int(text)
        if not 1 <= index <= len(candidates):
            raise ToolInputError(
                f"{index}番の{kind}はありません（{len(candidates)}件）",
                key="item_index",
                field=field,
                kind=kind,
                index=index,
                count=len(candidates),
            )
        return candidates[index - 1][0]
    if not candidates:
        raise ToolInputError(f"対象の{kind}がありません", key="item_none", field=field, kind=kind)
    if not text and len(candidates) == 1:
        return candidates[0][0]
    hits = best_matches(text, candidates) if text else [cid for cid, _ in candidates]
    if not hits:
        raise ToolInputError(
            f"「{text}」に当てはまる{kind}が見つかりません",
            key="item_not_found",
            field=field,
            kind=kind,
            said=text,
        )
    if len(hits) > 1:
        labels = dict(candidates)
        raise ToolInputError(
            f"当てはまる{kind}が{len(hits)}件あります。どれですか？",
            key="item_ambiguous",
            field=field,
            kind=kind,
            count=len(hits),
            options=[labels[h] for h in hits[:10]],
        )
    return hits[0]


def target_person(
    ctx: ToolContext, name: str, user_id: str | None, *, name_field: str, id_field: str
) -> Person:
    """The person a call targets: by id when given (it must exist), else by name (one person)."""
    if user_id is None:
        return resolve_person(ctx.store, ctx.org_id, name, sender_id=ctx.user_id, field=name_field)
    person = get_person(ctx.store, ctx.org_id, user_id)
    if person is None:
        raise ToolInputError("指定された社員が見つかりません", key="person_unknown_id", field=id_field)
    return person
