"""The brain's configuration as data (``config/brain.json``; ``CHARTER_BRAIN_CONFIG`` overrides).

Thresholds (the §5.2.3b confidence table, minimum reasoning), fast-path patterns,
model routing, self-critique conditions, constitution patterns and the legacy keyword
table live in the file, so they change without a code change.

>>> cfg = load_brain_config()
>>> cfg.band(0.75).name, cfg.band(0.29).action
('high', 'dont_know')
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from shared_lib.errors import ConfigError
from shared_lib.settings import config_files

CONFIG_FILE = Path(__file__).resolve().parent.parent / "config" / "brain.json"
Score = Annotated[float, Field(ge=0.0, le=1.0)]
BandAction = Literal["execute", "execute_logged", "confirm", "ask", "dont_know"]


class _Cfg(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Band(_Cfg):
    name: str
    min: Score
    action: BandAction


class MaxTokens(_Cfg):
    integration: Annotated[int, Field(ge=16)] = 600
    self_critique: Annotated[int, Field(ge=16)] = 400
    cap: Annotated[int, Field(ge=64, le=64000)] = 8192


class FastPath(_Cfg):
    patterns: dict[str, str] = Field(default_factory=dict)


class Models(_Cfg):
    simple_max_chars: Annotated[int, Field(ge=0)] = 40
    integration: Literal["same", "fast", "main"] = "same"
    self_critique: Literal["same", "fast", "main"] = "fast"


class SelfCritique(_Cfg):
    mid_band: tuple[Score, Score] = (0.7, 0.9)
    random_rate: Score = 0.1
    dangerous_levels: list[str] = Field(default_factory=lambda: ["medium", "high", "critical"])


class Constitution(_Cfg):
    # permission decisions (4.4.2) are read with the policy's patterns (policy.json), as the guardian reads them
    execution_patterns: list[str] = Field(default_factory=list)
    completion_claim_patterns: list[str] = Field(default_factory=list)
    decision_keys: dict[str, list[str]] = Field(default_factory=dict)

    @field_validator("execution_patterns", "completion_claim_patterns")
    @classmethod
    def _compiles(cls, value: list[str]) -> list[str]:
        for pattern in value:
            re.compile(pattern)
        return value


class Degraded(_Cfg):
    comment: str = ""
    store_sources: list[str] = Field(default_factory=list)


class Vault(_Cfg):
    ttl_minutes: Annotated[int, Field(ge=11, le=1440)] = 30  # outlives a 10-minute pending confirmation


class LegacyIntent(_Cfg):
    primary: list[str] = Field(default_factory=list)
    secondary: list[str] = Field(default_factory=list)
    negative: list[str] = Field(default_factory=list)
    # the shape of a request whose words stand apart (「皆さんに、…って伝えといて」): each match weighs 8
    patterns: list[str] = Field(default_factory=list)

    @field_validator("patterns")
    @classmethod
    def _compile(cls, value: list[str]) -> list[str]:
        for pattern in value:
            re.compile(pattern)
        return value


class Legacy(_Cfg):
    """The keyword brain's table, and what it must never act on (hostile text, a bulk deletion)."""

    comment: str = ""
    min_score: Annotated[int, Field(ge=1)] = 2
    intents: dict[str, LegacyIntent] = Field(default_factory=dict)
    hostile: list[str] = Field(default_factory=list)
    injection: list[str] = Field(default_factory=list)  # text that tries to rewrite the rules
    bulk: list[str] = Field(default_factory=list)
    destructive: list[str] = Field(default_factory=list)
    generic: list[str] = Field(default_factory=list)
    question_endings: list[str] = Field(default_factory=list)
    question_words: list[str] = Field(default_factory=list)
    recipient_prefix: str = "^$"
    instruction_tail: str = "(?!)"

    @field_validator("recipient_prefix", "instruction_tail")
    @classmethod
    def _compiles(cls, value: str) -> str:
        re.compile(value)
        return value


class BrainConfig(_Cfg):
    version: int
    description: str = ""
    stream: bool = True
    max_tokens: MaxTokens = Field(default_factory=MaxTokens)
    max_continuations: Annotated[int, Field(ge=0, le=10)] = 3
    reasoning_min_chars: Annotated[int, Field(ge=1)] = 20
    confidence_bands: list[Band]
    fast_path: FastPath = Field(default_factory=FastPath)
    models: Models = Field(default_factory=Models)
    self_critique: SelfCritique = Field(default_factory=SelfCritique)
    constitution: Constitution = Field(default_factory=Constitution)
    degraded: Degraded = Field(default_factory=Degraded)
    vault: Vault = Field(default_factory=Vault)
    legacy: Legacy = Field(default_factory=Legacy)

    @field_validator("confidence_bands")
    @classmethod
    def _ordered(cls, bands: list[Band]) -> list[Band]:
        mins = [b.min for b in bands]
        if not bands or mins != sorted(mins, reverse=True) or mins[-1] != 0.0:
            raise ValueError("confidence_bands must be ordered by descending 'min' and end at 0.0")
        return bands

    def band(self, confidence: float) -> Band:
        """The row of the §5.2.3b table that ``confidence`` falls in."""
        return next(b for b in self.confidence_bands if confidence >= b.min)


def load_brain_config(path: str | None = None) -> BrainConfig:
    return _load(path or str(config_files.current().brain or CONFIG_FILE))


@lru_cache(maxsize=4)
def _load(path: str) -> BrainConfig:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return BrainConfig.model_validate(data)
    except (OSError, ValueError) as exc:
        where = ""
        if isinstance(exc, ValidationError):
            first = exc.errors()[0]
            where = " field " + ".".join(str(x) for x in first["loc"]) + f": {first['msg']}"
            raise ConfigError(f"brain config {path}:{where}") from exc
        raise ConfigError(f"brain config {path}: {exc}") from exc
