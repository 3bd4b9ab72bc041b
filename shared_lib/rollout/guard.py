"""The rollback guard: watches the LLM arm and rolls it back to legacy when it misbehaves.

The observer calls ``rt.rollback_guard.observe(rt, record)`` with every observability record
(the stored dict); the guard keeps the LLM arm's: served turns of the LLM arm
(``flags_arm == "llm"``) and shadow candidates of the LLM arm (``shadow`` and
``arm == "llm"``; they count toward the daily cost only).

State lives in the store, so every observer instance sees the same window:

* one small document per record, ``rollout_guard/state/events/{turn_id}-s|c``, written
  with ``create`` — a redelivery finds it and counts nothing, and no two records ever
  write the same document, so busy observers never contend;
* the day's LLM cost in sharded counters ``rollout_guard/state/days/{day}-{shard}``
  (a transaction per record that has a cost, after its event was created).

Evaluation (at most every ``evaluate_every_seconds`` per instance) reads the window's
events with one single-field range query and the day's shards. Thresholds (seed 000
§15.1, §14.3) come from the flags document's ``rollback_guard`` section:

* tool execution error rate over the window > 5 % (system and external errors; a user's
  bad input is not an execution error),
* guardian block rate over the window > 10 %,
* mean LLM latency per call over the window > 10 s,
* LLM cost of the day (served and shadow) over the daily budget.

When one is crossed the guard writes the override ``brain_mode: legacy`` (author
``rollback-guard``, the reason, an expiry) unless a stricter override is already active,
raises an alert, and restarts its window at the trip, so when the override expires (or
an operator clears it) the LLM arm is judged on new traffic only.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol
from zoneinfo import ZoneInfo

from shared_lib.errors import CATALOGUE
from shared_lib.flags import RollbackGuardConfig
from shared_lib.ports import Store, Transaction
from shared_lib.rollout.overrides import write_override

if TYPE_CHECKING:
    from shared_lib.envelope import Turn
    from shared_lib.flags import FlagsProvider


class Runtime(Protocol):
    """What the guard uses of the runtime (``shared_lib.runtime.Runtime`` has it)."""

    store: Store
    flags: FlagsProvider

    @property
    def clock(self) -> Callable[[], datetime]: ...

    rollback_guard: RollbackGuard

    def emit_alert(self, turn: Turn | None, code: str, message: str) -> dict[str, Any]: ...


STATE = "rollout_guard/state"
EVENTS = f"{STATE}/events"
DAYS = f"{STATE}/days"
AUTHOR = "rollback-guard"
ALERT_CODE = "rollback_guard_tripped"
SHARDS = 16
KEEP = timedelta(days=2)
COUNTERS = ("turns", "tool_calls", "tool_errors", "blocks", "llm_calls", "llm_ms", "cost_usd")
_EXECUTION_CATEGORIES = ("system_error", "external_error")


def _as_datetime(value: Any, default: datetime) -> datetime:
    if isinstance(value, datetime):
        return value
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            return default
    return default


def _is_execution_error(code: str | None) -> bool:
    entry = CATALOGUE.get(code or "")
    return entry is None or entry.category in _EXECUTION_CATEGORIES


def record_counts(record: dict[str, Any]) -> dict[str, float]:
    """What one served LLM-arm record adds to the window."""
    results = [
        r
        for r in record.get("execution_result") or []
        if isinstance(r, dict) and not r.get("dry_run") and not r.get("replayed")
    ]
    usage = record.get("usage") or {}
    return {
        "turns": 1,
        "tool_calls": len(results),
        "tool_errors": sum(
            1 for r in results if not r.get("ok") and _is_execution_error(r.get("error_code"))
        ),
        "blocks": 1 if record.get("guardian_action") == "block" else 0,
        "llm_calls": int(usage.get("llm_calls") or 0),
        "llm_ms": float(record.get("llm_duration_ms") or 0),
        "cost_usd": float(record.get("cost_usd") or 0),
    }


def window_status(
    store: Store, config: RollbackGuardConfig, now: datetime, since: datetime | None = None
) -> dict[str, Any]:
    """Sums over the sliding window (from the last trip when later), the day's cost, each check."""
    start = now - timedelta(minutes=config.window_minutes)
    after_trip = since is not None and since >= start
    if since is not None and after_trip:
        start = since
    totals = dict.fromkeys(COUNTERS, 0.0)
    for _, doc in store.query(EVENTS, where=[("at", ">=", start)]):
        at = _as_datetime(doc.get("at"), now)
        # What was counted up to the trip's instant belongs to the tripped window.
        if not doc.get("served") or at > now or (after_trip and at <= start):
            continue
        for name in COUNTERS:
            totals[name] += float(doc.get(name) or 0)
    day = cost_day(now, config)
    day_cost = sum(float(d.get("cost_usd") or 0) for _, d in store.query(DAYS, where=[("day", "==", day)]))
    checks = _checks(totals, day_cost, config)
    return {
        "window_start": start.isoformat(),
        "now": now.isoformat(),
        "totals": totals,
        "day": day,
        "day_cost_usd": round(day_cost, 6),
        "checks": checks,
        "tripped": [c["reason"] for c in checks if c["tripped"]],
    }


