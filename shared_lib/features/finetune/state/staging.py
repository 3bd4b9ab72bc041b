"""Staging (seed 001 §29.3): a completed turn becomes a fine-tuning candidate by fixed rules.

Run by the background memory layer on ``turns.completed`` (after the reply is sent; nothing
waits for it). Which turns are never considered (``skip_reason``): shadow and smoke copies, a
turn the debounce absorbed, a delegated job's turn, a ``/local`` turn and a turn of the legacy
arm. Which are (``outcome``):

* ``good``: the brain's proposal (or the stored one a person confirmed) was executed with every
  tool result ok, or was a plain reply; the guardian did not block, the gate did not deny, the
  self-critique (when it ran) found it appropriate, its confidence is at least
  ``min_confidence`` (0.8);
* a correction: the person's next message in the same conversation carries a cue of
  ``correction_cues`` (「違う」「そうじゃなくて」…): their last staged candidate there (within
  ``correction_window_minutes``) becomes ``corrected``, its target the correcting turn's proposal
  (when that one is good) and the correcting words its reason. It is never ``good`` again.

Only for an organisation that opted in (``settings/company.ft_staging``: one read). The
candidate (``orgs/{org}/ft_candidates/{turn_id}``) and the person's ledger
(``orgs/{org}/ft_ledgers/{user_id}``: today's pending count for the cap, the last staged
candidate for a correction) are read and written in one transaction: one read, two writes; a
correction reads the earlier candidate too. A redelivery finds the candidate there (its
``create`` fails) and changes nothing. Everything is stored ``mask_stored`` with the
organisation's retention (``tools.at_rest``); the held-out split (about 10 %, by a hash of the
turn id) is decided here and never changed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from shared_lib import collections
from shared_lib.features.finetune.state.config import FinetuneConfig, load_config, opted_in
from shared_lib.ports import AlreadyExistsError, Doc, Store, Transaction
from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.tools.at_rest import at_rest
from shared_lib.turn.envelope import Turn

PENDING = "pending"
LEDGER_TTL = timedelta(days=2)


def skip_reason(turn: Turn) -> str | None:
    """Why the turn is never a candidate (``None``: it may be one). A shadow candidate and a
    delegated job's turn never reach this (the stage table: the memory stage takes no shadow,
    and staging is a step of a person's turn only)."""
    if turn.smoke:
        return "smoke"
    if turn.context.debounce.get("role") == "absorbed":
        return "merged"
    if turn.route.local_only:
        return "local"
    if turn.flags.arm == "legacy":
        return "legacy_arm"
    return None


def outcome(turn: Turn, cfg: FinetuneConfig) -> str:
    """``good``, or the first rule the turn fails (a stable code)."""
    section, proposal = turn.proposal, turn.proposal.proposal
    if proposal is None:
        return "no_proposal"
    confirmed = bool(section.approval and section.approval.get("approved"))
    if section.arm != "llm" and not (section.arm == "state" and confirmed):
        return "not_llm_proposal"
    if turn.guardian is not None and turn.guardian.action == "block":
        return "guardian_block"
    if turn.authorization is not None and turn.authorization.result == "denied":
        return "gate_deny"
    critique = section.self_critique
    if critique is not None and not (critique.get("status") == "ok" and critique.get("appropriate") is True):
        return "critique_not_passed"
    if proposal.confidence < cfg.min_confidence:
        return "low_confidence"
    if turn.response.kind != "reply":
        return f"response_{turn.response.kind}"
    if proposal.output_type == "clarification_needed":
        return "clarification"
    if proposal.output_type == "tool_call":
        results = turn.execution.results
        if not results or turn.execution.dry_run or not all(r.ok and not r.dry_run for r in results):
            return "not_executed_ok"
    if confirmed and not brain_input(turn):
        return "confirmation_without_request"
    return "good"


def brain_input(turn: Turn) -> str:
    """The user message the brain answered: a confirmed action's original request, else the text."""
    if approval := turn.proposal.approval:
        return turn.loop.request or str(approval.get("request") or "")
    return turn.inbound.text


def is_correction(text: str, cfg: FinetuneConfig) -> bool:
    return any(cue in text for cue in cfg.correction_cues)


def held_out(turn_id: str, percent: int) -> bool:
    """The deterministic held-out split: the same turn id is always on the same side.

    >>> held_out("t-1", 10) == held_out("t-1", 10), held_out("t-1", 0)
    (True, False)
    """
    return int(hashlib.sha256(turn_id.encode()).hexdigest()[:8], 16) % 100 < percent


def masked_text(text: str) -> str:
    """Numbered like the brain saw it (a fresh vault: 「[PHONE_1]」), so input and target agree."""
    return Sanitizer.default().mask(text)[0]


def target_of(turn: Turn) -> dict[str, Any] | None:
    """The accepted proposal as the brain's output schema (masked when stored), and the reply."""
    proposal = turn.proposal.proposal
    if proposal is None:
        return None
    return {
        "proposal": Sanitizer.default().mask_obj(proposal.model_dump(mode="json", exclude_none=True)),
        "reply": masked_text(turn.response.text),
    }


