"""Feature flags: one source (``terraform/flags/flags.json``), validated here.

Terraform writes the file to the Firestore document ``config/flags`` (field
``document_json``); the local stack seeds the emulator from the same file. Runtime
overrides (``config/flags_override``) are written by the rollback guard or an operator,
carry an expiry, an author and a reason, and win until they expire.

Evaluation is fail-safe: an unreadable or invalid document means the legacy arm with no
LLM tool execution (reason ``ERROR``). The percentage split is sticky: a stable hash of
``(salt, org, user)`` gives each person a bucket in [0, 100).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shared_lib.envelope import FlagsSection
from shared_lib.errors import ConfigError
from shared_lib.ports import Store

BrainMode = Literal["legacy", "shadow", "canary", "llm"]
FLAGS_DOC = "config/flags"
OVERRIDE_DOC = "config/flags_override"
REPO_FLAGS_FILE = Path(__file__).resolve().parent.parent / "terraform" / "flags" / "flags.json"
Percent = Annotated[float, Field(ge=0, le=100)]


class AutoApprove(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    enabled: bool = False
    tools: list[str] = Field(default_factory=list)
    max_level: int = Field(default=0, ge=0, le=6)
    ttl_minutes: int = Field(default=0, ge=0, le=1440)


class FlagsDocument(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    version: Annotated[str, Field(min_length=1)]
    kill_switch: bool = False
    brain_mode: BrainMode = "legacy"
    org_modes: dict[str, BrainMode] = Field(default_factory=dict)
    canary_percent: Percent = 0
    bucket_salt: Annotated[str, Field(min_length=1)] = "charter"
    shadow_sample_percent: Percent = 100
    allowlist: list[str] = Field(default_factory=list)
    denylist: list[str] = Field(default_factory=list)
    self_critique_rate: Annotated[float, Field(ge=0, le=1)] = 0.0
    fast_path: bool = True
    model: str = "claude-sonnet-4-5"
    fast_model: str = "claude-haiku-4-5"
    auto_approve: AutoApprove = Field(default_factory=AutoApprove)


class FlagsOverride(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    kill_switch: bool | None = None
    brain_mode: BrainMode | None = None
    expires_at: datetime
    author: Annotated[str, Field(min_length=1)]
    reason: Annotated[str, Field(min_length=1)]


def load_flags_file(path: Path | str = REPO_FLAGS_FILE) -> FlagsDocument:
    """Parse and validate a flags file; ``ConfigError`` names the exact field on failure."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{p}: {exc}") from exc
    try:
        return FlagsDocument.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "(document)"
        raise ConfigError(f"{p}: field {where}: {first['msg']}") from exc


def flags_store_doc(doc: FlagsDocument) -> dict[str, Any]:
    """The Firestore shape Terraform and the local stack both write."""
    body = doc.model_dump_json()
    return {"document_json": body, "version": doc.version,
            "sha256": hashlib.sha256(body.encode()).hexdigest(), "updated_by": "seed"}


