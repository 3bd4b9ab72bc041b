"""The debounce feature: a burst of messages becomes one turn (``shared_lib.features.debounce``)."""

from __future__ import annotations

from shared_lib.features.debounce import steps_ingress
from shared_lib.features.debounce.steps import STEPS
from shared_lib.features.manifest import Manifest
from shared_lib.runtime import Hooks

MANIFEST = Manifest(
    name="debounce",
    summary="a burst of one person's messages in a room answered as one turn (seed 001 §7.3)",
    steps=STEPS,
    collections=("debounce_entries", "debounce_pace"),
    hooks=Hooks(inbound_buffer=steps_ingress.BUFFER),
)
