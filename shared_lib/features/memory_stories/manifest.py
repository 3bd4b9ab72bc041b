"""The memory stories feature: episodes and tags (``shared_lib.features.memory_stories``)."""

from __future__ import annotations

from types import MappingProxyType

from shared_lib.features.manifest import Manifest
from shared_lib.features.memory_stories import steps
from shared_lib.features.memory_stories.steps_stage import STEPS

# Its collections (episodes, memory_tags, tagging_jobs) belong to ``shared_lib.memory``, whose
# search and tools read them too; the room tells the stories and lists them.
MANIFEST = Manifest(
    name="memory_stories",
    summary="episodes and tags told from the organisation's turns (seed 001 §21–22)",
    steps=STEPS,
    jobs=MappingProxyType({"daily_digest": steps.digest_job, "tagging": steps.tagging_job}),
    cli="shared_lib.features.memory_stories.cli",
)
