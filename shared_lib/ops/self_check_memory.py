"""The heartbeat's bounded check of the memory index (seed 001 §17.3 メモリ), a page per tick.

Each tick checks ``PAGE`` sources of one organisation (``memory.consistency.check_sources``: each
manifest against its source document and its chunks, each chunk's vector) from where the last
tick stopped, and counts the chunks it saw. When the organisation's pass ends, the counts are
compared with its statistics (``totals``) if no index write happened during the pass (``totals``
unchanged), and the next tick starts the next organisation: those with a conversation in the last
``ACTIVE_DAYS`` days, in id order, round and round. The state (organisation, cursor, counts)
is ``ops_state/self-check-memory``.

What a pass finds is recorded in the tick's result and alerted once per organisation and day,
naming the problems and the command that repairs them (``charter memory check --org ORG
--repair``, which also finds what only a whole read can: orphan chunks, postings). An expired
memory whose chunks went with it (Firestore's TTL deletes a memory and its chunks, never their
manifest nor the counts) is repaired by that command but never alerted, nor are the counts a
pass that found one sees off: the same cause.

Cost per tick: one read and one write of the state, one query of ``PAGE`` manifests, one read of
each manifest's source document and of each of its chunks (at most ``PAGE`` × 200, in practice a
few per source); at the end of a pass one read of ``totals`` and one query of the active
conversations (``ORGS_SCANNED`` at most).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from shared_lib.memory import consistency
from shared_lib.memory.index import stats_path
from shared_lib.state import paging
from shared_lib.telemetry import alerts

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime

STATE = "ops_state/self-check-memory"
PAGE = 50  # sources checked per tick
ACTIVE_DAYS = 7
ORGS_SCANNED = 5000
EXAMPLES = 5  # findings named in the alert (the repair command lists them all)


def active_orgs(rt: Runtime, now: datetime) -> list[str]:
    """The organisations with a conversation in the last ``ACTIVE_DAYS`` days."""
    since = now - timedelta(days=ACTIVE_DAYS)
    rows = rt.store.query("conversations", where=[("at", ">=", since)], group=True, limit=ORGS_SCANNED)
    return sorted({str(d["org_id"]) for _, d in rows if d.get("org_id")})


def _next_org(rt: Runtime, now: datetime, after: str | None) -> str | None:
    orgs = active_orgs(rt, now)
    later = [o for o in orgs if after is None or o > after]
    first = later or orgs
    return first[0] if first else None


def run(rt: Runtime, now: datetime, *, page_size: int = PAGE) -> dict[str, Any]:
    state = rt.store.get(STATE) or {}
    org = state.get("org") or _next_org(rt, now, None)
    if org is None:
        return {"org": None}
    cursor = paging.Cursor.from_doc(state.get("cursor"))
    counted = dict(state.get("counted") or {"chunks": 0, "length": 0, "kinds": {}})
    totals_at_start = state.get("totals") if cursor.started else rt.store.get(stats_path(org, "totals")) or {}
    rows, cursor = paging.page(
        rt.store, consistency.sources_path(org), order_by="updated_at", size=page_size, cursor=cursor
    )
    findings, chunks = consistency.check_sources(rt.store, rt.embedder, org, rows)
    page_counts, _ = consistency.recount(chunks.values())
    counted["chunks"] = int(counted.get("chunks", 0)) + page_counts["chunks"]
    counted["length"] = int(counted.get("length", 0)) + page_counts["length"]
    kinds = {k: int(v) for k, v in dict(counted.get("kinds") or {}).items()}
    for kind, n in page_counts["kinds"].items():
        kinds[kind] = kinds.get(kind, 0) + n
    counted["kinds"] = kinds
    counts = {str(k): int(n) for k, n in dict(state.get("counts") or {}).items()}
    examples = list(state.get("examples") or [])
    out: dict[str, Any] = {"org": org, "sources": len(rows), "pass_done": cursor.done}
    if cursor.done:
        totals = rt.store.get(stats_path(org, "totals")) or {}
        if totals == totals_at_start:  # no index write during the pass: the counts are comparable
            findings += consistency.stats_findings(totals, counted)
    for f in findings:
        counts[f.problem] = counts.get(f.problem, 0) + 1
    examples = (examples + [f.as_dict() for f in findings if f.problem not in consistency.QUIET])[:EXAMPLES]
    out["found"] = {k: counts[k] for k in sorted(counts)}
    if cursor.done:
        _alert(rt, org, now, counts, examples)
        rt.store.set(
            STATE, {"org": _next_org(rt, now, org), "at": now, "last": {"org": org, "found": counts}}
        )
    else:
        rt.store.set(
            STATE,
            {
                "org": org,
                "cursor": cursor.as_doc(),
                "counted": counted,
                "totals": totals_at_start,
                "counts": counts,  # what the pass found so far, by problem
                "examples": examples,
                "at": now,
            },
        )
    return out


def _alert(rt: Runtime, org: str, now: datetime, counts: dict[str, int], examples: list[Any]) -> None:
    quiet = set(consistency.QUIET)
    if counts.get("expired"):  # the TTL took chunks the statistics still count: the same cause
        quiet.add("totals")
    loud = {k: n for k, n in counts.items() if k not in quiet}
    if not loud:
        return
    day = now.date().isoformat()
    listed = ", ".join(f"{k} {n}" for k, n in sorted(loud.items()))
    alerts.raise_alert(
        rt,
        "heartbeat.memory_index",
        f"memory index of {org}: {listed} (repair: charter memory check --org {org} --repair)",
        alert_id=f"memory-index-{org}-{day}",
        severity="warning",
        org_id=org,
        details={"counts": loud, "examples": examples},
        dedupe=f"heartbeat.memory_index|{org}|{day}",
    )
