"""The memory's configuration file (``config/memory.json``; ``CHARTER_MEMORY_CONFIG`` replaces it).

``compaction`` holds the thresholds of seed 001 §19 (light 0.70, aggressive 0.85, emergency
0.95), the raw messages always kept (``min_raw_messages``), whether the summary prompt speaks as
the persona (§19.6) and whether what leaves the window is kept in long-term memory first
(``auto_save_to_memory``, §19.7, §19.9). A conversation's usage is measured against the serving
model's context window (``peers.config.PeersConfig.serving_window``: 200 000 tokens for Claude,
32 768 for the local stack's fakes), with what every request carries besides the history
counted in; ``history_token_budget`` overrides that with a fixed budget for the history alone
(operators, tests). ``jobs`` holds the parameters of the
background ``memory`` target's jobs by name; every part of the memory adds its own there.
Every mistake is one ``ConfigError`` line naming the file and the field.

>>> cfg = load_memory_config()
>>> cfg.compaction.light_threshold, cfg.compaction.min_raw_messages, cfg.history_budget(200_000, 14_000)
(0.7, 10, (200000, 14000))
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from shared_lib.errors import ConfigError
from shared_lib.memory.episodes import StoryConfig
from shared_lib.memory.tags import TaggingConfig
from shared_lib.settings.config_files import parse_json_model

MEMORY_FILE = Path(__file__).resolve().parent.parent / "config" / "memory.json"


class CompactionConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    enabled: bool = True
    light_threshold: float = Field(default=0.70, gt=0, lt=1)
    aggressive_threshold: float = Field(default=0.85, gt=0, lt=1)
    emergency_threshold: float = Field(default=0.95, gt=0, le=1)
    min_raw_messages: int = Field(default=10, ge=1, le=200)
    history_token_budget: int | None = Field(default=None, ge=100)  # None: the serving model's window
    use_persona_prompt: bool = True
    auto_save_to_memory: bool = True  # §19.7: facts of what leaves the window kept first
    summary_max_tokens: int = Field(default=400, ge=32, le=4000)
    level2_max_chars: int = Field(default=400, ge=40)
    level3_max_chars: int = Field(default=600, ge=40)

    @model_validator(mode="after")
    def _ordered(self) -> CompactionConfig:
        if not self.light_threshold < self.aggressive_threshold < self.emergency_threshold:
            raise ValueError("thresholds must rise: light < aggressive < emergency")
        return self


class MemoryConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    schema_version: int = 1
    description: str = ""
    compaction: CompactionConfig = Field(default_factory=CompactionConfig)
    story: StoryConfig = Field(default_factory=StoryConfig)  # seed 001 §22.7 (episodes)
    tagging: TaggingConfig = Field(default_factory=TaggingConfig)  # seed 001 §21.6
    jobs: dict[str, dict[str, Any]] = Field(default_factory=dict)

    def history_budget(self, window: int, carried: int) -> tuple[int, int]:
        """What a conversation's usage is measured against: (tokens, tokens always carried). The
        serving model's ``window`` and what every request carries besides the history
        (``carried``: the system prompt, the tools, the context's sections), or with
        ``history_token_budget`` that fixed budget for the history alone."""
        fixed = self.compaction.history_token_budget
        return (fixed, 0) if fixed else (window, carried)

    def job(self, name: str) -> dict[str, Any]:
        return dict(self.jobs.get(name) or {})

    @classmethod
    def parse(cls, text: str, source: str) -> MemoryConfig:
        return parse_json_model(cls, text, source)


def load_memory_config(path: Path | None = None) -> MemoryConfig:
    """``CHARTER_MEMORY_CONFIG``'s file (``settings.memory_file``), or the packaged default."""
    return _load(str(path or MEMORY_FILE))


@lru_cache(maxsize=8)
def _load(path: str) -> MemoryConfig:
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"CHARTER_MEMORY_CONFIG: cannot read {file} ({exc.strerror or exc})") from exc
    return MemoryConfig.parse(text, str(file))
