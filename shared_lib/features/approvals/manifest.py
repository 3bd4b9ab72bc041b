"""The approvals feature: confirmations and approval jobs (``shared_lib.features.approvals``)."""

from __future__ import annotations

from shared_lib.features.approvals.steps_stage import STEPS
from shared_lib.features.manifest import Manifest

MANIFEST = Manifest(
    name="approvals",
    summary="confirmations asked, answered and expired; approval jobs (seed 000 §5.1.5, 002 §6)",
    steps=STEPS,
    collections=("approval_jobs",),
    cli="shared_lib.features.approvals.cli",
)
