"""Skills and their versions in the store (seed 001 §23.2, §23.5): propose, test, approve, roll back.

``orgs/{org}/skills/{name}``: the skill (its latest and active version, the version of each
implementation hash, approvals and rollbacks). ``orgs/{org}/skill_versions/{name}@v{n}``: one
version, whose spec and implementation are never edited (a change is a new version); only its
state moves::

    draft ──test──▶ tested | failed ──(tested, passed on its hash; level 6)──▶ approved ──▶ retired

A proposal (the model's or a person's) is only ever a draft; ``approve`` needs a person of level 6
(``memory.ingest.person_level``'s look-up) and the version's latest sandbox test passed on its
current hash; it makes the version active. ``rollback`` makes the previous approved version
active and retires the one that was (with none before it, no version is active: the skill is
no longer a tool). ``active_skills`` is what the registry exposes as tools.

A proposal in which the sanitizer finds a secret or a personal value is refused, nothing stored:
a version is kept unmasked (its hash names its code), so it must hold nothing to mask.

Errors: ``SkillError`` (``code``: ``not_found``, ``unknown_person``, ``level``, ``not_tested``,
``no_previous``, ``secret``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from shared_lib import collections
from shared_lib.errors import CharterError
from shared_lib.features.skills.state.spec import SkillSpec, secret_fields
from shared_lib.ports import Store, Transaction

APPROVER_LEVEL = 6  # seed 001 §23.5: a skill is enabled by the top level only
MAX_SKILLS = 200
# (the store's id, the organisation) -> (until, its active skills): one process's brief cache
_cache: dict[tuple[int, str], tuple[float, list[ActiveSkill]]] = {}
# the clock of that cache (a benchmark that counts round trips gives it a virtual one)
cache_clock: Callable[[], float] = time.monotonic


class SkillError(CharterError):
    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class ActiveSkill:
    spec: SkillSpec
    version: int


def skill_path(org_id: str, name: str) -> str:
    return collections.path("skills", org=org_id, id=name)


def version_path(org_id: str, name: str, version: int) -> str:
    return collections.path("skill_versions", org=org_id, id=f"{name}@v{version}")


def check_approver(store: Store, org_id: str, by: str) -> None:
    """``SkillError`` unless ``by`` is in the directory at level 6."""
    doc = store.get(collections.path("users", org=org_id, id=by))
    if doc is None:
        raise SkillError(f"{by} is not in the directory of {org_id}", "unknown_person")
    level = int(doc.get("level", 2))  # the directory's default level (tools.directory)
    if level < APPROVER_LEVEL:
        raise SkillError(f"approving a skill needs level {APPROVER_LEVEL}; {by} is level {level}", "level")


def forget(org_id: str) -> None:
    """Drop this process's cached active skills of the organisation (after a change here)."""
    for key in [k for k in _cache if k[1] == org_id]:
        _cache.pop(key, None)


def refuse_secrets(spec: SkillSpec) -> None:
    """``SkillError`` ``secret`` naming the fields of ``spec`` that hold a secret or a personal value."""
    fields = secret_fields(spec)
    if fields:
        raise SkillError(
            f"skill {spec.name!r} holds a secret or a personal value in {', '.join(fields)}: "
            "a skill is stored unmasked, so it is refused; remove the value and propose it again",
            "secret",
        )


def propose_in(txn: Transaction, org_id: str, spec: SkillSpec, *, by: str, now: datetime) -> tuple[int, bool]:
    """Store ``spec`` as a new draft version in ``txn``; ``(version, created)``. The same
    implementation hash as an existing version is that version (``created`` false), not a new one.
    ``SkillError`` ``secret`` when the spec holds a secret or a personal value."""
    refuse_secrets(spec)
    skill = txn.get(skill_path(org_id, spec.name)) or {"name": spec.name, "latest_version": 0, "hashes": {}}
    known = skill.get("hashes", {}).get(spec.sha256)
    if known is not None:
        return int(known), False
    version = int(skill.get("latest_version", 0)) + 1
    txn.create(
        version_path(org_id, spec.name, version),
        {
            "name": spec.name,
            "version": version,
            "spec": spec.model_dump(mode="json"),
            "sha256": spec.sha256,
            "proposed_by": by,
            "state": "draft",
            "created_at": now,
            "test": None,
        },
    )
    hashes = {**skill.get("hashes", {}), spec.sha256: version}
    txn.set(
        skill_path(org_id, spec.name),
        {**skill, "latest_version": version, "hashes": hashes, "updated_at": now},
    )
    return version, True


def propose(store: Store, org_id: str, spec: SkillSpec, *, by: str, now: datetime) -> tuple[int, bool]:
    """``propose_in`` in its own transaction."""
    return store.run_transaction(lambda txn: propose_in(txn, org_id, spec, by=by, now=now))


