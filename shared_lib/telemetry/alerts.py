"""Alerts: stored once, deduplicated, delivered to the notifiers at least once.

Every alert is a document ``alerts/{alert_id}`` (also ``orgs/{org}/events/{alert_id}``).
``raise_alert`` writes it with ``create`` (a deterministic id makes a redelivered cause
one alert) and ``dispatch`` delivers it:

* The dedupe key folds similar alerts: by default one notification per code and
  organisation per ``DEDUPE_MINUTES`` window; constitution violations, audit findings
  and dead-lettered turns (``PER_TURN_CODES``) are keyed per turn, so each one always
  alerts, once.
* ``alert_dedupe/{hash}`` remembers which alert owns the key, how many were folded into
  it, and which notifiers already delivered it. ``dispatch`` raises ``NotifyError`` after
  trying every notifier; ``raise_alert`` and the observer leave that alert to ``sweep``
  (the scheduled heartbeat), which sends only to the notifiers that have not delivered yet.

>>> dedupe_key({"code": "layer_failed", "turn_id": "T1", "org_id": "acme"}, minute=0)
'layer_failed|turn|T1'
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from shared_lib.errors import CATALOGUE
from shared_lib.observability.logs import log_event
from shared_lib.ports import Doc, Transaction
from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.telemetry.notify import Alert, Notifier, NotifyError, Severity

if TYPE_CHECKING:
    from shared_lib.ports import Bus, Store


class Runtime(Protocol):
    """What alerting uses of the runtime."""

    store: Store
    bus: Bus

    @property
    def clock(self) -> Callable[[], datetime]: ...

    notifiers: list[Notifier]


DEDUPE_MINUTES = 30
PER_TURN_PREFIXES = ("constitution", "audit.", "layer_failed")
ALERTS = "alerts"
DEDUPE = "alert_dedupe"
_SEVERITY = {"low": "info", "medium": "warning", "high": "warning", "critical": "critical"}


def severity_of(code: str, given: str | None = None) -> Severity:
    if given in ("info", "warning", "critical"):
        return given  # type: ignore[return-value]
    if given in _SEVERITY:
        return _SEVERITY[given]  # type: ignore[return-value]
    entry = CATALOGUE.get(code)
    if entry is not None:
        return _SEVERITY[entry.severity]  # type: ignore[return-value]
    return "critical" if code.startswith(PER_TURN_PREFIXES) else "warning"


def dedupe_key(doc: Doc, *, minute: int) -> str:
    """What makes two alerts "the same" (``minute`` = minutes since the epoch of the alert)."""
    code = str(doc.get("code") or "alert")
    if doc.get("turn_id") and code.startswith(PER_TURN_PREFIXES):
        return f"{code}|turn|{doc['turn_id']}"
    if doc.get("dedupe_key"):
        return str(doc["dedupe_key"])
    return f"{code}|{doc.get('org_id') or '-'}|{minute // DEDUPE_MINUTES}"


def notifiers_for(rt: Runtime) -> list[Notifier]:
    return list(rt.notifiers)


def _to_alert(alert_id: str, doc: Doc) -> Alert:
    return Alert(
        alert_id=alert_id,
        code=str(doc.get("code") or "alert"),
        severity=severity_of(str(doc.get("code") or ""), doc.get("severity")),
        message=str(doc.get("message") or doc.get("code") or "")[:2000],
        at=str(doc.get("at") or ""),
        org_id=doc.get("org_id"),
        turn_id=doc.get("turn_id"),
        details=dict(doc.get("details") or {}),
    )


def raise_alert(
    rt: Runtime,
    code: str,
    message: str,
    *,
    alert_id: str,
    severity: str | None = None,
    org_id: str | None = None,
    turn_id: str | None = None,
    details: dict[str, Any] | None = None,
    dedupe: str | None = None,
) -> bool:
    """Store and dispatch an alert; ``False`` (and nothing sent again) when ``alert_id`` exists.

    An alert quotes what happened (a reasoning, a message), so its message and details are
    masked as any stored value is (``Sanitizer.mask_stored``) before the store, the log or a
    notifier sees them."""
    masker = Sanitizer.default()
    doc: Doc = {
        "event_id": alert_id,
        "kind": "alert",
        "code": code,
        "severity": severity_of(code, severity),
        "message": masker.mask_stored(message)[:2000],
        "at": rt.clock().isoformat(),
        "occurred_at": rt.clock().isoformat(),
        "layer": "observer",
        "org_id": org_id,
        "turn_id": turn_id,
        "details": masker.mask_stored(details or {}),
    }
    if dedupe:
        doc["dedupe_key"] = dedupe
    created = rt.store.create(f"{ALERTS}/{alert_id}", doc)
    rt.store.create(f"orgs/{org_id or 'default'}/events/{alert_id}", doc)
    if created:
        log_event(
            "alert",
            layer="observer",
            severity="ERROR" if doc["severity"] == "critical" else "WARNING",
            code=code,
            alert_id=alert_id,
            alert_message=doc["message"],
            org_id=org_id,
            turn_id=turn_id,
        )
    existing = doc if created else (rt.store.get(f"{ALERTS}/{alert_id}") or doc)
    deliver(rt, alert_id, existing)
    if created:
        _publish(rt, doc)
    return created


def _publish(rt: Runtime, doc: Doc) -> None:
    """The alert on ``turns.events`` too, so it reaches the BigQuery table like every event
    (the observer finds it stored and delivered, and does nothing more)."""
    try:
        rt.bus.publish(
            "events",
            json.dumps(doc, ensure_ascii=False, default=str).encode(),
            {"kind": "event", "event_kind": "alert", "code": str(doc["code"])},
            "",
        )
    except Exception as exc:  # the alert is stored and will be delivered; only the BigQuery copy is lost
        log_event(
            "alert_not_streamed",
            layer="observer",
            severity="WARNING",
            alert_id=doc["event_id"],
            error=f"{type(exc).__name__}: {exc}",
        )


def deliver(rt: Runtime, alert_id: str, doc: Doc) -> str:
    """``dispatch`` unless already done; a failed delivery is left to ``sweep`` (never raised):
    a notifier that is down must not keep a turn from being recorded."""
    if "notification" in doc:
        return str(doc["notification"])
    try:
        return dispatch(rt, alert_id, doc)
    except NotifyError:
        return "failed"


def dispatch(rt: Runtime, alert_id: str, doc: Doc) -> str:
    """Deliver (or fold) one stored alert: ``sent``, ``suppressed`` or ``no_notifier``."""
    at = _parse(doc.get("at")) or rt.clock()
    key = dedupe_key(doc, minute=int(at.timestamp() // 60))
    path = f"{DEDUPE}/{hashlib.sha256(key.encode()).hexdigest()[:32]}"

    def _claim(txn: Transaction) -> tuple[bool, dict[str, Any]]:
        cur = txn.get(path)
        if cur is None:
            txn.set(
                path, {"key": key, "alert_id": alert_id, "count": 1, "delivered": {}, "at": doc.get("at")}
            )
            return True, {}
        if cur.get("alert_id") == alert_id:
            return True, dict(cur.get("delivered") or {})
        txn.set(path, {**cur, "count": int(cur.get("count", 1)) + 1, "last_alert_id": alert_id})
        return False, {}

    owner, delivered = rt.store.run_transaction(_claim)
    if not owner:
        rt.store.set(f"{ALERTS}/{alert_id}", {"notification": "suppressed", "folded_into": key}, merge=True)
        return "suppressed"
    notifiers = notifiers_for(rt)
    if not notifiers:
        log_event(
            "alert_not_delivered",
            layer="observer",
            severity="WARNING",
            alert_id=alert_id,
            reason="no notifier configured (CHARTER_ALERT_ROOM / _WEBHOOK_URL / _EMAIL_TO)",
        )
        rt.store.set(f"{ALERTS}/{alert_id}", {"notification": "no_notifier"}, merge=True)
        return "no_notifier"
    alert = _to_alert(alert_id, doc)
    failures = []
    for notifier in notifiers:
        if notifier.name in delivered:
            continue
        try:
            notifier.notify(alert)
        except NotifyError as exc:
            failures.append(f"{notifier.name}: {exc}")
            continue
        delivered[notifier.name] = rt.clock().isoformat()
        rt.store.set(path, {"delivered": dict(delivered)}, merge=True)
    if failures:
        log_event(
            "alert_delivery_failed", layer="observer", severity="ERROR", alert_id=alert_id, failures=failures
        )
        raise NotifyError("; ".join(failures))
    rt.store.set(
        f"{ALERTS}/{alert_id}", {"notification": "sent", "notified_at": rt.clock().isoformat()}, merge=True
    )
    return "sent"


def sweep(rt: Runtime, *, since: timedelta = timedelta(days=1)) -> dict[str, int]:
    """Dispatch stored alerts nobody delivered yet (written elsewhere, or whose delivery failed)."""
    cutoff = (rt.clock() - since).isoformat()
    counts: dict[str, int] = {}
    for alert_id, doc in rt.store.query(ALERTS, where=[("at", ">=", cutoff)]):
        if "notification" in doc:
            continue
        try:
            outcome = dispatch(rt, alert_id, doc)
        except NotifyError:
            outcome = "failed"
        counts[outcome] = counts.get(outcome, 0) + 1
    return counts


def recent(rt: Runtime, *, since: datetime, limit: int = 100) -> list[tuple[str, Doc]]:
    """Alerts since ``since``, newest first."""
    rows = rt.store.query(
        ALERTS, where=[("at", ">=", since.isoformat())], order_by="at", descending=True, limit=limit
    )
    return list(rows)


def _parse(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value
    try:
        return datetime.fromisoformat(str(value))
    except ValueError:
        return None