def cost_day(now: datetime, config: RollbackGuardConfig) -> str:
    return now.astimezone(ZoneInfo(config.cost_day_timezone)).date().isoformat()


def _checks(t: dict[str, float], day_cost: float, c: RollbackGuardConfig) -> list[dict[str, Any]]:
    out = []

    def check(
        name: str, value: float | None, limit: float, enough: bool, shown: str, limit_shown: str
    ) -> None:
        tripped = enough and value is not None and value > limit
        out.append(
            {
                "name": name,
                "value": value,
                "limit": limit,
                "enough_samples": enough,
                "tripped": tripped,
                "reason": f"{name} {shown if value is not None else 'n/a'} > {limit_shown}",
            }
        )

    rate = t["tool_errors"] / t["tool_calls"] if t["tool_calls"] else None
    check(
        "tool_error_rate",
        rate,
        c.tool_error_rate_max,
        t["tool_calls"] >= c.min_tool_calls,
        f"{rate or 0:.3f} ({t['tool_errors']:.0f}/{t['tool_calls']:.0f})",
        f"{c.tool_error_rate_max:g}",
    )
    rate = t["blocks"] / t["turns"] if t["turns"] else None
    check(
        "block_rate",
        rate,
        c.block_rate_max,
        t["turns"] >= c.min_turns,
        f"{rate or 0:.3f} ({t['blocks']:.0f}/{t['turns']:.0f})",
        f"{c.block_rate_max:g}",
    )
    mean = t["llm_ms"] / t["llm_calls"] if t["llm_calls"] else None
    check(
        "llm_latency_ms",
        mean,
        c.llm_latency_ms_max,
        t["llm_calls"] >= c.min_llm_calls,
        f"{mean or 0:.0f} (mean of {t['llm_calls']:.0f} calls)",
        f"{c.llm_latency_ms_max:g}",
    )
    check(
        "daily_cost_usd",
        day_cost,
        c.daily_cost_budget_usd,
        True,
        f"{day_cost:.2f}",
        f"{c.daily_cost_budget_usd:g}",
    )
    return out


