"""The delegated jobs feature: sub-agents' jobs as turns of their own (``shared_lib.features.jobs``)."""

from __future__ import annotations

from types import MappingProxyType

from shared_lib.features.jobs import handlers
from shared_lib.features.jobs.steps_stage import STEPS
from shared_lib.features.manifest import Manifest
from shared_lib.tools.catalog import Binding

MANIFEST = Manifest(
    name="jobs",
    summary="delegated jobs: a bounded task run by a sub-agent, its watchdog and report (seed 001 §15)",
    steps=STEPS,
    collections=("agent_jobs",),
    tools=MappingProxyType({"delegate_task": Binding(handlers.DelegateTaskParams, handlers.delegate_task)}),
    cli="shared_lib.features.jobs.cli",
    admin="shared_lib.features.jobs.admin",
)
