"""The memory stories feature: episodes and tags (``shared_lib.features.memory_stories``)."""

from __future__ import annotations

from shared_lib.features.manifest import Manifest

# Its collections (episodes, memory_tags, tagging_jobs) belong to ``shared_lib.memory``, whose
# search and tools read them too; the room tells the stories and lists them.
MANIFEST = Manifest(
    name="memory_stories",
    summary="episodes and tags told from the organisation's turns (seed 001 §21–22)",
    cli="shared_lib.features.memory_stories.cli",
)
