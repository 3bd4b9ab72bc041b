"""Cost from a configurable price table (``config/prices.json``; ``CHARTER_PRICES`` overrides)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from shared_lib.ports import LLMUsage

PRICES_FILE = Path(__file__).parent / "config" / "prices.json"


class Price(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    input: float
    output: float
    cache_write: float
    cache_read: float


class PriceTable(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    version: int
    currency: str
    per_million_tokens: dict[str, Price]
    default: Price

    @classmethod
    def load(cls, path: str | None = None) -> PriceTable:
        file = Path(path or os.environ.get("CHARTER_PRICES") or PRICES_FILE)
        return cls.model_validate(json.loads(file.read_text(encoding="utf-8")))

    def cost(self, model: str, usage: LLMUsage) -> float:
        p = self.per_million_tokens.get(model, self.default)
        total = (usage.input_tokens * p.input + usage.output_tokens * p.output
                 + usage.cache_creation_input_tokens * p.cache_write + usage.cache_read_input_tokens * p.cache_read)
        return round(total / 1_000_000, 8)
