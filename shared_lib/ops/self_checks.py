"""The heartbeat's self-checks (seed 001 §17.3 セルフチェック項目), run by every tick (``due_tasks``).

* **Peer health** (ヘルス) — each configured LLM peer (``CHARTER_PEERS``) as the product already
  knows it: the ``peer_health`` records the services' probes and failed calls write
  (``peers.health``; one query, no call to any model). A peer that turns unhealthy raises one
  alert naming it and why; its recovery is recorded and reported once.
* **Configuration** (設定) — the flags document (its version and the keys whose values changed,
  by a hash of each value), the policy's version (the digest of everything decisions depend on,
  ``policy.effective``) and the persona's: the tick remembers what it last saw
  (``ops_state/self-check-config``); a change raises one alert naming the document, the old and
  new versions and, for the flags, the changed keys. The first sighting is recorded, not alerted.
* **Memory index** (メモリ) — ``self_check_memory``: a page of one organisation's index per tick.
* **Daily log curation** (メモリ整理) — ``self_check_curation``: yesterday's digest, once a day.

Each check is recorded in the tick's result (its log line and claim) and in its ``ops_state``
document; one that fails never stops the others or the tick.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from shared_lib.observability.logs import log_event
from shared_lib.ops import self_check_curation, self_check_memory
from shared_lib.peers.config import load_peers
from shared_lib.peers.health import HealthBoard
from shared_lib.policy.effective import Policy
from shared_lib.telemetry import alerts

if TYPE_CHECKING:
    from datetime import datetime

    from shared_lib.runtime import Runtime

PEERS_STATE = "ops_state/self-check-peers"
CONFIG_STATE = "ops_state/self-check-config"


def run(rt: Runtime, now: datetime, *, quiet: bool) -> dict[str, Any]:
    """Every self-check of this tick; the daily curation only outside the quiet hours (it asks the
    memory target for an LLM call made on the company's behalf)."""
    checks: dict[str, Callable[[], Any]] = {
        "peers": lambda: peer_health(rt, now),
        "config": lambda: config_changes(rt, now),
        "memory": lambda: self_check_memory.run(rt, now),
    }
    if not quiet:
        checks["curation"] = lambda: self_check_curation.run(rt, now)
    out: dict[str, Any] = {}
    for name, check in checks.items():
        try:
            out[name] = check()
        except Exception as exc:  # one check's failure is recorded, never the others' or the tick's
            log_event(
                "heartbeat_self_check_failed",
                layer="admin",
                severity="ERROR",
                check=name,
                error=f"{type(exc).__name__}: {exc}",
            )
            out[name] = {"error": type(exc).__name__}
    return out


def _stamp(now: datetime) -> str:
    return now.strftime("%Y%m%dT%H%M%S")


def peer_health(rt: Runtime, now: datetime) -> dict[str, Any]:
    """Each configured peer's health from its last record; an alert when it turns unhealthy, a
    notice when it recovers (``{"peer": "healthy"|"unhealthy"|"unknown", ...}``)."""
    config = load_peers(rt.settings.peers)
    records = HealthBoard(rt.store, clock=rt.clock, cache_seconds=0).records()
    before = dict((rt.store.get(PEERS_STATE) or {}).get("peers") or {})
    after: dict[str, Any] = {}
    shown: dict[str, str] = {}
    for spec in config.peers:
        record = records.get(spec.name)
        healthy = record is None or record.healthy  # no record: never failed nor probed
        was = before.get(spec.name) or {"healthy": True}
        state = dict(was)
        if not healthy and was.get("healthy", True):
            reason = record.reason if record is not None else ""
            state = {"healthy": False, "since": now, "reason": reason}
            alerts.raise_alert(
                rt,
                "heartbeat.peer_unhealthy",
                f"LLM peer {spec.name} is unhealthy since {record.checked_at.isoformat() if record else now}"
                + (f": {reason}" if reason else ""),
                alert_id=f"peer-unhealthy-{spec.name}-{_stamp(now)}",
                severity="warning",
                details={"peer": spec.name, "reason": reason},
                dedupe=f"heartbeat.peer_unhealthy|{spec.name}|{_stamp(now)}",
            )
        elif healthy and not was.get("healthy", True):
            state = {"healthy": True, "recovered_at": now, "down_since": was.get("since")}
            alerts.raise_alert(
                rt,
                "heartbeat.peer_recovered",
                f"LLM peer {spec.name} recovered (unhealthy since {was.get('since')})",
                alert_id=f"peer-recovered-{spec.name}-{_stamp(now)}",
                severity="info",
                details={"peer": spec.name},
                dedupe=f"heartbeat.peer_recovered|{spec.name}|{_stamp(now)}",
            )
            log_event("llm_peer_recovered", layer="admin", peer=spec.name)
        after[spec.name] = state
        shown[spec.name] = "unknown" if record is None else ("healthy" if healthy else "unhealthy")
    if after != before:
        rt.store.set(PEERS_STATE, {"peers": after, "at": now})
    return shown


def _digest(value: Any) -> str:
    return hashlib.sha256(
        json.dumps(value, sort_keys=True, ensure_ascii=False, default=str).encode()
    ).hexdigest()[:12]


def seen_config(rt: Runtime) -> dict[str, dict[str, Any]]:
    """What the deployment runs now: each document's version, and the flags' value hashes by key."""
    seen: dict[str, dict[str, Any]] = {}
    doc, _, _ = rt.flags.current()
    if doc is not None:  # an unreadable flags document alerts by itself (flags.provider)
        values = doc.model_dump(mode="json")
        seen["flags"] = {"version": doc.version, "keys": {k: _digest(v) for k, v in values.items()}}
    seen["policy"] = {"version": Policy.build(rt.policy, rt.registry).version}
    seen["persona"] = {"version": f"{rt.persona.name}-{_digest(rt.persona.model_dump(mode='json'))}"}
    return seen


def config_changes(rt: Runtime, now: datetime) -> dict[str, Any]:
    """Compare the configuration with what the last tick saw; one alert per change, naming it."""
    seen = seen_config(rt)
    last = dict((rt.store.get(CONFIG_STATE) or {}).get("seen") or {})
    changes = []
    for name, current in seen.items():
        before = last.get(name)
        if before is None or before == current:
            continue
        keys = sorted(
            k
            for k in set(before.get("keys") or {}) | set(current.get("keys") or {})
            if (before.get("keys") or {}).get(k) != (current.get("keys") or {}).get(k)
        )
        old, new = str(before.get("version")), str(current.get("version"))
        what = f"{name} changed: version {old} → {new}" + (f"; keys: {', '.join(keys)}" if keys else "")
        change_id = _digest([name, before, current])
        alerts.raise_alert(
            rt,
            "heartbeat.config_changed",
            what,
            alert_id=f"config-changed-{name}-{change_id}",
            severity="warning",
            details={"document": name, "old_version": old, "new_version": new, "keys": keys},
            dedupe=f"heartbeat.config_changed|{name}|{change_id}",
        )
        changes.append({"document": name, "old": old, "new": new, "keys": keys})
    if seen != last:
        rt.store.set(CONFIG_STATE, {"seen": seen, "at": now})
    return {"versions": {k: v.get("version") for k, v in seen.items()}, "changes": changes}
