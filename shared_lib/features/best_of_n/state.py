"""The configuration of Best-of-N phrasing as data (``config/best_of_n.json``).

Per difficulty (1-5): N, whether the LLM judge runs (``none``: 1-2, ``heuristics``: the code's
axes only, ``full``: the judge too; seed 001 §4.4) and whether refinement runs (5 only), and
the ideal reply length of the length axis. The candidates' temperatures (the first N), the
evaluator's weights (seed 001 §4.1), the rule threshold that asks for one regeneration, and the
ceilings the code's rule checks put on a candidate's rule score.

>>> cfg = load_best_of_n_config()
>>> [cfg.level(d).n for d in range(1, 6)], cfg.weights.judge
([1, 2, 4, 6, 8], 0.3)
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from shared_lib.errors import ConfigError

CONFIG_FILE = Path(__file__).resolve().parents[2] / "config" / "best_of_n.json"
Score = Annotated[float, Field(ge=0.0, le=1.0)]
Weight = Annotated[float, Field(ge=0.0, le=1.0)]
Violation = Literal["forbidden_phrase", "internal_name", "placeholder", "iso_date", "over_length"]


class _Cfg(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Level(_Cfg):
    n: Annotated[int, Field(ge=1, le=8)]
    judge: Literal["none", "heuristics", "full"]
    refine: bool = False
    ideal_chars: Annotated[int, Field(ge=1)]


class DifficultyRules(_Cfg):
    long_input_chars: Annotated[int, Field(ge=1)] = 120
    many_results: Annotated[int, Field(ge=2)] = 3
    long_list: Annotated[int, Field(ge=2)] = 3


class Weights(_Cfg):
    judge: Weight = 0.30
    length: Weight = 0.10
    consistency: Weight = 0.10
    persona: Weight = 0.25
    rules: Weight = 0.25


class CallConfig(_Cfg):
    max_tokens: Annotated[int, Field(ge=16, le=8192)]
    instructions: Annotated[str, Field(min_length=1)]


class BestOfNConfig(_Cfg):
    version: int
    description: str = ""
    levels: dict[Literal["1", "2", "3", "4", "5"], Level]
    difficulty: DifficultyRules = Field(default_factory=DifficultyRules)
    temperatures: list[Annotated[float, Field(ge=0.0, le=2.0)]] = Field(min_length=8)
    weights: Weights = Field(default_factory=Weights)
    rule_threshold: Score = 0.4
    outlier_judge_min: Score = 0.8
    rule_ceilings: dict[Violation, Score]
    max_workers: Annotated[int, Field(ge=1, le=8)] = 4
    chars_per_token: Annotated[int, Field(ge=1)] = 4
    # a reply's expected length over the level's ideal one, for the cost estimate (steps_cost)
    output_margin: Annotated[float, Field(ge=1.0, le=4.0)] = 1.5
    judge: CallConfig
    refine: CallConfig
    # a text answer's other wordings: the proposal's answer is the first candidate (steps.phrase_text)
    text_answer: CallConfig

    @model_validator(mode="after")
    def _complete(self) -> BestOfNConfig:
        missing = sorted({"1", "2", "3", "4", "5"} - set(self.levels))
        if missing:
            raise ValueError(f"levels: difficulty {', '.join(missing)} missing")
        if any(self.levels[d].n > len(self.temperatures) for d in self.levels):
            raise ValueError("levels: an n exceeds the number of temperatures")
        if sum(self.weights.model_dump().values()) <= 0:
            raise ValueError("weights: all zero")
        return self

    def level(self, difficulty: int) -> Level:
        return self.levels[str(min(5, max(1, difficulty)))]  # type: ignore[index]


def load_best_of_n_config(path: str | None = None) -> BestOfNConfig:
    """The packaged file (or ``path``); ``ConfigError`` names the file and the bad field."""
    return _load(path or str(CONFIG_FILE))


@lru_cache(maxsize=4)
def _load(path: str) -> BestOfNConfig:
    try:
        return BestOfNConfig.model_validate(json.loads(Path(path).read_text(encoding="utf-8")))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "(document)"
        raise ConfigError(f"{path}: field {where}: {first['msg']}") from exc
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
