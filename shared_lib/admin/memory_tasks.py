"""The scheduler's memory task: one background job message per organisation.

``POST /tasks/memory/<job>`` (a name of ``layers.memory.jobs(rt)``) publishes ``{"job", "org_id",
"job_id"}`` to ``memory.jobs`` for every organisation with a conversation active within the
job's ``active_hours`` (``config/memory.json``; default a day). The job id names the job, the
organisation and the minute of the tick, so a scheduler retry of the same tick runs nothing twice.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from shared_lib.layers.memory import job_message, memory_config

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime

ORGS_SCANNED = 5000  # recently active conversations read to find the organisations


def active_orgs(rt: Runtime, since_hours: float) -> list[str]:
    """The organisations with a conversation active in the last ``since_hours`` hours."""
    since = rt.clock() - timedelta(hours=since_hours)
    docs = rt.store.query("conversations", where=[("at", ">=", since)], group=True, limit=ORGS_SCANNED)
    return sorted({str(d["org_id"]) for _, d in docs if d.get("org_id")})


def publish_jobs(rt: Runtime, job: str) -> dict[str, Any]:
    params = memory_config(rt).job(job)
    tick = rt.clock().strftime("%Y%m%dT%H%M")
    orgs = active_orgs(rt, float(params.get("active_hours", 24)))
    for org in orgs:
        data, attributes = job_message(job, org, f"{job}-{org}-{tick}")
        rt.bus.publish("memory", data, attributes, "")
    return {"job": job, "orgs": orgs, "published": len(orgs)}
