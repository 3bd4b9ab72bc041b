"""Cost from a configurable price table (``config/prices.json``; ``CHARTER_PRICES`` overrides).

>>> table = PriceTable.load()
>>> table.cost("claude-haiku-4-5-20251001", LLMUsage(input_tokens=1_000_000))
1.0
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from shared_lib.ports import LLMUsage
from shared_lib.settings import config_files

PRICES_FILE = Path(__file__).parent / "config" / "prices.json"


class Price(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_write: float = Field(ge=0)
    cache_read: float = Field(ge=0)


class PriceTable(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    version: int
    currency: str
    description: str = ""
    per_million_tokens: dict[str, Price]
    default: Price

    @classmethod
    def load(cls, path: str | None = None) -> PriceTable:
        file = Path(path or config_files.current().prices or PRICES_FILE)
        return cls.model_validate(json.loads(file.read_text(encoding="utf-8")))

    def price(self, model: str) -> Price:
        """Exact entry, else the longest entry that prefixes ``model``, else the default."""
        if model in self.per_million_tokens:
            return self.per_million_tokens[model]
        prefixes = [k for k in self.per_million_tokens if model.startswith(k)]
        return self.per_million_tokens[max(prefixes, key=len)] if prefixes else self.default

    def cost(self, model: str, usage: LLMUsage) -> float:
        p = self.price(model)
        total = (
            usage.input_tokens * p.input
            + usage.output_tokens * p.output
            + usage.cache_creation_input_tokens * p.cache_write
            + usage.cache_read_input_tokens * p.cache_read
        )
        return round(total / 1_000_000, 8)