def candidate_doc(turn: Turn, cfg: FinetuneConfig) -> Doc:
    tools = [c.tool_name for c in turn.proposal.proposal.tool_calls] if turn.proposal.proposal else []
    return {
        "turn_id": turn.turn_id,
        "kind": "good",
        "status": PENDING,
        "held_out": held_out(turn.turn_id, cfg.held_out_percent),
        "input": {
            "user": masked_text(brain_input(turn)),
            "context": masked_text(turn.context.rendered[: cfg.context_chars]),
        },
        "target": target_of(turn),
        "correction": None,
        "review": None,
        "user_id": turn.user_id,
        "source": {
            "outcome": turn.response.kind,
            "tool": tools[0] if tools else "",
            "route": turn.route.route,
            "user_id": turn.user_id,
            "conversation_id": collections.conversation_id(turn.conversation_key),
            "created_at": turn.created_at,
        },
        "day": turn.created_at.date().isoformat(),
    }


@dataclass(frozen=True)
class Staging:
    """What one completed turn did to the staging (``result``: a stable code)."""

    result: str
    candidate_id: str | None = None


def stage(
    store: Store,
    turn: Turn,
    *,
    now: datetime,
    retention: timedelta,
    cfg: FinetuneConfig | None = None,
) -> Staging:
    """Stage the completed turn if the rules say so (see the module docstring)."""
    cfg = cfg or load_config()
    if reason := skip_reason(turn):
        return Staging(f"skipped_{reason}")
    verdict = outcome(turn, cfg)
    correction = is_correction(turn.inbound.text, cfg)
    if verdict != "good" and not correction:
        return Staging(f"not_good_{verdict}")
    if not opted_in(store, turn.org_id, cached=True):
        return Staging("off")
    try:
        return store.run_transaction(
            lambda txn: _stage_in(txn, turn, verdict, correction, now=now, retention=retention, cfg=cfg)
        )
    except AlreadyExistsError:
        return Staging("duplicate", turn.turn_id)


def ledger_path(org_id: str, user_id: str) -> str:
    return collections.path("ft_ledgers", org=org_id, id=user_id)


def candidate_path(org_id: str, candidate_id: str) -> str:
    return collections.path("ft_candidates", org=org_id, id=candidate_id)


def _stage_in(
    txn: Transaction,
    turn: Turn,
    verdict: str,
    correction: bool,
    *,
    now: datetime,
    retention: timedelta,
    cfg: FinetuneConfig,
) -> Staging:
    lpath = ledger_path(turn.org_id, turn.user_id)
    ledger = txn.get(lpath) or {}
    if correction:
        corrected = _correct(txn, turn, ledger, verdict, now=now, retention=retention, cfg=cfg)
        if corrected is not None:
            return corrected
    if verdict != "good":
        return Staging(f"not_good_{verdict}")
    day = turn.created_at.date().isoformat()
    pending = int(ledger.get("pending", 0)) if ledger.get("day") == day else 0
    if pending >= cfg.pending_per_person_per_day:
        return Staging("cap")
    cpath = candidate_path(turn.org_id, turn.turn_id)
    txn.create(cpath, at_rest(cpath, candidate_doc(turn, cfg), now=now, retention=retention))
    last = {
        "turn_id": turn.turn_id,
        "conversation_id": collections.conversation_id(turn.conversation_key),
        "at": turn.created_at,
    }
    # ids, a count and a time (no personal text): short bookkeeping that expires on its own
    txn.set(
        lpath,
        {
            "user_id": turn.user_id,
            "day": day,
            "pending": pending + 1,
            "last": last,
            "expires_at": now + LEDGER_TTL,
        },
    )
    return Staging("staged_good", turn.turn_id)


def _correct(
    txn: Transaction,
    turn: Turn,
    ledger: Doc,
    verdict: str,
    *,
    now: datetime,
    retention: timedelta,
    cfg: FinetuneConfig,
) -> Staging | None:
    """Mark the person's last staged candidate of this conversation corrected (``None``: there is
    none to correct, the turn is judged as any other)."""
    last = ledger.get("last") or {}
    earlier_id = str(last.get("turn_id") or "")
    at = last.get("at")
    if (
        not earlier_id
        or earlier_id == turn.turn_id
        or last.get("conversation_id") != collections.conversation_id(turn.conversation_key)
        or not isinstance(at, datetime)
        or turn.created_at - at > timedelta(minutes=cfg.correction_window_minutes)
    ):
        return None
    cpath = candidate_path(turn.org_id, earlier_id)
    earlier = txn.get(cpath)
    if earlier is None or earlier.get("status") != PENDING:
        return None  # expired, purged or already reviewed: a reviewer's decision stands
    if (earlier.get("correction") or {}).get("turn_id") == turn.turn_id:
        return Staging("duplicate", earlier_id)
    update = {
        **earlier,
        "kind": "corrected",
        "target": target_of(turn) if verdict == "good" else None,
        "correction": {"turn_id": turn.turn_id, "text": masked_text(turn.inbound.text), "outcome": verdict},
    }
    txn.set(cpath, at_rest(cpath, update, now=now, retention=retention))
    return Staging("corrected", earlier_id)
