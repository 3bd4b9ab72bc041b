"""The agent state feature: a conversation's step machine (``shared_lib.features.agent_state``)."""

from __future__ import annotations

from shared_lib.features.agent_state.steps_stage import STEPS
from shared_lib.features.manifest import Manifest

MANIFEST = Manifest(
    name="agent_state",
    summary="a conversation's goal and step, changed only by the transition table (seed 004 §6)",
    steps=STEPS,
    collections=("agent_states",),
)