def bucket_of(salt: str, org_id: str, user_id: str) -> int:
    digest = hashlib.sha256(f"{salt}:{org_id}:{user_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % 10000 // 100


def bucket_fine(salt: str, org_id: str, user_id: str) -> float:
    """Bucket with 0.01 resolution in [0, 100): the canary compares against this."""
    digest = hashlib.sha256(f"{salt}:{org_id}:{user_id}".encode()).digest()
    return (int.from_bytes(digest[:8], "big") % 10000) / 100


def evaluate(doc: FlagsDocument | None, org_id: str, user_id: str, *, override: FlagsOverride | None = None,
             now: datetime | None = None) -> FlagsSection:
    """Which brain serves this person, and why (reason codes of the rollout issue)."""
    if doc is None:
        return FlagsSection(arm="legacy", reason="ERROR", flags_version="")
    fine = bucket_fine(doc.bucket_salt, org_id, user_id)
    base: dict[str, Any] = {"flags_version": doc.version, "bucket": int(fine), "model": doc.model}
    active = override if (override and (now is None or override.expires_at > now)) else None
    if doc.kill_switch or (active and active.kill_switch):
        return FlagsSection(arm="legacy", reason="KILL_SWITCH", kill_switch=True, **base)
    if active and active.brain_mode:
        return _mode(active.brain_mode, "OVERRIDE", fine, doc, base)
    if org_id in doc.org_modes:
        return _mode(doc.org_modes[org_id], "ORG_MODE", fine, doc, base)
    key = f"{org_id}/{user_id}"
    if user_id in doc.denylist or key in doc.denylist:
        return FlagsSection(arm="legacy", reason="DENYLIST", **base)
    if user_id in doc.allowlist or key in doc.allowlist:
        return FlagsSection(arm="llm", reason="ALLOWLIST", **base)
    return _mode(doc.brain_mode, "SPLIT" if doc.brain_mode == "canary" else "DEFAULT", fine, doc, base)


def _mode(mode: BrainMode, reason: str, fine: float, doc: FlagsDocument, base: dict[str, Any]) -> FlagsSection:
    if mode == "llm":
        return FlagsSection(arm="llm", reason=reason, **base)
    if mode == "legacy":
        return FlagsSection(arm="legacy", reason=reason, **base)
    if mode == "shadow":
        sampled = fine < doc.shadow_sample_percent
        return FlagsSection(arm="legacy", reason=reason, shadow_candidate_arm="llm" if sampled else None, **base)
    in_llm = fine < doc.canary_percent
    sampled = not in_llm and fine < doc.shadow_sample_percent
    return FlagsSection(arm="llm" if in_llm else "legacy", reason=reason,
                        shadow_candidate_arm="llm" if sampled else None, **base)


class FlagsProvider:
    """Reads the live flags document and override with a short cache (default 10 s)."""

    def __init__(self, store: Store, *, ttl_seconds: float = 10.0, fallback_file: Path | None = None) -> None:
        self.store = store
        self.ttl = ttl_seconds
        self.fallback_file = fallback_file
        self._lock = threading.Lock()
        self._cached: tuple[float, FlagsDocument | None, FlagsOverride | None, str] | None = None

    def current(self) -> tuple[FlagsDocument | None, FlagsOverride | None, str]:
        """(document or None when unreadable, override, error text)."""
        with self._lock:
            if self._cached and time.monotonic() - self._cached[0] < self.ttl:
                return self._cached[1], self._cached[2], self._cached[3]
        doc, override, error = self._read()
        with self._lock:
            self._cached = (time.monotonic(), doc, override, error)
        return doc, override, error

    def invalidate(self) -> None:
        with self._lock:
            self._cached = None

    def _read(self) -> tuple[FlagsDocument | None, FlagsOverride | None, str]:
        try:
            raw = self.store.get(FLAGS_DOC)
            if raw is None and self.fallback_file is not None:
                return load_flags_file(self.fallback_file), self._read_override(), ""
            if raw is None:
                return None, None, "flags document missing"
            doc = FlagsDocument.model_validate(json.loads(raw["document_json"]))
        except (ConfigError, ValidationError, ValueError, KeyError, TypeError) as exc:
            return None, None, f"flags invalid: {exc}"
        except Exception as exc:  # store unreachable: fail safe to legacy
            return None, None, f"flags unreadable: {exc}"
        return doc, self._read_override(), ""

    def _read_override(self) -> FlagsOverride | None:
        try:
            raw = self.store.get(OVERRIDE_DOC)
            return FlagsOverride.model_validate(raw) if raw else None
        except Exception:
            return None

    def evaluate(self, org_id: str, user_id: str, now: datetime) -> tuple[FlagsSection, str]:
        doc, override, error = self.current()
        return evaluate(doc, org_id, user_id, override=override, now=now), error
