"""The heartbeat tasks feature: periodic tasks people give the heartbeat (``shared_lib.features.heartbeat_tasks``)."""

from __future__ import annotations

from types import MappingProxyType

from shared_lib.features.heartbeat_tasks import handlers, steps_tick
from shared_lib.features.manifest import Manifest
from shared_lib.runtime import Hooks
from shared_lib.tools.catalog import Binding

MANIFEST = Manifest(
    name="heartbeat_tasks",
    summary="periodic tasks given in conversation or by an operator, run by the heartbeat as their creator's turn (seed 001 §17)",
    collections=("heartbeat_tasks", "heartbeat_runs"),
    tools=MappingProxyType(
        {
            handlers.TOOL: Binding(
                handlers.ScheduleHeartbeatTaskParams, handlers.schedule_heartbeat_task, handlers.precheck
            )
        }
    ),
    hooks=Hooks(heartbeat_tasks=steps_tick.run_due),
    cli="shared_lib.features.heartbeat_tasks.cli",
)
