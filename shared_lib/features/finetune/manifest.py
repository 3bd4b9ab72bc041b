"""The fine-tuning feature: staging, review and export (``shared_lib.features.finetune``)."""

from __future__ import annotations

from shared_lib.features.finetune.steps_stage import STEPS
from shared_lib.features.manifest import Manifest

MANIFEST = Manifest(
    name="finetune",
    summary="good and corrected turns staged, reviewed by a named person and exported (seed 001 §29)",
    steps=STEPS,
    collections=("ft_candidates", "ft_exports", "ft_ledgers"),
    cli="shared_lib.features.finetune.cli",
    admin="shared_lib.features.finetune.admin",
)
