"""The delegated jobs feature: sub-agents' jobs as turns of their own (``shared_lib.features.jobs``)."""

from __future__ import annotations

from shared_lib.features.manifest import Manifest

MANIFEST = Manifest(
    name="jobs",
    summary="delegated jobs: a bounded task run by a sub-agent, its watchdog and report (seed 001 §15)",
    collections=("agent_jobs",),
    cli="shared_lib.features.jobs.cli",
    admin="shared_lib.features.jobs.admin",
)
