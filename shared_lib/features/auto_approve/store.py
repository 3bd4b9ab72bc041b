"""Auto-approve grants and the instant OFF (seed 002 §6.4, §10.2): code decides, never the LLM.

A grant lets the charter run, without asking, a confirmation the guardian would ask about:
``orgs/{org}/auto_approve_grants/{G-7K2M9Q}`` with the organisation, optionally one person
(``user_id``: only that person's requests), a scope and an expiry::

    {"kind": "grant", "grant_id", "org_id", "user_id" | None, "tools": [...],
     "job_types": [...], "targets": [...], "created_at", "expires_at", "author"}

Scope (an empty list does not narrow):

* ``tools`` — the tool names a grant covers; every call of the proposal must be one.
* ``job_types`` — the route of the turn (``CHAT``, ``CODE``, …: seed 003's route is this
  product's job type; ``job_type(route)``), compared without case.
* ``targets`` — who or where an operation reaches: the values of a call's target parameters
  (``TARGET_PARAMETERS``: a task's assignee, an announcement's recipients, a person a tool is
  about, a department). A grant value matches a target equal to it, or starting with it when it
  ends in ``*`` (``田中*``). A grant with targets covers only calls that name one, and only
  when every target they name matches (a call reaching nobody named is not "within" a list of
  people).

A grant never covers (``decide``): anything but a confirmation (a block stays a block); a double
confirmation; a hard-require operation (``hard_require_kinds``: a tool the policy's
``approval.operations`` lists under a kind of ``approval.hard_require``; ``send_sensitive``
also when the guardian raised a security concern; ``cost_over_limit`` when the caller gives a
cost estimate above ``cost_limit_usd`` — no tool of this product has a cost estimate yet, so
today only a caller that has one can trip it); what the deployment's master switch refuses
(the flags document's ``auto_approve``: ``enabled`` false — no grant applies, and none can be
made; ``tools`` non-empty — the ceiling of tools a grant may name and cover; ``max_level``
non-zero — the highest tool level (``min_level``) a grant may cover; ``ttl_minutes`` non-zero
— the ceiling of a grant's life, under the policy's ``max_ttl_minutes``). Zero and empty mean
"no ceiling of the deployment's own": the policy's rules still hold. What the authorization
gate denies is the caller's check (the guardian layer asks the gate before it records).

Instant OFF (``turn_off``) is one write: an ``off`` document of the organisation (or of one
person) with ``off_at``. Every check reads the OFF documents with the grants (``live_grants``), with no
cache, so the very next turn asks again; a grant made before the OFF is over, one made after
is not (``grant_on`` dates a new grant after the last OFF, whatever the clocks say).

A person's own OFF (``opt_out``, written by their ``/auto off``) is a state, not a moment:
``orgs/{org}/auto_approve_grants/optout-<hash>`` with ``off_at`` and ``on_at``. While it holds,
no grant covers that person's requests, the organisation's included, whenever it was made;
only their own ``/auto on`` (``opt_in``) lifts it. It never widens anything: an ON makes no
grant and touches no one else's requests. It has no expiry (it lasts until they turn it on).

>>> job_type("CHAT"), target_matches("田中*", "田中太郎"), target_matches("田中", "田中太郎")
('chat', True, False)
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from shared_lib.collections import collection_path, path
from shared_lib.errors import ArgumentError
from shared_lib.ids import new_short_id
from shared_lib.policy.approval_config import Approval
from shared_lib.policy.reasons import is_question
from shared_lib.ports import Store
from shared_lib.turn.decisions import Verdict
from shared_lib.turn.proposal import Proposal

COLLECTION = "auto_approve_grants"
AUTO_APPROVED = "approval.auto_approved"
# The parameters that say whom or where an operation reaches (see the module docstring).
TARGET_PARAMETERS = (
    "assignee_name",
    "recipients",
    "target_user_name",
    "target_user_id",
    "target_department_id",
    "department",  # an announcement to a department's everyone (``announce``)
)
# A grant is dated at least this long after the last OFF (clocks of two machines may differ).
_AFTER_OFF = timedelta(milliseconds=1)
OFF_COMMANDS = frozenset({"/auto off", "/autooff", "自動承認オフ", "自動承認をオフ", "自動承認をオフにして"})
ON_COMMANDS = frozenset({"/auto on", "/autoon", "自動承認オン", "自動承認をオン", "自動承認をオンにして"})


@dataclass(frozen=True)
class Switch:
    """The deployment's master switch and ceilings (the flags document's ``auto_approve``)."""

    enabled: bool = False
    tools: tuple[str, ...] = ()
    max_level: int = 0
    ttl_minutes: int = 0


@dataclass(frozen=True)
class Decision:
    """What ``decide`` found: the grant that covers the proposal, or why none does."""

    grant: dict[str, Any] | None
    reason: str  # "covered" or the first reason no grant applies
    hard_require: tuple[str, ...] = ()


# the "grant" of an operation the policy does not require approval for (``required_by_default``
# false): recorded as the job's approver ``auto:policy``
POLICY_GRANT = "policy"


def job_type(route: str) -> str:
    """The job type of a turn: its route, lower case (``CHAT`` → ``chat``)."""
    return route.strip().lower()


def target_matches(allowed: str, value: str) -> bool:
    a, v = _norm(allowed), _norm(value)
    return v.startswith(a[:-1]) if a.endswith("*") else a == v


def is_off_command(text: str) -> bool:
    """``/auto off`` or 「自動承認オフ」 as the whole message (a command inside text is text)."""
    return _said(text) in OFF_COMMANDS


def is_on_command(text: str) -> bool:
    """``/auto on`` or 「自動承認オン」 as the whole message."""
    return _said(text) in ON_COMMANDS


def _said(text: str) -> str:
    return " ".join(_norm(text).rstrip("。.!！").split())


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", str(text)).strip().lower()


def grants_path(org_id: str) -> str:
    return collection_path(COLLECTION, org=org_id)


def off_id(user_id: str | None) -> str:
    """The id of the OFF document of an organisation (``off``) or of one person."""
    if user_id is None:
        return "off"
    return "off-" + hashlib.sha256(user_id.encode()).hexdigest()[:20]


def optout_path(org_id: str, user_id: str) -> str:
    """The person's own OFF (see the module docstring)."""
    return path(COLLECTION, org=org_id, id="optout-" + hashlib.sha256(user_id.encode()).hexdigest()[:20])


