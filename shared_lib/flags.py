"""Feature flags: one source (``terraform/flags/flags.json``), validated here.

Terraform writes the file to the Firestore document ``config/flags`` (the whole file as
the string field ``document_json``); the local stack seeds the emulator from the same
file with ``seed_flags``. Runtime overrides (``config/flags_override``, written by the
rollback guard or an operator through ``shared_lib.rollout.overrides``) carry an expiry,
an author and a reason, and win until they expire, so Terraform never fights them.

Who gets which brain (``evaluate``), first rule that applies wins:

==========  ==============================================================  ============
reason      rule                                                            arm
==========  ==============================================================  ============
ERROR       the document or the override is missing, unreadable, invalid    legacy
KILL_SWITCH kill switch on (an active override's value wins over the file)  legacy [1]
OVERRIDE    an active override sets ``brain_mode: legacy`` (rollback)       legacy
DENYLIST    ``user`` or ``org/user`` in ``denylist``                        legacy
ALLOWLIST   ``user`` or ``org/user`` in ``allowlist``                       llm
OVERRIDE    an active override sets another mode                            by mode
ORG_MODE    ``org_modes[org]``                                              by mode
SPLIT       global ``brain_mode: canary``                                   by bucket
DEFAULT     global ``brain_mode`` legacy / shadow / llm                     by mode
==========  ==============================================================  ============

[1] the brain answers with the persona's fixed message; no LLM call, no tool execution.

By mode: ``legacy`` and ``llm`` serve that arm; ``shadow`` serves legacy and, for the
sampled share, runs the LLM arm as a dry-run candidate; ``canary`` at P % serves the LLM
arm to buckets below P and treats the legacy share like ``shadow``.

The split is sticky: ``bucket_fine(salt, org, user)`` is a stable hash in [0, 100) with
0.01 resolution, identical in every process and after a redeploy. Raising P only adds
people; lowering it removes them in bucket order; a new salt reshuffles. Shadow sampling
uses an independent hash of the same person, so it does not follow the canary buckets.

Evaluation is fail-safe: no valid document means the legacy arm, no shadow candidate (so
no tool execution by the LLM arm), reason ``ERROR``, and an alert.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from shared_lib.envelope import FlagsSection
from shared_lib.errors import ConfigError
from shared_lib.logs import log_event
from shared_lib.ports import Store

BrainMode = Literal["legacy", "shadow", "canary", "llm"]
Reason = Literal["KILL_SWITCH", "OVERRIDE", "ORG_MODE", "DENYLIST", "ALLOWLIST", "SPLIT", "DEFAULT", "ERROR"]
FLAGS_DOC = "config/flags"
OVERRIDE_DOC = "config/flags_override"
AUDIT_COLLECTION = "config_audit"
REPO_FLAGS_FILE = Path(__file__).resolve().parent.parent / "terraform" / "flags" / "flags.json"
MAX_CACHE_SECONDS = 30.0
ERROR_CACHE_SECONDS = 5.0  # a broken document is re-read sooner than a good one
Percent = Annotated[float, Field(ge=0, le=100)]


class AutoApprove(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    enabled: bool = False
    tools: list[str] = Field(default_factory=list)
    max_level: int = Field(default=0, ge=0, le=6)
    ttl_minutes: int = Field(default=0, ge=0, le=1440)


class RollbackGuardConfig(BaseModel):
    """Thresholds of the rollback guard (seed 000 §15.1, §14.3); ``shared_lib.rollout.guard``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    enabled: bool = True
    window_minutes: int = Field(default=15, ge=1, le=1440)
    tool_error_rate_max: float = Field(default=0.05, ge=0, le=1)
    block_rate_max: float = Field(default=0.10, ge=0, le=1)
    llm_latency_ms_max: float = Field(default=10_000, gt=0)
    # Seed §15.1 says ¥5,000 a day; prices are in US dollars (about ¥145 to the dollar).
    daily_cost_budget_usd: float = Field(default=35.0, gt=0)
    cost_day_timezone: str = "Asia/Tokyo"
    min_turns: int = Field(default=20, ge=1)
    min_tool_calls: int = Field(default=20, ge=1)
    min_llm_calls: int = Field(default=10, ge=1)
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
    rollback_guard: RollbackGuardConfig = Field(default_factory=RollbackGuardConfig)

    @field_validator("denylist")
    @classmethod
    def _not_in_both_lists(cls, value: list[str], info: Any) -> list[str]:
        both = sorted(set(value) & set(info.data.get("allowlist") or []))
        if both:
            raise ValueError(f"on both the allowlist and the denylist: {', '.join(both)}")
        return value


