"""The rollback guard: rolls the LLM arm back to legacy, per organisation, when it misbehaves.

The observer calls ``rt.rollback_guard.observe(rt, record, comparison)`` with every
observability record (the stored dict) and, when the turn has one, its shadow comparison.
The guard keeps the LLM arm's: served turns of the LLM arm (``flags_arm == "llm"``), shadow
candidates of the LLM arm (``shadow`` and ``arm == "llm"``; they count toward the daily
cost), and comparisons whose candidate is the LLM arm (agreement with the served arm).

It counts what the candidate brain causes (``shared_lib.rollout.causes``): LLM failures
(the call, or no valid proposal after the retry), constitution violations, guardian blocks
whose reason the brain owns, execution errors (system and external; the user's bad input
is not one), LLM latency (p95 per call), cost, shadow disagreement. Blocks of forbidden
requests and authorization denials are the user's: counted apart, never tripping.

State lives in the store, so every observer instance sees the same window:

* one small document per record, ``rollout_guard/state/events/{turn_id}-s|c|d``, written
  with ``create`` and carrying its organisation — a redelivery finds it and counts
  nothing, and no two records ever write the same document, so busy observers never
  contend;
* the day's LLM cost in sharded counters ``rollout_guard/state/days/{day}-{shard}``;
* ``rollout_guard/state``: the last global trip and each organisation's last trip;
* one document per trip, ``rollout_guard/state/trips/{id}``: the window, the counts per
  signal of the organisations involved, the thresholds, the decision and why.

Evaluation (at most every ``evaluate_every_seconds`` per instance) reads the window's
events with one single-field range query and the day's shards, and judges each
organisation on its own (``shared_lib.rollout.guard_window``; thresholds from the flags
document's ``rollback_guard``, seed 000 §15.1, §14.3). An organisation that trips is rolled
back alone (``orgs[org]`` of the override: ``brain_mode`` legacy, author
``rollback-guard``, the reason with its figures, an expiry); enough organisations tripping
within the window, the pooled small organisations tripping, or the day's cost over budget
roll everyone back (the global override). Nothing is written when a stricter override is
already active. Each trip raises one alert that says what was decided and why, and
restarts the window of whom it rolled back, so when the override expires the LLM arm is
judged on new traffic only.

An operator's choice stands: while an override an operator wrote (``charter flags
override``, the dashboard's controls: any author but the guard) sets the arm of every
organisation, the guard writes nothing over it; it raises ``rollback_guard_held`` with the
figures instead (at most once a window), and the operator decides. Waiting is never the
brain's (``causes.error_cause``): a backlog is an alert of its own (``turn_backlog``, the
observer), never a rollback.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from shared_lib.flags import RollbackGuardConfig
from shared_lib.ids import new_ulid
from shared_lib.ports import Store, Transaction, read_together
from shared_lib.rollout.causes import record_signals
from shared_lib.rollout.guard_window import (
    DAYS,
    EVENTS,
    STATE,
    TRIPS,
    cost_day,
    window_status,
)
from shared_lib.rollout.overrides import (
    operator_override,
    read_override,
    write_org_override,
    write_override,
)

if TYPE_CHECKING:
    from shared_lib.flags import FlagsProvider
    from shared_lib.turn.envelope import Turn

__all__ = [
    "ALERT_CODE",
    "AUTHOR",
    "HELD_CODE",
    "STATE",
    "TRIPS",
    "RollbackGuard",
    "guard_status",
    "last_trip",
]


class Runtime(Protocol):
    """What the guard uses of the runtime (``shared_lib.runtime.Runtime`` has it)."""

    store: Store
    flags: FlagsProvider

    @property
    def clock(self) -> Callable[[], datetime]: ...

    rollback_guard: RollbackGuard

    def emit_alert(self, turn: Turn | None, code: str, message: str) -> dict[str, Any]: ...


AUTHOR = "rollback-guard"
ALERT_CODE = "rollback_guard_tripped"
HELD_CODE = "rollback_guard_held"  # it would have rolled back, but an operator's override stands
SHARDS = 16
KEEP = timedelta(days=2)


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

    def observe(
        self, rt: Runtime, record: dict[str, Any], comparison: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """Count one record (and its comparison); trip when a threshold is crossed. Returns the alerts."""
        config = self.config_for(rt)
        shadow = bool(record.get("shadow")) or record.get("kind") == "shadow_candidate"
        served = not shadow and record.get("flags_arm") == "llm"
        candidate = record.get("arm") == "llm" and (shadow or record.get("flags_arm") != "llm")
        compared = (
            comparison is not None
            and comparison.get("candidate_arm") == "llm"
            and comparison.get("all_agree") is not None
        )
        if not config.enabled or not (served or candidate or compared):
            return []
        # Counted at observation time (the observer runs seconds after the turn), so the
        # window never depends on the clocks of the instances that served the turns.
        now = rt.clock()
        org = str(record.get("org_id") or record.get("organization_id") or "")
        if served or candidate:
            self._count(rt.store, record, org, served=served, now=now, config=config)
        if compared and comparison is not None:
            self._count_comparison(rt.store, comparison, org, now)
        tick = self.monotonic()
        if self._last_eval is not None and tick - self._last_eval < self.evaluate_every:
            return []
        self._last_eval = tick
        return self.evaluate(rt, config, now)

    def evaluate(self, rt: Runtime, config: RollbackGuardConfig, now: datetime) -> list[dict[str, Any]]:
        status = window_status(rt.store, config, now, rt.store.get(STATE))
        decision = status["decision"]
        if decision["action"] == "none":
            return []
        if (held := self._held(rt, status, config, now)) is not None:
            return held
        trip_id = new_ulid()
        ttl = timedelta(minutes=config.override_ttl_minutes)
        window = f"window {config.window_minutes} min"
        if decision["action"] == "global":
            reason = (
                f"rollback guard (global, trip {trip_id}): {'; '.join(decision['reasons'])} "
                f"({window}; {decision['why']})"
            )
            written = write_override(
                rt.store,
                brain_mode="legacy",
                ttl=ttl,
                author=AUTHOR,
                reason=reason,
                now=now,
                unless_stricter_active=True,
                unless_operator=True,
            )
            if written is None:
                return []
            rolled_back, expires_at = ["*"], written.expires_at
        else:
            rolled_back, expires = [], []
            for org in decision["orgs"]:
                reason = (
                    f"rollback guard ({org}, trip {trip_id}): {'; '.join(status['orgs'][org]['tripped'])} "
                    f"({window}; {decision['why']})"
                )
                done = write_org_override(
                    rt.store,
                    org,
                    ttl=ttl,
                    author=AUTHOR,
                    reason=reason,
                    now=now,
                    unless_stricter_active=True,
                    unless_operator=True,
                )
                if done is not None:
                    rolled_back.append(org)
                    expires.append(done.orgs[org].expires_at)
            if not rolled_back:
                return []
            expires_at = max(expires)
        trip = _trip_document(trip_id, status, config, now, rolled_back, expires_at)
        rt.store.set(f"{TRIPS}/{trip_id}", trip)
        rt.store.run_transaction(lambda txn: _remember(txn, trip))
        rt.flags.invalidate()
        return [rt.emit_alert(None, ALERT_CODE, trip["message"])]

    def _held(
        self, rt: Runtime, status: dict[str, Any], config: RollbackGuardConfig, now: datetime
    ) -> list[dict[str, Any]] | None:
        """``None`` unless an operator's override chose every organisation's arm: then nothing is
        written, and the operator hears what the guard would have done (once a window)."""
        try:
            override = operator_override(read_override(rt.store), now, AUTHOR)
        except ValueError:  # an invalid override is replaced by the trip, as before
            override = None
        if override is None:
            return None
        if override.kill_switch or override.brain_mode == "legacy":
            return []  # already as strict as any rollback
        state = rt.store.get(STATE) or {}
        last = state.get("held_at")
        if isinstance(last, datetime) and now - last < timedelta(minutes=config.window_minutes):
            return []
        decision = status["decision"]
        whom = "every organisation" if decision["action"] == "global" else ", ".join(decision["orgs"])
        message = (
            f"rollback guard held: it would roll back {whom} to legacy ({decision['why']}): "
            f"{'; '.join(decision['reasons'])}; the override by {override.author} "
            f"(brain_mode {override.brain_mode}, until {override.expires_at.isoformat()}: {override.reason}) "
            "stands, nothing was written: decide with charter guard explain and charter flags override"
        )
        rt.store.set(STATE, {**state, "held_at": now, "held": message})
        return [rt.emit_alert(None, HELD_CODE, message)]

    def _count(
        self,
        store: Store,
        record: dict[str, Any],
        org: str,
        *,
        served: bool,
        now: datetime,
        config: RollbackGuardConfig,
    ) -> None:
        turn_id = str(record.get("turn_id") or record.get("record_id"))
        counts = record_signals(record)
        event = {
            "at": now,
            "org": org,
            "served": served,
            "kind": "served" if served else "candidate",
            "expires_at": now + KEEP,
            **(counts if served else {"cost_usd": counts["cost_usd"]}),
        }
        event_path = f"{EVENTS}/{turn_id}-{'s' if served else 'c'}"
        if counts["cost_usd"] <= 0:
            store.create(event_path, event)  # nothing to add to the day: the event alone (once)
            return
        day = cost_day(now, config)
        shard = int(hashlib.sha256(turn_id.encode()).hexdigest(), 16) % SHARDS
        path = f"{DAYS}/{day}-{shard}"

        def _add(txn: Transaction) -> None:
            # the event and the day's cost in one commit (both documents read in one batch): a
            # redelivery finds the event and adds nothing, and neither is ever written alone
            found = read_together(txn, [event_path, path])
            if found[event_path] is not None:
                return  # a redelivery: already counted
            doc = found[path] or {"day": day, "cost_usd": 0.0, "expires_at": now + KEEP}
            txn.create(event_path, event)
            txn.set(path, {**doc, "cost_usd": float(doc.get("cost_usd") or 0) + counts["cost_usd"]})

        store.run_transaction(_add)

    def _count_comparison(self, store: Store, comparison: dict[str, Any], org: str, now: datetime) -> None:
        turn_id = str(comparison.get("turn_id"))
        event = {
            "at": now,
            "org": str(comparison.get("org_id") or org),
            "served": False,
            "kind": "comparison",
            "comparisons": 1,
            # a different decision (intent or tool), not different wording of the same one
            "disagreements": 1 if {"intent", "tool"} & set(comparison.get("mismatches") or []) else 0,
            "mismatches": list(comparison.get("mismatches") or []),
            "expires_at": now + KEEP,
        }
        store.create(f"{EVENTS}/{turn_id}-d", event)  # whichever side passes it first counts it


def _trip_document(
    trip_id: str,
    status: dict[str, Any],
    config: RollbackGuardConfig,
    now: datetime,
    rolled_back: list[str],
    expires_at: datetime,
) -> dict[str, Any]:
    decision = status["decision"]
    whom = "every organisation" if decision["action"] == "global" else ", ".join(rolled_back)
    counts = {
        org: {"window_start": group["window_start"], "totals": group["totals"], "tripped": group["tripped"]}
        for org, group in status["orgs"].items()
        if org in decision["orgs"]
    }
    message = (
        f"rollback guard trip {trip_id}: brain_mode legacy for {whom} until {expires_at.isoformat()} "
        f"({decision['action']}: {decision['why']}; window {config.window_minutes} min from "
        f"{status['window_start']}): {'; '.join(decision['reasons'])}"
    )
    return {
        "trip_id": trip_id,
        "at": now,
        "decision": decision["action"],
        "why": decision["why"],
        "reasons": decision["reasons"],
        "orgs": decision["orgs"],
        "rolled_back": rolled_back,
        "window_start": status["window_start"],
        "window_minutes": config.window_minutes,
        "counts": counts,
        "pool": {k: status["pool"][k] for k in ("orgs", "totals", "tripped")},
        "day": status["day"],
        "day_cost_usd": status["day_cost_usd"],
        "thresholds": config.model_dump(),
        "override_expires_at": expires_at,
        "message": message,
    }


def _remember(txn: Transaction, trip: dict[str, Any]) -> None:
    """Restart the window of whom the trip rolled back (the state document, read-modify-write)."""
    state = txn.get(STATE) or {}
    mark = {
        "last_trip_at": trip["at"],
        "trip_id": trip["trip_id"],
        "reason": trip["message"],
        "override_expires_at": trip["override_expires_at"],
    }
    state = {**state, "last_trip_id": trip["trip_id"]}
    if trip["decision"] == "global":
        state.update(mark)
    else:
        state["orgs"] = {**(state.get("orgs") or {}), **{org: mark for org in trip["rolled_back"]}}
    txn.set(STATE, state)


def last_trip(store: Store) -> datetime | None:
    """When the guard last rolled everyone back."""
    value = (store.get(STATE) or {}).get("last_trip_at")
    return value if isinstance(value, datetime) else None


def guard_status(rt: Runtime, now: datetime | None = None) -> dict[str, Any]:
    """What ``charter guard status`` and ``explain`` print: the window per organisation, the
    decision the guard would take now, and the last trip with its reasons."""
    config = rt.rollback_guard.config_for(rt)
    state = rt.store.get(STATE) or {}
    status = window_status(rt.store, config, now or rt.clock(), state)
    status["tripped"] = status["decision"]["reasons"]
    trip_id = state.get("last_trip_id")
    trip = rt.store.get(f"{TRIPS}/{trip_id}") if trip_id else None
    if trip is None:  # a state written before trips had documents
        trip = {k: state[k] for k in ("last_trip_at", "reason", "override_expires_at") if k in state}
    status["last_trip"] = _jsonable(trip)
    status["config"] = config.model_dump()
    return status


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value
