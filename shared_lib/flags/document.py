"""The flags document: its schema, the file it comes from and its stored shape.

One file per environment, ``terraform/flags/{dev,stg,prod}.json`` (``shared_lib.flags.stages``):
Terraform writes the environment's file to its Firestore document ``config/flags`` (the whole
file as the string field ``document_json``, with its ``sha256``); the local stack seeds the
emulator from the development file (``REPO_FLAGS_FILE``) with ``seed_flags``.
Runtime overrides (``config/flags_override``) carry an expiry, an author and a reason.
Every failure to parse is a ``ConfigError`` naming the field.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from shared_lib.errors import ConfigError
from shared_lib.ports import Store

BrainMode = Literal["legacy", "shadow", "canary", "llm"]
FLAGS_DOC = "config/flags"
OVERRIDE_DOC = "config/flags_override"
AUDIT_COLLECTION = "config_audit"
# The development environment's file: what the local stack seeds, the local fallback and the
# default of the commands that take a file. Each environment's file: ``stages.env_flags_file``.
REPO_FLAGS_FILE = Path(__file__).resolve().parents[2] / "terraform" / "flags" / "dev.json"
Percent = Annotated[float, Field(ge=0, le=100)]


class AutoApprove(BaseModel):
    """The deployment's master switch and ceilings of auto-approve (seed 002 §6.4;
    ``shared_lib.features.auto_approve.store``). ``enabled`` false: no grant applies and none can be
    made (seed 002 §10.2's default). ``tools``: the only tools a grant may name and cover;
    ``max_level``: the highest tool level (``min_level``) a grant may cover; ``ttl_minutes``:
    the longest a grant may live (under the policy's ``max_ttl_minutes``). An empty list or 0
    is no ceiling of the deployment's own; the policy's rules (hard-require, TTL) still hold.
    Grants themselves, and the instant OFF, live in the store, not here: a flags change
    reaches a process only after its cache, an OFF must not wait for one."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    enabled: bool = False
    tools: list[str] = Field(default_factory=list)
    max_level: int = Field(default=0, ge=0, le=6)
    ttl_minutes: int = Field(default=0, ge=0, le=1440)


class BestOfN(BaseModel):
    """Best-of-N phrasing of the reply text (seed 001 §3-4; ``shared_lib.features.best_of_n.steps``), per
    organisation and off by default: ``orgs`` lists the organisations it serves (``"*"``: all).
    ``max_cost_usd_per_turn`` is the hard cap of one turn's Best-of-N calls (candidates, judge,
    refinement), estimated from the price table before any call: N is lowered until it fits."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    orgs: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    max_cost_usd_per_turn: float = Field(default=0.05, gt=0, le=10)

    def enabled_for(self, org_id: str) -> bool:
        return "*" in self.orgs or org_id in self.orgs


class RollbackGuardConfig(BaseModel):
    """Thresholds of the rollback guard (seed 000 §15.1, §14.3); ``shared_lib.rollout.guard``.

    Every rate counts only what the candidate brain causes (``shared_lib.rollout.causes``) and
    is judged per organisation; ``llm_latency_ms_max`` bounds the p95 of the per-call latency.
    An organisation's trip rolls back that organisation only, unless ``global_trip_orgs``
    organisations (or ``global_trip_share`` of the organisations active in the window) have
    tripped within the window: then everyone goes back to legacy.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    enabled: bool = True
    window_minutes: int = Field(default=15, ge=1, le=1440)
    tool_error_rate_max: float = Field(default=0.05, ge=0, le=1)
    block_rate_max: float = Field(default=0.10, ge=0, le=1)
    llm_error_rate_max: float = Field(default=0.05, ge=0, le=1)
    constitution_violation_rate_max: float = Field(default=0.05, ge=0, le=1)
    # Off by default: disagreement with the served arm is the promotion gate's evidence (`charter
    # gate shadow`), not harm done to users; tripping on it in shadow mode would stop the very
    # comparisons the gate needs. Counted and explained either way; set a rate to make it trip.
    shadow_disagreement_rate_max: float | None = Field(default=None, ge=0, le=1)
    llm_latency_ms_max: float = Field(default=10_000, gt=0)
    # Seed §15.1 says ¥5,000 a day; prices are in US dollars (about ¥145 to the dollar).
    daily_cost_budget_usd: float = Field(default=35.0, gt=0)
    cost_day_timezone: str = "Asia/Tokyo"
    min_turns: int = Field(default=20, ge=1)
    min_tool_calls: int = Field(default=20, ge=1)
    min_llm_calls: int = Field(default=10, ge=1)
    min_comparisons: int = Field(default=20, ge=1)
    global_trip_orgs: int = Field(default=3, ge=1)
    global_trip_share: float = Field(default=1.0, gt=0, le=1)
    override_ttl_minutes: int = Field(default=120, ge=1, le=7 * 1440)

    @field_validator("cost_day_timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {value!r}") from exc
        return value


class FlagsDocument(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    version: Annotated[str, Field(min_length=1)]
    kill_switch: bool = False
    brain_mode: BrainMode = "legacy"
    org_modes: dict[Annotated[str, Field(min_length=1)], BrainMode] = Field(default_factory=dict)
    canary_percent: Percent = 0
    bucket_salt: Annotated[str, Field(min_length=1)] = "charter"
    shadow_sample_percent: Percent = 100
    allowlist: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    denylist: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    self_critique_rate: Annotated[float, Field(ge=0, le=1)] = 0.0
    fast_path: bool = True
    model: Annotated[str, Field(min_length=1)] = "claude-sonnet-4-6"
    fast_model: Annotated[str, Field(min_length=1)] = "claude-haiku-4-5"
    auto_approve: AutoApprove = Field(default_factory=AutoApprove)
    best_of_n: BestOfN = Field(default_factory=BestOfN)
    rollback_guard: RollbackGuardConfig = Field(default_factory=RollbackGuardConfig)

    @field_validator("denylist")
    @classmethod
    def _not_in_both_lists(cls, value: list[str], info: Any) -> list[str]:
        both = sorted(set(value) & set(info.data.get("allowlist") or []))
        if both:
            raise ValueError(f"on both the allowlist and the denylist: {', '.join(both)}")
        return value


class OrgOverride(BaseModel):
    """A rollback of one organisation: it is served legacy until ``expires_at``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    brain_mode: Literal["legacy"] = "legacy"
    expires_at: datetime
    author: Annotated[str, Field(min_length=1)]
    reason: Annotated[str, Field(min_length=1)]
    created_at: datetime | None = None

    def active(self, now: datetime | None) -> bool:
        return now is None or self.expires_at > now


class FlagsOverride(BaseModel):
    """``config/flags_override``: a global part (``kill_switch``, ``brain_mode``, governed by
    ``expires_at``) and per-organisation rollbacks (``orgs``), each with its own expiry.

    With only organisations in it, the global part sets nothing and ``expires_at`` is the
    latest of theirs.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    kill_switch: bool | None = None
    brain_mode: BrainMode | None = None
    expires_at: datetime
    author: Annotated[str, Field(min_length=1)]
    reason: Annotated[str, Field(min_length=1)]
    created_at: datetime | None = None
    orgs: dict[Annotated[str, Field(min_length=1)], OrgOverride] = Field(default_factory=dict)

    def active(self, now: datetime | None) -> bool:
        return now is None or self.expires_at > now

    def org_rollback(self, org_id: str, now: datetime | None) -> OrgOverride | None:
        """The active rollback of ``org_id``, if any (whatever the global part's expiry)."""
        entry = self.orgs.get(org_id)
        return entry if entry is not None and entry.active(now) else None


def field_errors(exc: ValidationError) -> list[str]:
    out = []
    for err in exc.errors():
        where = ".".join(str(x) for x in err["loc"]) or "(document)"
        out.append(f"field {where}: {err['msg']}")
    return out


def parse_flags_text(text: str, *, source: str = "flags") -> FlagsDocument:
    """Validate flags JSON; ``ConfigError`` names every bad field (``field canary_percent: ...``)."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{source}: not valid JSON: {exc}") from exc
    try:
        return FlagsDocument.model_validate(data)
    except ValidationError as exc:
        raise ConfigError("\n".join(f"{source}: {line}" for line in field_errors(exc))) from exc


def load_flags_file(path: Path | str = REPO_FLAGS_FILE) -> FlagsDocument:
    """Parse and validate a flags file; ``ConfigError`` names the exact field on failure."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{p}: {exc}") from exc
    return parse_flags_text(text, source=str(p))


def flags_store_doc(
    doc: FlagsDocument, *, raw: str | None = None, updated_by: str = "seed"
) -> dict[str, Any]:
    """The Firestore shape of ``config/flags``: the whole JSON as one string field.

    ``raw`` is the file's text (what Terraform stores); without it the document is
    serialised. ``sha256`` is checked by the reader when present.
    """
    body = raw if raw is not None else doc.model_dump_json()
    return {
        "document_json": body,
        "version": doc.version,
        "sha256": hashlib.sha256(body.encode()).hexdigest(),
        "updated_by": updated_by,
    }


def seed_flags(
    store: Store, path: Path | str = REPO_FLAGS_FILE, *, updated_by: str = "seed"
) -> FlagsDocument:
    """Validate a flags file and write it to ``config/flags`` exactly as Terraform does (local stack, tests)."""
    p = Path(path)
    doc = load_flags_file(p)
    store.set(FLAGS_DOC, flags_store_doc(doc, raw=p.read_text(encoding="utf-8"), updated_by=updated_by))
    return doc


def parse_store_doc(raw: dict[str, Any]) -> FlagsDocument:
    """The stored ``config/flags`` back to a document; ``ConfigError`` when it is not valid."""
    body = raw.get("document_json")
    if not isinstance(body, str):
        raise ConfigError("config/flags has no string field document_json")
    digest = raw.get("sha256")
    if digest is not None and digest != hashlib.sha256(body.encode()).hexdigest():
        raise ConfigError("config/flags: sha256 does not match document_json")
    return parse_flags_text(body, source=FLAGS_DOC)