class FlagsOverride(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    kill_switch: bool | None = None
    brain_mode: BrainMode | None = None
    expires_at: datetime
    author: Annotated[str, Field(min_length=1)]
    reason: Annotated[str, Field(min_length=1)]
    created_at: datetime | None = None

    def active(self, now: datetime | None) -> bool:
        return now is None or self.expires_at > now


# --------------------------------------------------------------------------- the file


def _field_errors(exc: ValidationError) -> list[str]:
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
        raise ConfigError("\n".join(f"{source}: {line}" for line in _field_errors(exc))) from exc


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


# --------------------------------------------------------------------------- buckets


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


# --------------------------------------------------------------------------- evaluation


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


# --------------------------------------------------------------------------- the live provider


@dataclass(frozen=True)
class FlagsSnapshot:
    """What the provider read: the document (None when unusable), the override, why not, and from where."""

    doc: FlagsDocument | None
    override: FlagsOverride | None
    error: str
    source: str  # "store", "file:<path>" (fallback) or "none"


AlertSink = Callable[[str, str], None]


class FlagsProvider:
    """Reads the live flags document and override with a short cache (≤ 30 s; default 10 s).

    ``monotonic`` is the cache clock (injectable: tests advance it instead of sleeping).
    When a read fails the provider answers ``ERROR`` (legacy) and raises an alert once per
    failed read: ``on_error(code, message)`` when given, else a document in ``alerts/``.
    """

    def __init__(
        self,
        store: Store,
        *,
        ttl_seconds: float = 10.0,
        fallback_file: Path | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        on_error: AlertSink | None = None,
        doc_path: str = FLAGS_DOC,
        override_path: str = OVERRIDE_DOC,
    ) -> None:
        self.store = store
        self.ttl = max(0.0, min(float(ttl_seconds), MAX_CACHE_SECONDS))
        self.fallback_file = fallback_file
        self.monotonic = monotonic
        self.on_error = on_error
        self.doc_path = doc_path
        self.override_path = override_path
        self._lock = threading.Lock()
        self._cached: tuple[float, FlagsSnapshot] | None = None

    def snapshot(self) -> FlagsSnapshot:
        with self._lock:
            if self._cached is not None:
                read_at, snap = self._cached
                ttl = min(self.ttl, ERROR_CACHE_SECONDS) if snap.error else self.ttl
                if self.monotonic() - read_at < ttl:
                    return snap
        snap = self._read()
        with self._lock:
            self._cached = (self.monotonic(), snap)
        if snap.error:
            self._alert(snap.error)
        return snap

    def current(self) -> tuple[FlagsDocument | None, FlagsOverride | None, str]:
        """(document or None when unusable, override, error text)."""
        snap = self.snapshot()
        return snap.doc, snap.override, snap.error

    def invalidate(self) -> None:
        with self._lock:
            self._cached = None

    def evaluate(self, org_id: str, user_id: str, now: datetime) -> tuple[FlagsSection, str]:
        snap = self.snapshot()
        return evaluate(snap.doc, org_id, user_id, override=snap.override, now=now), snap.error

    def _read(self) -> FlagsSnapshot:
        try:
            raw = self.store.get(self.doc_path)
        except Exception as exc:  # store unreachable: fail safe to legacy
            return FlagsSnapshot(None, None, f"flags unreadable: {type(exc).__name__}: {exc}", "none")
        source = "store"
        try:
            if raw is None and self.fallback_file is not None:
                doc = load_flags_file(self.fallback_file)
                source = f"file:{self.fallback_file}"
            elif raw is None:
                return FlagsSnapshot(None, None, f"flags document {self.doc_path} missing", "none")
            else:
                doc = parse_store_doc(raw)
        except ConfigError as exc:
            return FlagsSnapshot(None, None, f"flags invalid: {exc}", source)
        try:
            raw_override = self.store.get(self.override_path)
            override = FlagsOverride.model_validate(raw_override) if raw_override else None
        except ValidationError as exc:
            # An override is usually a rollback: ignoring a broken one could re-enable what it stopped.
            return FlagsSnapshot(
                None, None, f"flags override invalid: {'; '.join(_field_errors(exc))}", source
            )
        except Exception as exc:
            return FlagsSnapshot(
                None, None, f"flags override unreadable: {type(exc).__name__}: {exc}", source
            )
        return FlagsSnapshot(doc, override, "", source)

    def _alert(self, error: str) -> None:
        log_event("flags_fail_safe", layer="flags", severity="ERROR", error=error)
        if self.on_error is not None:
            self.on_error("flags_unusable", error)
            return
        now = datetime.now(UTC)
        # One alert per cause and 10-minute window across every process (create is idempotent).
        cause = hashlib.sha256(error.split(":", 1)[0].encode()).hexdigest()[:10]
        window = now.strftime("%Y%m%d%H") + f"{now.minute // 10}"
        alert = {
            "event_id": f"flags-{cause}-{window}",
            "kind": "alert",
            "code": "flags_unusable",
            "severity": "critical",
            "message": f"flags fail-safe (legacy, no LLM tools): {error}"[:2000],
            "at": now.isoformat(),
            "org_id": None,
            "turn_id": None,
        }
        try:
            self.store.create(f"alerts/{alert['event_id']}", alert)
        except Exception as exc:  # the store may be what failed; the ERROR log line still alerts
            log_event("flags_alert_unwritable", layer="flags", severity="ERROR", error=str(exc))
