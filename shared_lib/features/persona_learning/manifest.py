"""The persona learning feature: an organisation's extension of the persona
(``shared_lib.features.persona_learning``)."""

from __future__ import annotations

from shared_lib.features.manifest import Manifest
from shared_lib.features.persona_learning.steps_stage import STEPS
from shared_lib.features.persona_learning.store import load_ext
from shared_lib.runtime import Hooks

MANIFEST = Manifest(
    name="persona_learning",
    summary="what an organisation teaches the persona, beside its hash-pinned core (seed 001 §16)",
    steps=STEPS,
    collections=("persona_ext",),
    hooks=Hooks(persona_ext=load_ext),
    cli="shared_lib.features.persona_learning.cli",
)
