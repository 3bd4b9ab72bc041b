"""Emergency controls (seed 001 §20.5), as audited flag overrides.

==========  ==========================================================================
``stop``    kill switch: every turn gets the persona's fixed maintenance reply; no LLM
            call, no tool execution (``config/flags_override`` ``kill_switch: true``)
``pause``   intake is paused: every webhook is still acknowledged, its turn is held, not
            served (``shared_lib.delivery.intake``); nothing a person sends is lost
``resume``  the stop's override is removed (the Terraform-managed flags apply again) and the
            held turns are answered in the order they came, each once
==========  ==========================================================================

A stop's override expires (``ttl``) so a forgotten stop does not last forever; a pause holds
until someone resumes (an expiry would have to drop or serve what it holds). Each change is
audited in ``config_audit`` and raises an alert so every operator learns of it. Processes
pick a stop up within their flags cache TTL (``CHARTER_FLAGS_TTL``; this process invalidates
its own cache at once), a pause at the next message. Rolling the brain back to the legacy
arm is the rollback guard's lever and the flags' ``brain_mode``, no longer the Pause button.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from shared_lib.delivery import intake
from shared_lib.delivery.topology import TOPOLOGY
from shared_lib.errors import ConfigError
from shared_lib.flags import AUDIT_COLLECTION, FLAGS_DOC
from shared_lib.ids import new_ulid
from shared_lib.rollout.overrides import audit_entries, clear_override, read_override, write_override
from shared_lib.telemetry import alerts

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime

Action = Literal["stop", "pause", "resume"]
ACTIONS: tuple[Action, ...] = ("stop", "pause", "resume")
DEFAULT_TTL = {"stop": timedelta(hours=24)}


def apply(
    rt: Runtime, action: str, *, author: str, reason: str, ttl: timedelta | None = None
) -> dict[str, Any]:
    """Carry out one control and return the resulting state."""
    if action not in ACTIONS:
        raise ConfigError(f"unknown control {action!r} (stop, pause, resume)")
    author, reason = author.strip(), reason.strip()
    if not author or not reason:
        raise ConfigError("an emergency control needs an author and a reason")
    now = rt.clock()
    released = None
    if action == "resume":
        cleared = clear_override(rt.store, author, reason, now=now)
        resumed = intake.resume(rt.store, author=author, reason=reason, now=now)
        if resumed:
            _audit_intake(rt, "intake_resumed", author, reason, now)
        released = release_held(rt)
        changed = bool(cleared or resumed)
    elif action == "pause":
        changed = intake.pause(rt.store, author=author, reason=reason, now=now)
        if changed:
            _audit_intake(rt, "intake_paused", author, reason, now)
    else:
        written = write_override(
            rt.store, kill_switch=True, ttl=ttl or DEFAULT_TTL[action], author=author, reason=reason, now=now
        )
        changed = written is not None
    rt.flags.invalidate()
    if changed:
        alerts.raise_alert(
            rt,
            f"emergency.{action}",
            f"{action} by {author}: {reason}",
            alert_id=f"control-{new_ulid()}",
            severity="critical" if action == "stop" else "warning",
            details={"author": author, "reason": reason},
        )
    out = {"action": action, "changed": changed, **state(rt)}
    if released is not None:
        out["released"] = released.published
    return out


def release_held(rt: Runtime) -> intake.Released:
    """Publish the held turns of a resumed intake, in order (again after a release that died)."""
    publish = intake.bus_publisher(
        rt.bus, TOPOLOGY.route("received", smoke=False), rt.store, blob_ttl_days=rt.settings.blob_ttl_days
    )
    return intake.release(rt.store, publish, vault=rt.vault, now=rt.clock())


def _audit_intake(rt: Runtime, action: str, author: str, reason: str, now: datetime) -> None:
    rt.store.create(
        f"{AUDIT_COLLECTION}/{new_ulid()}",
        {"action": action, "author": author, "reason": reason, "at": now, "after": intake.read(rt.store)},
    )


def state(rt: Runtime) -> dict[str, Any]:
    """Flags, the override (and whether it is active) and the latest audit entries."""
    now = rt.clock()
    try:
        override = read_override(rt.store)
        override_error = ""
    except ValueError as exc:
        override, override_error = None, str(exc)[:300]
    doc, _, error = rt.flags.current()
    active = override is not None and override.active(now)
    held = intake.read(rt.store)
    effective = "running"
    if (active and override is not None and override.kill_switch) or (doc is not None and doc.kill_switch):
        effective = "stopped"
    elif held["state"] == "paused":
        effective = "paused"
    elif held["state"] == "draining":
        effective = "resuming"
    return {
        "effective": effective,
        "flags": doc.model_dump(mode="json") if doc is not None else None,
        "flags_error": error or override_error,
        "flags_source": FLAGS_DOC,
        "override": override.model_dump(mode="json") if override is not None else None,
        "override_active": active,
        "intake": _jsonable(held),
        "audit": [_jsonable(e) for e in audit_entries(rt.store, limit=10)],
    }


def _jsonable(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in entry.items()}
