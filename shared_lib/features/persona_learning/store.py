"""The persona's learned extension of an organisation at rest, and a turn's proposals applied to it.

``orgs/{org}/persona_ext/current``: the extension (``shared_lib.persona.ext``: allowed keys only,
values ``Sanitizer.mask_stored``), the turns already applied and the last one's outcome. The LLM
proposes (``persona_update``, up to 3 per step); ``apply_turn`` judges every proposal of the
utterance's own steps and writes the accepted ones in one transaction. A redelivered turn finds
itself applied and changes nothing; a shadow turn, or a person below ``TEACH_MIN_LEVEL``,
changes nothing (each proposal refused with the reason). A key of the core never enters.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from shared_lib.collections import path
from shared_lib.features.agent_state.store import own_steps
from shared_lib.persona.core import PersonaCore
from shared_lib.persona.ext import (
    TEACH_MIN_LEVEL,
    PersonaChange,
    PersonaSection,
    check,
    flat,
    get_key,
    set_key,
)
from shared_lib.ports import Store, Transaction
from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.turn.envelope import Turn
from shared_lib.turn.proposal import PersonaUpdate

APPLIED_KEPT = 20  # turns remembered as applied (a redelivery comes within minutes)
_BOOKKEEPING = ("org_id", "applied_turns", "last_outcome", "updated_at")


def ext_path(org_id: str) -> str:
    return path("persona_ext", org=org_id, id="current")


def load_ext(store: Store, org_id: str) -> dict[str, Any]:
    """The organisation's extension (allowed keys only; ``{}``: none yet)."""
    doc = store.get(ext_path(org_id)) or {}
    return ext_of(doc)


def ext_of(doc: dict[str, Any]) -> dict[str, Any]:
    extension: dict[str, Any] = {}
    for key, value in flat({k: v for k, v in doc.items() if k not in _BOOKKEEPING}).items():
        extension = set_key(extension, key, value)
    return extension


def proposed(turn: Turn) -> list[PersonaUpdate]:
    """Every ``persona_update`` of the utterance's own steps, in order (a step of the "state" arm
    re-runs a stored action: its proposals were judged when it was proposed)."""
    out: list[PersonaUpdate] = []
    for step in own_steps(turn):
        if step.proposal is not None and step.arm != "state":
            out += step.proposal.root.persona_update or []
    return out


def judge(
    ext: dict[str, Any], updates: list[PersonaUpdate], core: PersonaCore, sanitizer: Sanitizer
) -> tuple[dict[str, Any], PersonaSection]:
    """``ext`` after the accepted ``updates`` (masked), and what was applied and refused."""
    section = PersonaSection()
    for u in updates:
        reason = check(u.key, u.value, core, get_key(ext, u.key))
        if reason is None and _has_secret(u.value, sanitizer):
            reason = "secret"
        if reason is not None:
            section.refused.append(
                PersonaChange(key=u.key, value=sanitizer.mask_stored(u.value), reason=reason)
            )
            continue
        value = sanitizer.mask_stored(u.value)
        ext = set_key(ext, u.key, value)
        section.applied.append(PersonaChange(key=u.key, value=value))
    return ext, section


# Masked labels that are credentials: refused outright (a phone or an address is kept, masked).
SECRET_LABELS = ("PRIVATE_KEY", "API_KEY", "TOKEN", "SECRET")


def _has_secret(value: Any, sanitizer: Sanitizer) -> bool:
    texts = value if isinstance(value, list) else [value]
    masked = [str(sanitizer.mask_stored(t)) for t in texts if isinstance(t, str)]
    return any(f"[{label}" in m for m in masked for label in SECRET_LABELS)


def apply_turn(
    store: Store, turn: Turn, core: PersonaCore, *, now: datetime, dry_run: bool = False
) -> PersonaSection:
    """Apply the finished ``turn``'s proposals to its organisation's extension, once (``dry_run``:
    a shadow candidate's, every proposal recorded refused)."""
    updates = proposed(turn)
    if not updates:
        return PersonaSection()
    level = turn.context.user.level if turn.context.user is not None else None
    if dry_run or (level or 0) < TEACH_MIN_LEVEL:
        reason = "shadow" if dry_run else "level"
        s = Sanitizer.default()
        refused = [PersonaChange(key=u.key, value=s.mask_stored(u.value), reason=reason) for u in updates]
        return PersonaSection(refused=refused)
    target = ext_path(turn.org_id)

    def _txn(txn: Transaction) -> PersonaSection:
        doc = txn.get(target) or {}
        done = [str(t) for t in doc.get("applied_turns") or []]
        if turn.turn_id in done:  # a redelivery: nothing twice
            last = doc.get("last_outcome") or {}
            if last.get("turn_id") != turn.turn_id:
                return PersonaSection()
            return PersonaSection.model_validate({k: v for k, v in last.items() if k != "turn_id"})
        ext, section = judge(ext_of(doc), updates, core, Sanitizer.default())
        if section.applied:
            txn.set(
                target,
                {
                    **ext,
                    "org_id": turn.org_id,
                    "applied_turns": [*done, turn.turn_id][-APPLIED_KEPT:],
                    "last_outcome": {"turn_id": turn.turn_id, **section.model_dump(mode="json")},
                    "updated_at": now,
                },
            )
        return section

    return store.run_transaction(_txn)