def opted_out(store: Store, org_id: str, user_id: str) -> bool:
    """Whether ``user_id`` turned auto-approval of their own requests off and not on again."""
    doc = store.get(optout_path(org_id, user_id))
    return doc is not None and doc.get("kind") == "optout" and doc.get("on_at") is None


def opt_out(store: Store, org_id: str, now: datetime, *, user_id: str) -> dict[str, Any]:
    """The person's own OFF: no grant covers their requests until their ``opt_in`` (one write)."""
    doc = {"kind": "optout", "org_id": org_id, "user_id": user_id, "off_at": now, "on_at": None}
    store.set(optout_path(org_id, user_id), doc)
    return doc


def opt_in(store: Store, org_id: str, now: datetime, *, user_id: str) -> bool:
    """Lift the person's own OFF (``False``: there was none). Makes no grant."""
    doc = store.get(optout_path(org_id, user_id))
    if not doc or doc.get("on_at") is not None:
        return False
    store.set(optout_path(org_id, user_id), {**doc, "on_at": now})
    return True


def call_targets(parameters: Mapping[str, Any]) -> list[str]:
    """The targets a call names (lists flattened, empty values left out)."""
    found: list[str] = []
    for key in TARGET_PARAMETERS:
        value = parameters.get(key)
        values = value if isinstance(value, list | tuple) else [value]
        found += [str(v) for v in values if v is not None and str(v).strip()]
    return found


def last_off(store: Store, org_id: str, user_id: str | None = None) -> dict[str, Any] | None:
    """The latest OFF that ends ``user_id``'s grants (the organisation's, or their own)."""
    offs = [store.get(path(COLLECTION, org=org_id, id=off_id(None)))]
    if user_id is not None:
        offs.append(store.get(path(COLLECTION, org=org_id, id=off_id(user_id))))
    dated = [o for o in offs if o and isinstance(o.get("off_at"), datetime)]
    return max(dated, key=lambda o: o["off_at"]) if dated else None


