"""Daily roll-ups of the observability records: the dashboard's numbers without the records.

One document per organisation and calendar day of the organisation's timezone (the flags'
``rollback_guard.cost_day_timezone``, Asia/Tokyo by default),
``orgs/{org}/daily_stats/{YYYY-MM-DD}``::

    {"org_id": "acme", "day": "2026-11-24", "timezone": "Asia/Tokyo",
     "totals": BUCKET, "hours": {"0": BUCKET, …, "23": BUCKET},
     "expires_at": …}

``hours`` is keyed by the hour's index since local midnight (so a day with a DST change has
23 or 25 of them and none is ambiguous). A ``BUCKET`` holds counts (turns, per arm, per reply
kind, confirmations, blocks, denials, errors, tool calls and errors), sums (cost, tokens by
kind, response and LLM time, confidence; cost per model and per purpose of call) and a fixed histogram of LLM latency per call
(``LATENCY_BOUNDS_MS``), so a p95 can be read from it; shadow candidates count apart
(``shadow_turns``, ``shadow_cost_usd``: real money, never a conversation). ``conversations``
counts the day's distinct conversations (org/room/user, the turn's ``conversation_key``), not
its turns: a marker document under the day (``daily_conversations``, id a 16-hex hash of the
key, never the ids) says a conversation was seen that day, so a turn of a conversation already
counted adds nothing; an hour's bucket counts the conversations first seen in that hour. The
markers are documents of their own, read with the day in one batch and created in the same
commit, so the roll-up that every turn reads and writes stays the same size however many
conversations a day has (a map of them in the roll-up grew by one entry each).

Exactly once: the observer adds a record's contribution in the same transaction as the
record's first write (``count_in``), and when a later step supersedes a record it takes the
old contribution away in that transaction too. A redelivered or killed observer therefore
never counts a record twice or not at all. Counts and sums only, no personal data: documents
expire ``ROLLUP_DAYS`` after their day.

>>> bucket_for_latency(1200.0).index(1), LATENCY_BOUNDS_MS[3]
(3, 1500)
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from shared_lib import collections
from shared_lib.observability.records import ObservabilityRecord
from shared_lib.ports import Doc, Op, Store, Transaction

COLLECTION = "daily_stats"
DEFAULT_TIMEZONE = "Asia/Tokyo"
ROLLUP_DAYS = 400  # a year of monthly views and the month before it
MARKER_DAYS = 7  # a conversation's marker outlives its day by the subscriptions' retention
PROPOSING_ARMS = ("llm", "legacy")
# Upper bounds (ms) of the latency histogram; one more bucket holds everything slower. The
# seed's 10 s threshold is a bound, so a p95 read from the histogram crosses it only when it does.
LATENCY_BOUNDS_MS: tuple[int, ...] = (
    *(250, 500, 1000, 1500, 2000, 3000, 4000, 5000, 6000, 8000, 10_000),
    *(12_000, 15_000, 20_000, 30_000, 60_000, 120_000),
)
COUNTERS = (
    "turns",
    "conversations",
    "llm_turns",
    "llm_calls",
    "llm_duration_ms",
    "tool_calls",
    "tool_errors",
    "confirmations",
    "blocks",
    "denials",
    "errors",
    "confidence_n",
    "confidence_sum",
    "duration_ms_sum",
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "cost_usd",
    "shadow_turns",
    "shadow_cost_usd",
)
MAPS = ("arms", "outcomes", "model_cost_usd", "purpose_cost_usd")


def path(org: str, day: date) -> str:
    return collections.path(COLLECTION, org=org, id=day.isoformat())


def marker_path(org: str, day: date, rec: ObservabilityRecord) -> str:
    """The document that says ``rec``'s conversation was seen on ``day``."""
    return collections.path("daily_conversations", org=org, day=day.isoformat(), id=conversation_id(rec))


def first_reads(org: str, tz: str, rec: ObservabilityRecord) -> list[str]:
    """What ``count_in`` reads for a first record: its day's roll-up and, for a served turn, its
    conversation's marker (a caller reads them in one batch with its own documents)."""
    day = slot(rec.timestamp, tz)[0]
    return [path(org, day)] + ([] if rec.shadow else [marker_path(org, day, rec)])


