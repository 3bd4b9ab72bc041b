"""Observer layer: one record per turn, events, dead-lettered turns and alerts.

It subscribes to ``turns.completed`` (the final envelope), ``turns.events`` (alerts and
notable events), ``turns.shadow`` (dry-run candidates) and ``turns.deadletter``.

A served turn becomes one ``ObservabilityRecord`` at ``orgs/{org}/observability/{turn_id}``,
written in a transaction that creates it (or lets a later step of the same turn supersede
an earlier one), so redeliveries never add a second record. Before the write, and so
retried with the delivery, come the idempotent side effects: the alerts the turn calls
for (deterministic ids), the record streamed to ``turns.events`` for BigQuery (at least
once, like the BigQuery subscription itself) and the log lines behind the log-based
metrics (``guardian_verdict``, ``tool_execution``). Rollout hooks (shadow comparison,
rollback guard) never fail a recording: their errors are logged.

A smoke turn (a synthetic turn run by the candidate revisions before a promotion) is recorded
like any turn, with ``smoke`` and each layer's revision, and streamed to the smoke twin of
``turns.events`` (so it stays out of BigQuery); the rollback guard, which judges the LLM arm
on what users get, does not count it.

The record's first write (and a later step's supersession) adds its contribution to the
organisation's daily roll-up (``state.rollups``: ``orgs/{org}/daily_stats/{day}``, with hourly
buckets) in the same transaction, so the dashboard reads counts, never the records, and a
redelivered or killed observer counts each record exactly once. Candidates count apart.

At rest: records are masked (``build_record``), events are stored ``mask_stored``, and
records and dead-lettered turns carry ``expires_at`` = the organisation's retention.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from shared_lib import collections
from shared_lib.delivery.topology import TOPOLOGY
from shared_lib.errors import EnvelopeError
from shared_lib.layers.base import Layer
from shared_lib.observability.logs import log_event
from shared_lib.observability.records import ObservabilityRecord, build_record
from shared_lib.ports import AlreadyExistsError, Transaction, read_together
from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.rollout import comparison
from shared_lib.state import rollups
from shared_lib.telemetry import alerts
from shared_lib.telemetry.findings import findings_for
from shared_lib.turn.envelope import Turn

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime

DEAD_LETTER_ATTR = "CloudPubSubDeadLetterSourceSubscription"
STREAMED_KINDS = frozenset({"turn_record", "shadow_candidate"})


def record_turn(rt: Runtime, turn: Turn) -> bool:
    """Record a served turn once; ``False`` for a redelivery of what is already recorded.

    No read comes before the roll-up's transaction: it reads the record with the day's roll-up
    and decides there (``_write``: created, superseded by a later step, or left as it is). What
    runs before it is idempotent, so a redelivery that repeats it changes nothing: the stream row
    (the BigQuery view keeps one row a turn), the alerts (by their id), the shadow comparison (a
    ``create``). The log-based metric lines and the guard's count follow the write, once.
    """
    path = collections.path("observability", org=turn.org_id, id=turn.turn_id)
    record = build_record(turn, recorded_at=rt.clock(), revision=rt.settings.revision)
    _alert_on(rt, turn, record)
    stream(rt, record)
    # a turn the debounce merged into a later one served nobody: no comparison, no guard count
    merged = record.response_kind == "merged"
    compared = None if merged else _hook(rt, "on_served_turn", turn)
    doc = {**record.store_doc(), "expires_at": rt.clock() + rt.settings.retention(turn.org_id)}
    written = _write(rt, path, record, doc)
    if not written:
        log_event("turn_record_duplicate", turn=turn, layer="observer", step=turn.step)
    else:
        _metric_lines(turn)
        log_event(
            "turn_recorded",
            turn=turn,
            layer="observer",
            outcome=record.response_kind,
            arm=record.arm,
            step=turn.step,
            total_ms=record.total_duration_ms,
            cost_usd=record.cost_usd,
        )
        if not turn.smoke and not merged:  # the guard dedupes per record itself; it counts what is stored
            _guard(rt, record, compared)
    return written


def timezone(rt: Runtime) -> str:
    """The organisation's day for roll-ups: the flags' cost day (the dashboard's "today")."""
    doc, _, _ = rt.flags.current()
    return doc.rollback_guard.cost_day_timezone if doc is not None else rollups.DEFAULT_TIMEZONE


def _write(rt: Runtime, path: str, record: ObservabilityRecord, doc: dict[str, Any]) -> bool:
    """The record and its roll-up in one transaction, which reads the record, the day's roll-up
    and its conversation's marker in one batch: a first record is created and counted; a record already there (a
    redelivery) ends it without a write, so redeliveries racing each other only read; a later
    step of a multi-step turn supersedes it."""
    tz = timezone(rt)
    return rt.store.run_transaction(lambda txn: _write_once(txn, path, record, doc, tz))


class _ReadFirst:
    """A transaction whose reads of ``found``'s documents are answered from that batch."""

    def __init__(self, txn: Transaction, found: dict[str, Any]) -> None:
        self._txn, self._found = txn, found

    def get(self, path: str) -> Any:
        return self._found[path] if path in self._found else self._txn.get(path)

    def __getattr__(self, name: str) -> Any:  # writes go to the transaction
        return getattr(self._txn, name)


def _write_once(
    txn: Transaction, path: str, record: ObservabilityRecord, doc: dict[str, Any], tz: str
) -> bool:
    found = read_together(txn, [path, *rollups.first_reads(record.organization_id, tz, record)])
    reads: Any = _ReadFirst(txn, found)
    current = found[path]
    if current is None:
        return _create_counted(reads, path, record, doc, tz)
    if int(current.get("step", 0)) < record.step:  # a later step of a multi-step turn supersedes
        rollups.count_in(reads, record.organization_id, tz, record, ObservabilityRecord.from_doc(current))
        txn.set(path, doc)
        return True
    return False


def _create_counted(
    txn: Transaction, path: str, record: ObservabilityRecord, doc: dict[str, Any], tz: str
) -> bool:
    rollups.count_in(txn, record.organization_id, tz, record)
    txn.create(path, doc)
    return True


def record_candidate(rt: Runtime, turn: Turn) -> bool:
    """A shadow candidate (dry run): stored beside the served record and compared with it."""
    record = build_record(turn, recorded_at=rt.clock(), revision=rt.settings.revision)
    stream(rt, record)
    # one candidate per turn (published once, after its last step): its record holds every step
    path = collections.path("shadow_candidates", org=turn.org_id, id=f"{turn.turn_id}-0")
    doc = {**record.store_doc(), "expires_at": rt.clock() + rt.settings.retention(turn.org_id)}
    tz = timezone(rt)
    try:
        created = rt.store.run_transaction(lambda txn: _create_counted(txn, path, record, doc, tz))
    except AlreadyExistsError:
        created = False
    compared = _hook(rt, "on_shadow_candidate", turn)
    if not turn.smoke:
        _guard(rt, record, compared)
    return created


def stream(rt: Runtime, record: ObservabilityRecord) -> None:
    """Publish the record on ``turns.events`` (the BigQuery subscription writes it to the table)."""
    data = record.model_dump_json().encode()  # the JSON model_dump(mode="json") gives, made in one pass
    rt.bus.publish(
        TOPOLOGY.route("events", smoke=record.smoke),
        data,
        {"kind": "event", "event_kind": record.kind, "code": record.kind, "turn_id": record.turn_id or ""},
        "",
    )


def _alert_on(rt: Runtime, turn: Turn, record: ObservabilityRecord) -> None:
    """Errors that ask for an admin, constitution violations and critical audit findings always alert."""
    base = f"turn-{turn.turn_id}-{turn.step}"
    for err in turn.errors:
        if err.alert_admin:
            alerts.raise_alert(
                rt,
                err.code,
                err.message,
                alert_id=f"{base}-{err.code}",
                severity=err.severity,
                org_id=turn.org_id,
                turn_id=turn.turn_id,
                details={"layer": err.layer},
            )
    if record.backlogged and not any(e.code == "turn_backlog" for e in turn.errors):
        # infrastructure, not the brain: the operators hear of it (folded per organisation and
        # half hour like every alert of a code), the rollback guard never counts it
        alerts.raise_alert(
            rt,
            "turn_backlog",
            f"turn waited {record.queued_ms / 1000:.0f} s for its layers (admitted backlog "
            f"{turn.budget.backlog_seconds or 0:.0f} s); answered late",
            alert_id=f"{base}-turn_backlog",
            severity="warning",
            org_id=turn.org_id,
            turn_id=turn.turn_id,
            details={"queued_ms": record.queued_ms},
        )
    for v in turn.proposal.violations:
        alerts.raise_alert(
            rt,
            "constitution_violation",
            f"{v.article} {v.code}: {v.detail}",
            alert_id=f"{base}-violation-{v.code}",
            severity="critical",
            org_id=turn.org_id,
            turn_id=turn.turn_id,
            details={"article": v.article, "action": v.action},
        )
    for finding in findings_for(record):
        if finding.severity == "critical" and finding.code != "constitution.violation":
            alerts.raise_alert(
                rt,
                f"audit.{finding.code}",
                finding.detail,
                alert_id=f"{base}-audit-{finding.code}",
                severity="critical",
                org_id=turn.org_id,
                turn_id=turn.turn_id,
            )


def _metric_lines(turn: Turn) -> None:
    """The log lines the log-based metrics count (terraform/modules/monitoring)."""
    if turn.guardian is not None:
        log_event(
            "guardian_verdict",
            turn=turn,
            layer="guardian",
            outcome=turn.guardian.action.upper(),
            reason_code=turn.guardian.reason_code,
        )
    for r in turn.execution.results:
        if not r.dry_run:
            log_event(
                "tool_execution",
                turn=turn,
                layer="executor",
                outcome="ok" if r.ok else "error",
                reason_code=r.error_code or "ok",
                tool=r.tool_name,
                duration_ms=r.duration_ms,
            )


def _hook(rt: Runtime, name: str, turn: Turn) -> dict[str, Any] | None:
    """The comparison hook; returns the turn's comparison once both sides are in."""
    try:
        result: dict[str, Any] | None = getattr(comparison, name)(rt, turn)
        return result
    except Exception as exc:  # a comparison must never cost the record
        log_event(
            "rollout_hook_failed",
            turn=turn,
            layer="observer",
            severity="ERROR",
            hook=name,
            error=f"{type(exc).__name__}: {exc}",
        )
        return None


def _guard(rt: Runtime, record: ObservabilityRecord, compared: dict[str, Any] | None) -> None:
    try:
        for alert in rt.rollback_guard.observe(rt, record.store_doc(), compared):
            log_event(
                "rollback_guard_tripped",
                layer="observer",
                severity="WARNING",
                code=alert.get("code"),
                turn_id=record.turn_id,
            )
    except Exception as exc:  # the guard reports its own failures; the record is already written
        log_event(
            "rollback_guard_failed",
            layer="observer",
            severity="ERROR",
            error=f"{type(exc).__name__}: {exc}",
            turn_id=record.turn_id,
        )


def record_event(rt: Runtime, payload: dict[str, Any]) -> bool:
    """An event from ``turns.events`` (or ``Runtime.emit_event``); alerts are delivered."""
    org = str(payload.get("org_id") or "default")
    event_id = str(payload.get("event_id"))
    payload = Sanitizer.default().mask_stored(payload)
    created = rt.store.create(f"orgs/{org}/events/{event_id}", payload)
    if payload.get("kind") == "alert":
        alert_created = rt.store.create(f"{alerts.ALERTS}/{event_id}", payload)
        stored = payload if alert_created else (rt.store.get(f"{alerts.ALERTS}/{event_id}") or payload)
        alerts.deliver(rt, event_id, stored)
    return created


def record_dead_letter(rt: Runtime, data: bytes, attributes: dict[str, str]) -> bool:
    """A turn that a layer could not process: record it (even if undecodable) and always alert."""
    try:
        turn: Turn | None = Turn.from_message(data, attributes, rt.store)
    except EnvelopeError:
        turn = None
    org = turn.org_id if turn else "unknown"
    turn_id = turn.turn_id if turn else attributes.get("turn_id") or hashlib.sha256(data).hexdigest()[:26]
    layer = attributes.get("layer", "?")
    step = attributes.get("step", "0")
    s = Sanitizer.default()
    doc = {
        "turn_id": turn_id,
        "org_id": org,
        "produced_by": layer,
        "step": step,
        "subscription": attributes.get(DEAD_LETTER_ATTR, ""),
        "attributes": s.mask_obj(attributes),
        "at": rt.clock(),
        "conversation_key": turn.conversation_key if turn else None,
        "input_message": s.mask_text(turn.inbound.text) if turn else None,
    }
    if turn is not None:
        doc["expires_at"] = rt.clock() + rt.settings.retention(org)
    created = rt.store.create(f"orgs/{org}/failures/{turn_id}-{layer}-{step}", doc)
    if created:
        log_event(
            "dead_letter", turn=turn, layer="observer", severity="ERROR", turn_id=turn_id, produced_by=layer
        )
    alerts.raise_alert(
        rt,
        "layer_failed",
        f"turn dead-lettered after {layer} (subscription {doc['subscription'] or '?'})",
        alert_id=f"dlq-{turn_id}-{layer}-{step}",
        severity="critical",
        org_id=None if org == "unknown" else org,
        turn_id=turn_id,
        details={"produced_by": layer, "subscription": doc["subscription"]},
    )
    return created


def handle(rt: Runtime, data: bytes, attributes: dict[str, str]) -> str:
    """Dispatch on the message itself (push deliveries do not name their topic)."""
    if DEAD_LETTER_ATTR in attributes:
        return "dead_letter" if record_dead_letter(rt, data, attributes) else "duplicate"
    if attributes.get("kind") == "event":
        if attributes.get("event_kind") in STREAMED_KINDS:
            return "streamed"  # our own record on its way to BigQuery
        return "event" if record_event(rt, json.loads(data)) else "duplicate"
    turn = Turn.from_message(data, attributes, rt.store)
    if turn.record_kind() == "shadow_candidate":
        return "shadow" if record_candidate(rt, turn) else "duplicate"
    return "recorded" if record_turn(rt, turn) else "duplicate"


LAYER = Layer("observer", None, receive=handle)