class RollbackGuard:
    """See the module docstring. One per process (``Runtime.rollback_guard``); state lives in the store.

    ``evaluate_every_seconds`` bounds how often the window is read (counting is always
    done); ``monotonic`` is that throttle's clock.
    """

    def __init__(
        self,
        config: RollbackGuardConfig | None = None,
        *,
        evaluate_every_seconds: float = 10.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.evaluate_every = evaluate_every_seconds
        self.monotonic = monotonic
        self._last_eval: float | None = None

    def config_for(self, rt: Runtime) -> RollbackGuardConfig:
        if self.config is not None:
            return self.config
        doc, _, _ = rt.flags.current()
        return doc.rollback_guard if doc is not None else RollbackGuardConfig()

    def observe(self, rt: Runtime, record: dict[str, Any]) -> list[dict[str, Any]]:
        """Count one LLM-arm record; trip when a threshold is crossed. Returns the alerts raised."""
        config = self.config_for(rt)
        shadow = bool(record.get("shadow")) or record.get("kind") == "shadow_candidate"
        served = not shadow and record.get("flags_arm") == "llm"
        candidate = record.get("arm") == "llm" and (shadow or record.get("flags_arm") != "llm")
        if not config.enabled or not (served or candidate):
            return []
        # Counted at observation time (the observer runs seconds after the turn), so the
        # window never depends on the clocks of the instances that served the turns.
        now = rt.clock()
        self._count(rt.store, record, served=served, now=now, config=config)
        tick = self.monotonic()
        if self._last_eval is not None and tick - self._last_eval < self.evaluate_every:
            return []
        self._last_eval = tick
        return self.evaluate(rt, config, now)

    def evaluate(self, rt: Runtime, config: RollbackGuardConfig, now: datetime) -> list[dict[str, Any]]:
        status = window_status(rt.store, config, now, last_trip(rt.store))
        if not status["tripped"]:
            return []
        reason = "rollback guard: " + "; ".join(status["tripped"]) + f" (window {config.window_minutes} min)"
        written = write_override(
            rt.store,
            brain_mode="legacy",
            ttl=timedelta(minutes=config.override_ttl_minutes),
            author=AUTHOR,
            reason=reason,
            now=now,
            unless_stricter_active=True,
        )
        if written is None:
            return []
        # The window restarts at the trip: after the override the LLM arm is judged on new traffic.
        rt.store.set(
            STATE, {"last_trip_at": now, "reason": reason, "override_expires_at": written.expires_at}
        )
        rt.flags.invalidate()
        alert = rt.emit_alert(
            None,
            ALERT_CODE,
            f"{reason}; brain_mode overridden to legacy until {written.expires_at.isoformat()}",
        )
        return [alert]

    def _count(
        self,
        store: Store,
        record: dict[str, Any],
        *,
        served: bool,
        now: datetime,
        config: RollbackGuardConfig,
    ) -> None:
        turn_id = str(record.get("turn_id") or record.get("record_id"))
        counts = record_counts(record)
        event = {
            "at": now,
            "served": served,
            "expires_at": now + KEEP,
            **(counts if served else {"cost_usd": counts["cost_usd"]}),
        }
        if not store.create(f"{EVENTS}/{turn_id}-{'s' if served else 'c'}", event):
            return  # a redelivery: already counted
        if counts["cost_usd"] <= 0:
            return
        day = cost_day(now, config)
        shard = int(hashlib.sha256(turn_id.encode()).hexdigest(), 16) % SHARDS
        path = f"{DAYS}/{day}-{shard}"

        def _add(txn: Transaction) -> None:
            doc = txn.get(path) or {"day": day, "cost_usd": 0.0, "expires_at": now + KEEP}
            txn.set(path, {**doc, "cost_usd": float(doc.get("cost_usd") or 0) + counts["cost_usd"]})

        store.run_transaction(_add)


def last_trip(store: Store) -> datetime | None:
    value = (store.get(STATE) or {}).get("last_trip_at")
    return value if isinstance(value, datetime) else None


def guard_status(rt: Runtime, now: datetime | None = None) -> dict[str, Any]:
    """What ``charter guard status`` prints: the window as the guard sees it, and the last trip."""
    config = rt.rollback_guard.config_for(rt)
    state = rt.store.get(STATE) or {}
    status = window_status(rt.store, config, now or rt.clock(), last_trip(rt.store))
    status["last_trip"] = {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in state.items()}
    status["config"] = config.model_dump()
    return status
