"""Review (seed 001 §29.4–29.5: every example a person has looked at): accept, edit or reject a
staged candidate, with the reviewer and the time.

Who may review: a person of level 6 (seed 000: 代表/CFO) of the organisation's directory,
always named by ``by`` and checked as ``memory.ingest`` checks levels (seed 001 §29.5: every
example is one a person looked at; there is no anonymous "operator" review). An
edit gives a new target — a reply text (it becomes a ``text_response`` proposal) or a whole
proposal — re-validated against the brain's output schema (``proposal.Proposal``) and masked
on write; ``edited`` counts as accepted. A held-out candidate can be reviewed like any other;
the export never takes it.

>>> REVIEW_LEVEL, sorted(ACCEPTED)
(6, ['accepted', 'edited'])
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError

from shared_lib import collections
from shared_lib.errors import CharterError
from shared_lib.features.finetune.state.staging import candidate_path, masked_text
from shared_lib.memory.ingest import NotAllowed, check_level
from shared_lib.ports import Doc, Op, Store
from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.tools.at_rest import at_rest
from shared_lib.turn.proposal import Proposal

REVIEW_LEVEL = 6
STATUSES = ("pending", "accepted", "edited", "rejected")
ACCEPTED = frozenset({"accepted", "edited"})
SCAN_LIMIT = 10_000


def check_reviewer(store: Store, org_id: str, by: str) -> None:
    """``by`` names a level-6 person of ``org_id``'s directory, or ``NotAllowed``."""
    if not by or not by.strip():
        raise NotAllowed("a review names the person who made it (a level-6 person)", "unknown_person")
    check_level(store, org_id, by.strip(), REVIEW_LEVEL, "reviewing fine-tuning data")


class ReviewError(CharterError):
    """A review that cannot be made (``code``: ``not_found``, ``invalid``, ``no_target``)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


def list_candidates(store: Store, org_id: str, status: str | None = None, limit: int = 200) -> list[Doc]:
    """The organisation's candidates (of one status), newest first, each with its ``id``."""
    where: list[tuple[str, Op, Any]] = [("status", "==", status)] if status else []
    docs = store.query(
        collections.collection_path("ft_candidates", org=org_id), where=where, limit=SCAN_LIMIT
    )
    listed = [{**doc, "id": cid} for cid, doc in docs]
    listed.sort(key=lambda d: (str((d.get("source") or {}).get("created_at") or ""), d["id"]), reverse=True)
    return listed[:limit]


def get_candidate(store: Store, org_id: str, candidate_id: str) -> Doc:
    if not candidate_id or "/" in candidate_id:
        raise ReviewError(f"{candidate_id!r} is not a candidate id", "invalid")
    doc = store.get(candidate_path(org_id, candidate_id))
    if doc is None:
        raise ReviewError(f"no candidate {candidate_id} in {org_id}", "not_found")
    return {**doc, "id": candidate_id}


def accept(store: Store, org_id: str, candidate_id: str, *, now: datetime, by: str) -> Doc:
    """Accept the candidate as staged (a corrected one needs its target: edit it instead)."""
    check_reviewer(store, org_id, by)
    doc = get_candidate(store, org_id, candidate_id)
    if not doc.get("target"):
        raise ReviewError(f"{candidate_id} has no target to accept: edit it with one", "no_target")
    return _write(store, org_id, doc, {"status": "accepted", "by": by.strip(), "at": now})


def reject(store: Store, org_id: str, candidate_id: str, *, reason: str, now: datetime, by: str) -> Doc:
    check_reviewer(store, org_id, by)
    if not reason.strip():
        raise ReviewError("a rejection needs a reason", "invalid")
    doc = get_candidate(store, org_id, candidate_id)
    review = {"status": "rejected", "by": by.strip(), "at": now, "reason": masked_text(reason.strip())}
    return _write(store, org_id, doc, review)


def edit(
    store: Store,
    org_id: str,
    candidate_id: str,
    *,
    now: datetime,
    reply: str | None = None,
    proposal: dict[str, Any] | None = None,
    by: str,
    known_tools: Collection[str] | None = None,
) -> Doc:
    """A new target: ``reply`` (a plain reply) or ``proposal`` (the brain's output schema)."""
    check_reviewer(store, org_id, by)
    if (reply is None) == (proposal is None):
        raise ReviewError("an edit gives either a reply or a proposal", "invalid")
    doc = get_candidate(store, org_id, candidate_id)
    data = proposal if proposal is not None else _reply_proposal(doc, str(reply))
    try:
        checked = Proposal.model_validate(Sanitizer.default().mask_obj(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ReviewError(
            f"not a proposal of the brain's schema: {where}: {first['msg']}", "invalid"
        ) from exc
    unknown = [
        c.tool_name for c in checked.tool_calls if known_tools is not None and c.tool_name not in known_tools
    ]
    if unknown:
        raise ReviewError(f"unknown tool(s): {', '.join(unknown)}", "invalid")
    text = getattr(checked.root, "text_response", "") or getattr(checked.root, "clarification_question", "")
    doc["target"] = {"proposal": checked.model_dump(mode="json", exclude_none=True), "reply": text}
    return _write(store, org_id, doc, {"status": "edited", "by": by.strip(), "at": now})


def _reply_proposal(doc: Doc, reply: str) -> dict[str, Any]:
    """A reviewer's reply as a plain-reply proposal, keeping the staged intent where there is one."""
    if not reply.strip():
        raise ReviewError("an edited reply is not empty", "invalid")
    staged = ((doc.get("target") or {}).get("proposal") or {}) if isinstance(doc.get("target"), dict) else {}
    intent = str((staged.get("reasoning") or {}).get("intent_understanding") or "依頼の意図を読み取る")
    return {
        "output_type": "text_response",
        "reasoning": {"intent_understanding": intent, "no_tool_reason": "レビューで返答を修正した"},
        "confidence": {"overall": 1.0},
        "text_response": reply.strip(),
    }


def _write(store: Store, org_id: str, doc: Doc, review: dict[str, Any]) -> Doc:
    candidate_id = str(doc.pop("id"))
    doc.update(status=review["status"], review=review)
    path = candidate_path(org_id, candidate_id)
    expires = doc.get("expires_at")
    kept = expires - review["at"] if isinstance(expires, datetime) else timedelta(days=30)
    stored = at_rest(path, doc, now=review["at"], retention=kept)  # the staged expiry stays
    store.set(path, stored)
    return {**stored, "id": candidate_id}