def _ended(grant: Mapping[str, Any], org_off: datetime | None, person_off: dict[str, datetime]) -> bool:
    created = grant.get("created_at")
    if not isinstance(created, datetime):
        return True
    offs = [org_off, person_off.get(str(grant.get("user_id")))] if grant.get("user_id") else [org_off]
    return any(off is not None and created <= off for off in offs)


def live_grants(
    store: Store, org_id: str, now: datetime, *, user_id: str | None = None
) -> list[dict[str, Any]]:
    """The grants of ``org_id`` in force at ``now`` (for ``user_id``: the org-wide ones and theirs,
    none while they have turned auto-approval of their own requests off).

    The OFF documents are read with the grants, each time, uncached: an OFF written a moment
    ago is seen (with no grant at all there is nothing to end, and nothing more is read)."""
    rows = store.query(grants_path(org_id), where=[("kind", "==", "grant")])
    grants = [doc for _, doc in rows if doc.get("user_id") in (None, user_id) or user_id is None]
    if not grants or (user_id is not None and opted_out(store, org_id, user_id)):
        return []
    org = store.get(path(COLLECTION, org=org_id, id=off_id(None)))
    org_off = org.get("off_at") if org else None
    person_off: dict[str, datetime] = {}
    for who in {str(g["user_id"]) for g in grants if g.get("user_id")}:
        doc = store.get(path(COLLECTION, org=org_id, id=off_id(who)))
        if doc and isinstance(doc.get("off_at"), datetime):
            person_off[who] = doc["off_at"]
    alive = [
        g
        for g in grants
        if isinstance(g.get("expires_at"), datetime)
        and g["expires_at"] > now
        and not _ended(g, org_off if isinstance(org_off, datetime) else None, person_off)
    ]
    return sorted(alive, key=lambda g: g["created_at"])


def grant_on(
    store: Store,
    org_id: str,
    now: datetime,
    *,
    author: str,
    policy: Approval,
    switch: Switch,
    user_id: str | None = None,
    tools: Sequence[str] = (),
    job_types: Sequence[str] = (),
    targets: Sequence[str] = (),
    ttl_minutes: int | None = None,
    known_tools: Iterable[str] = (),
) -> dict[str, Any]:
    """Write a new grant; ``ArgumentError`` (with the reason) when the switch or policy refuses it."""
    if not switch.enabled:
        raise ArgumentError(
            "auto-approve is disabled for this deployment (flags auto_approve.enabled: false)"
        )
    known = set(known_tools)
    if unknown := [t for t in tools if known and t not in known]:
        raise ArgumentError(f"unknown tool(s): {', '.join(unknown)}")
    if switch.tools and (outside := [t for t in (tools or ["(every tool)"]) if t not in switch.tools]):
        raise ArgumentError(
            f"outside the deployment's ceiling (flags auto_approve.tools: {', '.join(switch.tools)}): "
            + ", ".join(outside)
        )
    hard = {t for kind in policy.hard_require for t in policy.operations.get(kind, [])}
    if always := [t for t in tools if t in hard]:
        raise ArgumentError(f"always asks (hard-require), a grant cannot cover: {', '.join(always)}")
    ttl = policy.auto_approve.ttl_minutes if ttl_minutes is None else ttl_minutes
    cap = min(policy.auto_approve.max_ttl_minutes, switch.ttl_minutes or policy.auto_approve.max_ttl_minutes)
    if not 1 <= ttl <= cap:
        raise ArgumentError(f"--ttl must be between 1 and {cap} minutes")
    off = last_off(store, org_id, user_id)
    created = max(now, off["off_at"] + _AFTER_OFF) if off else now
    grant_id = new_short_id("G")
    grant: dict[str, Any] = {
        "kind": "grant",
        "grant_id": grant_id,
        "org_id": org_id,
        "user_id": user_id,
        "tools": sorted(set(tools)),
        "job_types": sorted({job_type(j) for j in job_types}),
        "targets": list(dict.fromkeys(targets)),
        "created_at": created,
        "expires_at": created + timedelta(minutes=ttl),
        "author": author,
    }
    store.set(path(COLLECTION, org=org_id, id=grant_id), grant)
    return grant


