"""Emergency controls (seed 001 §20.5), as audited flag overrides.

==========  ==========================================================================
``stop``    kill switch: every turn gets the persona's fixed maintenance reply; no LLM
            call, no tool execution (``config/flags_override`` ``kill_switch: true``)
``pause``   the LLM brain is paused: everyone is served by the legacy brain
            (``brain_mode: legacy``), the rollback lever
``resume``  the override is removed; the Terraform-managed flags apply again
==========  ==========================================================================

Overrides expire (``ttl``) so a forgotten stop does not last forever; each change is
appended to ``config_audit`` by ``shared_lib.rollout.overrides`` and raises an alert so
every operator learns of it. Processes pick the change up within their flags cache TTL
(``CHARTER_FLAGS_TTL``); this process invalidates its own cache at once.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal

from shared_lib.errors import ConfigError
from shared_lib.flags import FLAGS_DOC
from shared_lib.ids import new_ulid
from shared_lib.rollout.overrides import audit_entries, clear_override, read_override, write_override
from shared_lib.telemetry import alerts

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime

Action = Literal["stop", "pause", "resume"]
ACTIONS: tuple[Action, ...] = ("stop", "pause", "resume")
DEFAULT_TTL = {"stop": timedelta(hours=24), "pause": timedelta(hours=24)}


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
    if action == "resume":
        changed = clear_override(rt.store, author, reason, now=now)
    else:
        lifetime = ttl or DEFAULT_TTL[action]
        written = write_override(
            rt.store,
            kill_switch=True if action == "stop" else None,
            brain_mode="legacy" if action == "pause" else None,
            ttl=lifetime,
            author=author,
            reason=reason,
            now=now,
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
    return {"action": action, "changed": changed, **state(rt)}


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
    effective = "running"
    if (active and override is not None and override.kill_switch) or (doc is not None and doc.kill_switch):
        effective = "stopped"
    elif active and override is not None and override.brain_mode == "legacy":
        effective = "paused"
    return {
        "effective": effective,
        "flags": doc.model_dump(mode="json") if doc is not None else None,
        "flags_error": error or override_error,
        "flags_source": FLAGS_DOC,
        "override": override.model_dump(mode="json") if override is not None else None,
        "override_active": active,
        "audit": [_jsonable(e) for e in audit_entries(rt.store, limit=10)],
    }


def _jsonable(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in entry.items()}
