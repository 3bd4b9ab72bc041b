"""Who gets which brain: sticky buckets and the rules of ``shared_lib.flags``' table.

``bucket_fine(salt, org, user)`` is a stable hash in [0, 100) with 0.01 resolution,
identical in every process and after a redeploy; shadow sampling uses an independent
hash of the same person. ``evaluate`` applies the rules in order, first match wins.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any, Literal

from shared_lib.flags.document import BrainMode, FlagsDocument, FlagsOverride
from shared_lib.turn.envelope import FlagsSection

Reason = Literal[
    "KILL_SWITCH",
    "OVERRIDE",
    "ORG_OVERRIDE",
    "ORG_MODE",
    "DENYLIST",
    "ALLOWLIST",
    "SPLIT",
    "DEFAULT",
    "ERROR",
]


def _hash_fine(key: str) -> float:
    digest = hashlib.sha256(key.encode()).digest()
    return (int.from_bytes(digest[:8], "big") % 10000) / 100


def bucket_of(salt: str, org_id: str, user_id: str) -> int:
    """The whole-number bucket in [0, 100) (what a turn records)."""
    return int(bucket_fine(salt, org_id, user_id))


def bucket_fine(salt: str, org_id: str, user_id: str) -> float:
    """Bucket with 0.01 resolution in [0, 100): the canary compares against this.

    >>> bucket_fine("s", "acme", "u1") == bucket_fine("s", "acme", "u1")
    True
    """
    return _hash_fine(f"{salt}:{org_id}:{user_id}")


def shadow_sample_of(salt: str, org_id: str, user_id: str) -> float:
    """A second, independent stable hash in [0, 100) that picks who is shadow-sampled."""
    return _hash_fine(f"{salt}:shadow:{org_id}:{user_id}")


def evaluate(
    doc: FlagsDocument | None,
    org_id: str,
    user_id: str,
    *,
    override: FlagsOverride | None = None,
    now: datetime | None = None,
) -> FlagsSection:
    """Which brain serves this person, and why (the table in the module docstring)."""
    if doc is None:
        return FlagsSection(arm="legacy", reason="ERROR", flags_version="")
    fine = bucket_fine(doc.bucket_salt, org_id, user_id)
    base: dict[str, Any] = {"flags_version": doc.version, "bucket": int(fine), "model": doc.model}
    active = override if override is not None and override.active(now) else None
    kill = active.kill_switch if active is not None and active.kill_switch is not None else doc.kill_switch
    if kill:
        return FlagsSection(arm="legacy", reason="KILL_SWITCH", kill_switch=True, **base)
    if active is not None and active.brain_mode == "legacy":
        return FlagsSection(arm="legacy", reason="OVERRIDE", **base)
    # An organisation's rollback has its own expiry, independent of the global part's.
    if override is not None and override.org_rollback(org_id, now) is not None:
        return FlagsSection(arm="legacy", reason="ORG_OVERRIDE", **base)
    key = f"{org_id}/{user_id}"
    if user_id in doc.denylist or key in doc.denylist:
        return FlagsSection(arm="legacy", reason="DENYLIST", **base)
    if user_id in doc.allowlist or key in doc.allowlist:
        return FlagsSection(arm="llm", reason="ALLOWLIST", **base)
    if active is not None and active.brain_mode is not None:
        return _by_mode(active.brain_mode, "OVERRIDE", fine, doc, org_id, user_id, base)
    if org_id in doc.org_modes:
        return _by_mode(doc.org_modes[org_id], "ORG_MODE", fine, doc, org_id, user_id, base)
    reason = "SPLIT" if doc.brain_mode == "canary" else "DEFAULT"
    return _by_mode(doc.brain_mode, reason, fine, doc, org_id, user_id, base)


def _by_mode(
    mode: BrainMode,
    reason: str,
    fine: float,
    doc: FlagsDocument,
    org_id: str,
    user_id: str,
    base: dict[str, Any],
) -> FlagsSection:
    if mode in ("legacy", "llm"):
        return FlagsSection(arm=mode, reason=reason, **base)
    in_llm = mode == "canary" and fine < doc.canary_percent
    sampled = (
        not in_llm
        and doc.shadow_sample_percent > 0
        and shadow_sample_of(doc.bucket_salt, org_id, user_id) < doc.shadow_sample_percent
    )
    return FlagsSection(
        arm="llm" if in_llm else "legacy",
        reason=reason,
        shadow_candidate_arm="llm" if sampled else None,
        **base,
    )