def turn_off(
    store: Store, org_id: str, now: datetime, *, by: str, policy: Approval, user_id: str | None = None
) -> dict[str, Any]:
    """Instant OFF: one write that ends every grant of ``org_id`` (or of ``user_id``) made so far.

    The document outlives every grant it ends (the longest a grant can live)."""
    doc = {
        "kind": "off",
        "org_id": org_id,
        "user_id": user_id,
        "off_at": now,
        "by": by,
        "expires_at": now + timedelta(minutes=policy.auto_approve.max_ttl_minutes),
    }
    store.set(path(COLLECTION, org=org_id, id=off_id(user_id)), doc)
    return doc


def hard_require_kinds(
    proposal: Proposal, verdict: Verdict, policy: Approval, *, cost_estimate_usd: float | None = None
) -> tuple[str, ...]:
    """The hard-require kinds (of ``policy.hard_require``) this proposal falls under."""
    tools = {c.tool_name for c in proposal.tool_calls}
    covers = [verdict.reason_code, *(str(c) for c in verdict.details.get("covers") or [])]
    over_limit = cost_estimate_usd is not None and cost_estimate_usd > policy.cost_limit_usd
    applies = {
        "send_sensitive": any(c.startswith("security.") for c in covers),
        "cost_over_limit": over_limit,
    }
    kinds = [
        kind
        for kind in policy.hard_require
        if tools & set(policy.operations.get(kind, [])) or applies.get(kind, False)
    ]
    return tuple(kinds)


def covers(grant: Mapping[str, Any], proposal: Proposal, *, route: str, user_id: str) -> bool:
    """Whether ``grant`` covers every call of ``proposal`` requested by ``user_id`` on ``route``."""
    if grant.get("user_id") not in (None, user_id):
        return False
    if (types := grant.get("job_types")) and job_type(route) not in types:
        return False
    tools, allowed = grant.get("tools") or [], [str(t) for t in grant.get("targets") or []]
    for call in proposal.tool_calls:
        if tools and call.tool_name not in tools:
            return False
        named = call_targets(call.parameters)
        if allowed and (not named or not all(any(target_matches(a, v) for a in allowed) for v in named)):
            return False
    return bool(proposal.tool_calls)


def decide(
    verdict: Verdict,
    proposal: Proposal,
    grants: Sequence[Mapping[str, Any]],
    *,
    policy: Approval,
    switch: Switch,
    route: str,
    user_id: str,
    tool_levels: Mapping[str, int],
    cost_estimate_usd: float | None = None,
) -> Decision:
    """The one decision: does a live grant let this confirmation run without asking?"""
    if verdict.action != "confirm":
        return Decision(None, "not_a_confirmation")
    if verdict.double_confirmation:
        return Decision(None, "double_confirmation")
    if is_question([verdict.reason_code, *(str(c) for c in verdict.details.get("covers") or [])]):
        return Decision(None, "question")  # a value only the person can give (「いつにするウル？」)
    kinds = hard_require_kinds(proposal, verdict, policy, cost_estimate_usd=cost_estimate_usd)
    if kinds:
        return Decision(None, "hard_require", kinds)
    if not policy.required_by_default:  # the policy's own choice: no person needed, no grant
        return Decision({"grant_id": POLICY_GRANT}, "not_required")
    if not switch.enabled:
        return Decision(None, "disabled")
    tools = [c.tool_name for c in proposal.tool_calls]
    if switch.tools and any(t not in switch.tools for t in tools):
        return Decision(None, "outside_ceiling")
    if switch.max_level and any(tool_levels.get(t, 6) > switch.max_level for t in tools):
        return Decision(None, "outside_ceiling")
    grant = next((g for g in grants if covers(g, proposal, route=route, user_id=user_id)), None)
    return Decision(dict(grant), "covered") if grant else Decision(None, "no_grant")


def remaining_minutes(grant: Mapping[str, Any], now: datetime) -> int:
    expires = grant.get("expires_at")
    return max(0, int((expires - now).total_seconds() // 60)) if isinstance(expires, datetime) else 0
