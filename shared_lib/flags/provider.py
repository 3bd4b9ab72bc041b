"""The live flags: the document and the override read from the store, briefly cached.

A read that fails answers ``ERROR`` (the legacy arm, no shadow candidate) and raises an
alert once per failed read; a broken override fails the same way, because an override
is usually a rollback and ignoring it could re-enable what it stopped.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from shared_lib.errors import ConfigError
from shared_lib.flags.document import (
    FLAGS_DOC,
    OVERRIDE_DOC,
    FlagsDocument,
    FlagsOverride,
    field_errors,
    load_flags_file,
    parse_store_doc,
)
from shared_lib.flags.evaluation import evaluate
from shared_lib.observability.logs import log_event
from shared_lib.ports import Store
from shared_lib.turn.envelope import FlagsSection

MAX_CACHE_SECONDS = 30.0
ERROR_CACHE_SECONDS = 5.0  # a broken document is re-read sooner than a good one


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
                None, None, f"flags override invalid: {'; '.join(field_errors(exc))}", source
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