def day_start(day: date, tz: str) -> datetime:
    """Local midnight of ``day`` in ``tz``, in UTC."""
    return datetime(day.year, day.month, day.day, tzinfo=ZoneInfo(tz)).astimezone(UTC)


def slot(at: datetime, tz: str) -> tuple[date, int]:
    """The local day of ``at`` and its hour index since that day's local midnight."""
    day = at.astimezone(ZoneInfo(tz)).date()
    return day, int((at - day_start(day, tz)).total_seconds() // 3600)


def bucket_for_latency(ms: float) -> list[int]:
    hist = [0] * (len(LATENCY_BOUNDS_MS) + 1)
    hist[next((i for i, b in enumerate(LATENCY_BOUNDS_MS) if ms <= b), len(LATENCY_BOUNDS_MS))] = 1
    return hist


def empty() -> Doc:
    return {
        **{c: 0 for c in COUNTERS},
        **{m: {} for m in MAPS},
        "latency_hist": [0] * (len(LATENCY_BOUNDS_MS) + 1),
    }


def contribution(r: ObservabilityRecord) -> Doc:
    """What one record adds to a bucket (the definitions of ``ops.metrics``, seed §15.1)."""
    out = empty()
    model = {r.llm_model: r.cost_usd} if r.cost_usd else {}
    purpose = {k: v for k, v in r.usage.cost_by_purpose.items() if v}
    if r.shadow:
        out.update(shadow_turns=1, shadow_cost_usd=r.cost_usd, model_cost_usd=model, purpose_cost_usd=purpose)
        return out
    llm = r.usage.llm_calls > 0
    proposing = r.arm in PROPOSING_ARMS and bool(r.output_type)
    out.update(
        turns=1,
        llm_turns=int(llm),
        llm_calls=r.usage.llm_calls if llm else 0,
        llm_duration_ms=r.usage.llm_duration_ms if llm else 0,
        tool_calls=r.tool_calls_executed,
        tool_errors=r.tool_errors,
        confirmations=int(r.guardian_action == "confirm" and r.output_type == "tool_call"),
        blocks=int(r.guardian_action == "block"),
        denials=int(r.auth_result == "denied"),
        errors=int(bool(r.errors)),
        confidence_n=int(proposing),
        confidence_sum=r.llm_confidence if proposing else 0,
        duration_ms_sum=r.total_duration_ms,
        input_tokens=r.usage.input_tokens,
        output_tokens=r.usage.output_tokens,
        cache_read_input_tokens=r.usage.cache_read_input_tokens,
        cache_creation_input_tokens=r.usage.cache_creation_input_tokens,
        cost_usd=r.cost_usd,
        arms={r.arm: 1},
        outcomes={r.response_kind: 1},
        model_cost_usd=model,
        purpose_cost_usd=purpose,
    )
    if llm:
        out["latency_hist"] = bucket_for_latency(r.usage.llm_duration_ms / r.usage.llm_calls)
    return out


def _num(value: float) -> float | int:
    return value if isinstance(value, int) else round(value, 6)


def merge(a: Mapping[str, Any], b: Mapping[str, Any], sign: int = 1) -> Doc:
    """``a + sign * b``, bucket by bucket (zeroed map entries are dropped)."""
    out = empty()
    for c in COUNTERS:
        out[c] = _num(a.get(c, 0) + sign * b.get(c, 0))
    for m in MAPS:
        keys = {*a.get(m, {}), *b.get(m, {})}
        summed = {k: _num(a.get(m, {}).get(k, 0) + sign * b.get(m, {}).get(k, 0)) for k in keys}
        out[m] = {k: v for k, v in sorted(summed.items()) if v}
    ha, hb = a.get("latency_hist") or out["latency_hist"], b.get("latency_hist") or out["latency_hist"]
    out["latency_hist"] = [int(x + sign * y) for x, y in zip(ha, hb, strict=True)]
    return out


def total(buckets: Iterable[Mapping[str, Any]]) -> Doc:
    out = empty()
    for b in buckets:
        out = merge(out, b)
    return out


def latency_p95(hist: list[int]) -> float | None:
    """Nearest-rank p95 read from the histogram: the upper bound of its bucket (the last
    bound for the overflow bucket), so at most one bucket above the exact value."""
    n = sum(hist)
    if not n:
        return None
    rank, seen = max(1, -(-95 * n // 100)), 0
    for i, count in enumerate(hist):
        seen += count
        if seen >= rank:
            return float(LATENCY_BOUNDS_MS[min(i, len(LATENCY_BOUNDS_MS) - 1)])
    return float(LATENCY_BOUNDS_MS[-1])


# --------------------------------------------------------------------------- writing


def conversation_id(r: ObservabilityRecord) -> str:
    """A conversation's key in a day's roll-up: a short hash of org/room/user, never the ids."""
    key = r.conversation_key or f"{r.organization_id}/{r.room_id}/{r.user_id}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def count_in(
    txn: Transaction,
    org: str,
    tz: str,
    add: ObservabilityRecord,
    remove: ObservabilityRecord | None = None,
) -> None:
    """Add ``add`` (and take ``remove``, the record it supersedes, away) inside ``txn``.

    All reads come first (the transaction's rule); call it before the record's own write.
    A served turn's conversation is counted when its day's marker is not there yet (the
    hour's bucket counts it too: the hour it was first seen that day).
    """
    changes: list[tuple[ObservabilityRecord, int]] = [(add, 1)] + ([(remove, -1)] if remove else [])
    slots = [(rec, sign, *slot(rec.timestamp, tz)) for rec, sign in changes]
    docs = {day: txn.get(path(org, day)) or _new_day(org, day, tz) for day in {s[2] for s in slots}}
    marker = marker_path(org, slots[0][2], add) if not add.shadow else None
    first_seen = marker is not None and txn.get(marker) is None
    if first_seen:  # a roll-up written before the markers kept its day's conversations in a map
        first_seen = conversation_id(add) not in (docs[slots[0][2]].get("conversation_ids") or {})
    for rec, sign, day, hour in slots:
        doc, part = docs[day], contribution(rec)
        doc["totals"] = merge(doc["totals"], part, sign)
        doc["hours"][str(hour)] = merge(doc["hours"].get(str(hour), empty()), part, sign)
        if sign > 0 and first_seen:
            doc["totals"]["conversations"] += 1
            doc["hours"][str(hour)]["conversations"] += 1
    for day, doc in docs.items():
        txn.set(path(org, day), doc)
    if marker is not None and first_seen:
        txn.set(marker, {"expires_at": day_start(slots[0][2], tz) + timedelta(days=1 + MARKER_DAYS)})


def _new_day(org: str, day: date, tz: str) -> Doc:
    return {
        "org_id": org,
        "day": day.isoformat(),
        "timezone": tz,
        "totals": empty(),
        "hours": {},
        "expires_at": day_start(day, tz) + timedelta(days=ROLLUP_DAYS),
    }


def add(store: Store, record: ObservabilityRecord, tz: str = DEFAULT_TIMEZONE) -> None:
    """Count one record on its own (backfills and tests; the observer uses ``count_in``)."""
    store.run_transaction(lambda txn: count_in(txn, record.organization_id, tz, record))


# --------------------------------------------------------------------------- reading


def read_days(store: Store, first: date, last: date, *, org: str | None = None) -> list[Doc]:
    """The roll-ups of ``first`` … ``last`` (one query; one document per organisation and day)."""
    where: list[tuple[str, Op, Any]] = [("day", ">=", first.isoformat()), ("day", "<=", last.isoformat())]
    coll = f"orgs/{org}/{COLLECTION}" if org else COLLECTION
    return [doc for _, doc in store.query(coll, where=where, group=not org)]


def hourly(docs: Iterable[Doc]) -> list[tuple[datetime, Doc]]:
    """Every hour bucket of ``docs`` with its start (UTC), unsorted."""
    out: list[tuple[datetime, Doc]] = []
    for doc in docs:
        start = day_start(date.fromisoformat(str(doc["day"])), str(doc.get("timezone") or DEFAULT_TIMEZONE))
        out.extend((start + timedelta(hours=int(h)), b) for h, b in (doc.get("hours") or {}).items())
    return out
