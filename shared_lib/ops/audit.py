"""The constitution audit (seed 000 §4.8): the daily checks over the observability records.

§4.8.2's query, as checks on one record of the LLM arm (the legacy brain's reasoning is
fixed text, so only the skip checks apply to it):

======================================  ========  =================================================
code                                    severity  finding
======================================  ========  =================================================
``reasoning.too_short``                 warning   reasoning under 50 characters
``reasoning.permission_claim``          critical  reasoning claims a permission (権限がある, アクセスできる); warning
                                                  where the words report or defer (``policy.claims``)
``reasoning.execution_claim``           critical  reasoning decides execution (実行します, 実行する)
``guardian.skipped``                    critical  a proposal with no guardian verdict (§4.8.1)
``authorization.skipped``               critical  a tool call that reached the executor unauthorised
``constitution.violation``              critical  a violation the brain recorded on the proposal
======================================  ========  =================================================

``audit`` adds §4.8.1's last item: constitution-violation alerts raised in the period.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from shared_lib.observability.records import ObservabilityRecord
from shared_lib.ops import queries
from shared_lib.ports import Store
from shared_lib.telemetry.findings import (
    EXECUTION_WORDS,
    MIN_REASONING_CHARS,
    PERMISSION_WORDS,
    Finding,
    findings_for,
)

__all__ = [
    "EXECUTION_WORDS",
    "MIN_REASONING_CHARS",
    "PERMISSION_WORDS",
    "AuditReport",
    "Finding",
    "audit",
    "audit_records",
    "findings_for",
]


@dataclass(frozen=True)
class AuditReport:
    since: datetime
    until: datetime
    records: int
    llm_records: int
    findings: list[Finding]
    violation_alerts: list[dict[str, Any]]

    @property
    def clean(self) -> bool:
        return not self.findings and not self.violation_alerts

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for f in self.findings:
            out[f.code] = out.get(f.code, 0) + 1
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "since": self.since.isoformat(),
            "until": self.until.isoformat(),
            "records": self.records,
            "llm_records": self.llm_records,
            "clean": self.clean,
            "counts": self.counts(),
            "findings": [f.as_dict() for f in self.findings],
            "violation_alerts": self.violation_alerts,
        }


def audit(store: Store, *, since: datetime, until: datetime, org: str | None = None) -> AuditReport:
    records = queries.records_between(store, since, until, org=org)
    return audit_records(
        records, since=since, until=until, alerts=_violation_alerts(store, since, until, org)
    )


def audit_records(
    records: Iterable[ObservabilityRecord],
    *,
    since: datetime,
    until: datetime,
    alerts: list[dict[str, Any]] | None = None,
) -> AuditReport:
    rows = list(records)
    found = [f for r in rows for f in findings_for(r)]
    found.sort(key=lambda f: f.at, reverse=True)
    return AuditReport(
        since=since,
        until=until,
        records=len(rows),
        llm_records=sum(1 for r in rows if r.is_llm),
        findings=found,
        violation_alerts=alerts or [],
    )


def _violation_alerts(
    store: Store, since: datetime, until: datetime, org: str | None
) -> list[dict[str, Any]]:
    rows = store.query("alerts", where=[("at", ">=", since.isoformat())])
    out = []
    for alert_id, doc in rows:
        code = str(doc.get("code") or "")
        if not code.startswith("constitution") or str(doc.get("at")) >= until.isoformat():
            continue
        if org and doc.get("org_id") != org:
            continue
        out.append(
            {
                "alert_id": alert_id,
                "code": code,
                "at": doc.get("at"),
                "org_id": doc.get("org_id"),
                "turn_id": doc.get("turn_id"),
                "message": doc.get("message"),
            }
        )
    return sorted(out, key=lambda a: str(a["at"]), reverse=True)
