"""The auto-approve feature: grants and the instant OFF (``shared_lib.features.auto_approve``)."""

from __future__ import annotations

from shared_lib.features.auto_approve.steps_stage import STEPS
from shared_lib.features.manifest import Manifest

MANIFEST = Manifest(
    name="auto_approve",
    summary="grants that allow what a confirmation would ask, and the instant OFF (seed 002 §6.4)",
    steps=STEPS,
    collections=("auto_approve_grants",),
    admin="shared_lib.features.auto_approve.admin",
)