def get_skill(store: Store, org_id: str, name: str) -> dict[str, Any]:
    doc = store.get(skill_path(org_id, name))
    if doc is None:
        raise SkillError(f"no skill {name!r} in {org_id}", "not_found")
    return doc


def get_version(store: Store, org_id: str, name: str, version: int | None = None) -> dict[str, Any]:
    """A version (default: the latest)."""
    number = version if version is not None else int(get_skill(store, org_id, name).get("latest_version", 0))
    doc = store.get(version_path(org_id, name, number))
    if doc is None:
        raise SkillError(f"no version {number} of skill {name!r} in {org_id}", "not_found")
    return doc


def spec_of(doc: dict[str, Any]) -> SkillSpec:
    return SkillSpec.model_validate(doc["spec"])


def list_skills(store: Store, org_id: str) -> list[dict[str, Any]]:
    rows = store.query(collections.collection_path("skills", org=org_id), limit=MAX_SKILLS)
    return [doc for _, doc in sorted(rows, key=lambda r: r[0])]


def record_test(
    store: Store, org_id: str, name: str, version: int, report: dict[str, Any], now: datetime
) -> str:
    """Record a sandbox test (``report["passed"]``) on the version; its state afterwards."""

    def txn_fn(txn: Transaction) -> str:
        path = version_path(org_id, name, version)
        doc = txn.get(path)
        if doc is None:
            raise SkillError(f"no version {version} of skill {name!r} in {org_id}", "not_found")
        state = doc["state"]
        if state in ("draft", "tested", "failed"):
            state = "tested" if report["passed"] else "failed"
        txn.set(path, {**doc, "state": state, "test": {**report, "sha256": doc["sha256"], "at": now}})
        return str(state)

    return store.run_transaction(txn_fn)


def approve(store: Store, org_id: str, name: str, version: int, *, by: str, now: datetime) -> None:
    """Enable ``version``: ``by`` is level 6 and its latest test passed on its current hash."""
    check_approver(store, org_id, by)

    def txn_fn(txn: Transaction) -> None:
        skill = txn.get(skill_path(org_id, name))
        doc = txn.get(version_path(org_id, name, version))
        if skill is None or doc is None:
            raise SkillError(f"no version {version} of skill {name!r} in {org_id}", "not_found")
        test = doc.get("test") or {}
        if doc["state"] != "tested" or not test.get("passed") or test.get("sha256") != doc["sha256"]:
            raise SkillError(
                f"version {version} of {name!r} is {doc['state']}: only a version whose sandbox test "
                "passed can be approved",
                "not_tested",
            )
        txn.set(
            version_path(org_id, name, version),
            {**doc, "state": "approved", "approved_by": by, "approved_at": now},
        )
        approvals = [*skill.get("approvals", []), {"version": version, "by": by, "at": now}]
        txn.set(
            skill_path(org_id, name),
            {**skill, "active_version": version, "approvals": approvals, "updated_at": now},
        )

    store.run_transaction(txn_fn)
    forget(org_id)


def rollback(store: Store, org_id: str, name: str, *, by: str, now: datetime) -> int | None:
    """Make the previous approved version active and retire the active one; the version now active
    (``None`` when there was none before it: the skill is no longer a tool)."""
    check_approver(store, org_id, by)

    def txn_fn(txn: Transaction) -> int | None:
        skill = txn.get(skill_path(org_id, name))
        active = (skill or {}).get("active_version")
        if skill is None or active is None:
            raise SkillError(f"skill {name!r} has no active version to roll back", "no_previous")
        previous = None
        for number in range(int(active) - 1, 0, -1):
            doc = txn.get(version_path(org_id, name, number))
            if doc is not None and doc["state"] == "approved":
                previous = number
                break
        current = txn.get(version_path(org_id, name, int(active)))
        if current is not None:
            txn.set(
                version_path(org_id, name, int(active)), {**current, "state": "retired", "retired_at": now}
            )
        rollbacks = [*skill.get("rollbacks", []), {"from": active, "to": previous, "by": by, "at": now}]
        txn.set(
            skill_path(org_id, name),
            {**skill, "active_version": previous, "rollbacks": rollbacks, "updated_at": now},
        )
        return previous

    version = store.run_transaction(txn_fn)
    forget(org_id)
    return version


def active_skills(store: Store, org_id: str, *, cache_seconds: float = 0.0) -> list[ActiveSkill]:
    """The organisation's active approved versions (cached ``cache_seconds`` in this process)."""
    key = (id(store), org_id)
    hit = _cache.get(key) if cache_seconds > 0 else None
    if hit and hit[0] > cache_clock():
        return hit[1]
    found = []
    for skill in list_skills(store, org_id):
        active = skill.get("active_version")
        if active is None:
            continue
        doc = store.get(version_path(org_id, skill["name"], int(active)))
        if doc is not None and doc.get("state") == "approved":
            found.append(ActiveSkill(spec_of(doc), int(active)))
    if cache_seconds > 0:
        _cache[key] = (cache_clock() + cache_seconds, found)
    return found
