"""The memory's settings (seed 001 §7.3, §18–22): embeddings, debounce, the memory file.

A base of ``Settings`` (``shared_lib.settings.model``), declared with the same field helper
and read by the same sources; only the settings model reads the environment.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic_settings import BaseSettings

from shared_lib.settings.fields import _f

# the services that embed: context (memory in the prompt), executor (the memory and knowledge
# tools), admin (ingestion from the dashboard), memory (episodes indexed as memory)
EMBED_TARGETS = ("context", "executor", "admin", "memory")


class MemorySettings(BaseSettings):
    embedder: Literal["local", "vertex", "none"] = _f(
        None,
        "CHARTER_EMBEDDER",
        targets=EMBED_TARGETS,
        deploy="env",
        doc="local (a model inside a PyPI package, offline), vertex (Vertex AI), none (keyword only)",
    )
    embedding_model: str = _f(
        "text-multilingual-embedding-002", "CHARTER_EMBEDDING_MODEL", targets=EMBED_TARGETS
    )
    embedding_location: str = _f(
        "asia-northeast1", "CHARTER_EMBEDDING_LOCATION", targets=EMBED_TARGETS, doc="the Vertex AI region"
    )
    # seconds a burst from one person in one room is gathered into one turn, per channel (JSON
    # {channel: seconds}, capped at 5 s: shared_lib.features.debounce.state); a channel not named is not
    # debounced. Plain HTTP is not named: its callers are programs that send one request per
    # turn and wait for its answer (and the burst bench measures the chain, not a window).
    debounce_seconds: dict[str, float] = _f(
        {"chatwork": 2.0, "line": 2.0, "slack": 2.0}, "CHARTER_DEBOUNCE", targets=("ingress", "context")
    )
    # the bounds of the window that follows the sender's rhythm (seed 001 §7.3 v0.4: the median
    # gap × 1.5, debounce_min_ms 800, debounce_max_ms 5000; shared_lib.features.debounce.state_pace);
    # the channel's debounce_seconds stands until a sender has a rhythm. Never past 5 s.
    debounce_min_seconds: float = _f(
        0.8, "CHARTER_DEBOUNCE_MIN_SECONDS", targets=("context",), ge=0.0, le=5.0
    )
    debounce_max_seconds: float = _f(
        5.0, "CHARTER_DEBOUNCE_MAX_SECONDS", targets=("context",), ge=0.0, le=5.0
    )
    memory_file: Path | None = _f(None, "CHARTER_MEMORY_CONFIG", doc="default config/memory.json")
