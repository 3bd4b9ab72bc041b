"""The evaluator of Best-of-N (seed 001 §4.1, §4.3): every candidate reply scored on five axes.

``total = w_judge·judge + w_length·length + w_consistency·consistency + w_persona·persona +
w_rules·rules`` (weights from ``config/best_of_n.json``; an axis without a value, the judge
when it did not run or its answer did not parse, gives its weight to the others in proportion).

* **judge**: ONE call (``judge_request``, call type ``evaluation``, the fast model) asks for a
  JSON verdict scoring every candidate 1-10 on quality, persona and rules; ``parse_verdict``
  answers ``None`` for anything that is not a complete verdict, never raises.
* **length**: ``1 - |len - ideal| / max_len`` (the ideal from the difficulty, ``max_len`` the
  core's ``max_message_length``).
* **consistency**: the mean character-bigram cosine to the other candidates; a candidate the
  judge rates at least ``outlier_judge_min`` is not held down by being unlike the others.
* **persona**: code checks of the persona core (sentences ending in 「ウル」, the emoji, the
  sentence count bounds), averaged with the judge's persona score when the judge ran.
* **rules**: code checks that can only lower the score (a forbidden phrase of the core, a mask
  placeholder the reply's own asker cannot get back, an ISO date, an internal tool or
  parameter name, over the core's length), each a ceiling from the config; ``min`` with the
  judge's rule score.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shared_lib.brain import reply_checks
from shared_lib.features.best_of_n.state import BestOfNConfig, Violation
from shared_lib.persona.core import PersonaCore
from shared_lib.ports import LLMRequest

_SENTENCE_END = re.compile(r"(?<=[。！？!?])|\n")
_TRAILING = " \t　。！？!?…〜ー♪」』）)"


class JudgeScore(BaseModel):
    model_config = ConfigDict(extra="ignore")
    index: int
    quality: Annotated[float, Field(ge=1, le=10)]
    persona: Annotated[float, Field(ge=1, le=10)]
    rules: Annotated[float, Field(ge=1, le=10)]


class Verdict(BaseModel):
    model_config = ConfigDict(extra="ignore")
    scores: list[JudgeScore]


@dataclass(frozen=True)
class RuleContext:
    """What the rule axis checks against: the core, the names a user must not read, and the
    placeholders the responder gives back to the asker (those of their own message)."""

    core: PersonaCore
    internal_names: Sequence[str] = ()
    own_placeholders: frozenset[str] = frozenset()


@dataclass
class Scores:
    judge: float | None
    length: float
    consistency: float
    persona: float
    rules: float
    total: float = 0.0
    violations: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "judge": None if self.judge is None else round(self.judge, 4),
            "length": round(self.length, 4),
            "consistency": round(self.consistency, 4),
            "persona": round(self.persona, 4),
            "rules": round(self.rules, 4),
            "total": round(self.total, 4),
            "violations": list(self.violations),
        }


def judge_request(
    question: str, texts: Sequence[str], cfg: BestOfNConfig, core: PersonaCore, model: str
) -> LLMRequest:
    """The one judge call: the persona's rules as the system, the question and every candidate framed."""
    rules = "\n".join(
        [
            f"キャラクター: {core.persona.name}（{core.persona.base_personality}）",
            f"語尾: {'、'.join(core.tone.sentence_endings)}　絵文字: {'、'.join(core.tone.emoji)}",
            f"文の数: {core.tone.sentences_min}〜{core.tone.sentences_max}",
            "してはいけないこと: " + "、".join(core.constraints.never_do),
            "使ってはいけない言葉: " + "、".join(core.constraints.forbidden_phrases),
        ]
    )
    framed = "\n".join(f'<candidate index="{i}">\n{t}\n</candidate>' for i, t in enumerate(texts, 1))
    body = f"{cfg.judge.instructions}\n\n<question>\n{question}\n</question>\n<candidates>\n{framed}\n</candidates>"
    return LLMRequest(
        call_type="evaluation",
        model=model,
        max_tokens=cfg.judge.max_tokens,
        system=[{"type": "text", "text": rules}],
        messages=[{"role": "user", "content": body}],
        temperature=0.0,
    )


def parse_verdict(text: str, n: int) -> dict[int, JudgeScore] | None:
    """The judge's scores by candidate index (1-based), or ``None`` unless every candidate has one."""
    start = text.find("{")
    if start < 0:
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(text[start:])
        verdict = Verdict.model_validate(value)
    except (ValueError, ValidationError):
        return None
    scores = {s.index: s for s in verdict.scores}
    return scores if set(scores) >= set(range(1, n + 1)) else None


def sentences(text: str) -> list[str]:
    return [s for s in (p.strip() for p in _SENTENCE_END.split(text)) if s.strip(_TRAILING)]


def persona_code_score(text: str, core: PersonaCore) -> float:
    """The share of sentences ending as the core says, less 0.2 for a sentence count out of
    bounds and 0.1 for a missing emoji when the core uses one."""
    found = sentences(text)
    if not found:
        return 0.0
    endings = tuple(core.tone.sentence_endings)
    emoji = "".join(core.tone.emoji)
    ended = [s.rstrip(_TRAILING + emoji).endswith(endings) for s in found] if endings else [True]
    score = sum(ended) / len(ended)
    if not core.tone.sentences_min <= len(found) <= core.tone.sentences_max:
        score -= 0.2
    if core.tone.emoji_usage and core.tone.emoji and not any(e in text for e in core.tone.emoji):
        score -= 0.1
    return max(0.0, score)


def rule_violations(text: str, ctx: RuleContext) -> list[Violation]:
    found: list[Violation] = []
    if any(p in text for p in ctx.core.constraints.forbidden_phrases):
        found.append("forbidden_phrase")
    if any(p not in ctx.own_placeholders for p in reply_checks.placeholders(text)):
        found.append("placeholder")
    if reply_checks.iso_dates(text):
        found.append("iso_date")
    if reply_checks.names_in(text, ctx.internal_names):
        found.append("internal_name")
    if len(text) > ctx.core.boundaries.max_message_length:
        found.append("over_length")
    return found


def rule_code_score(text: str, ctx: RuleContext, cfg: BestOfNConfig) -> tuple[float, list[Violation]]:
    found = rule_violations(text, ctx)
    return min([1.0, *(cfg.rule_ceilings.get(v, 0.0) for v in found)]), found


def length_score(text: str, ideal: int, max_len: int) -> float:
    return max(0.0, min(1.0, 1.0 - abs(len(text) - ideal) / max_len))


def _bigrams(text: str) -> Counter[str]:
    return Counter(text[i : i + 2] for i in range(len(text) - 1))


def _cosine(a: Counter[str], b: Counter[str]) -> float:
    dot = sum(v * b.get(k, 0) for k, v in a.items())
    norm = math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values()))
    return dot / norm if norm else 0.0


def consistency_scores(texts: Sequence[str]) -> list[float]:
    """Each text's mean bigram cosine to the others (1.0 for a lone text)."""
    grams = [_bigrams(t) for t in texts]
    if len(grams) < 2:
        return [1.0 for _ in grams]
    return [
        sum(_cosine(g, o) for j, o in enumerate(grams) if j != i) / (len(grams) - 1)
        for i, g in enumerate(grams)
    ]


def score_all(
    texts: Sequence[str],
    verdict: dict[int, JudgeScore] | None,
    ctx: RuleContext,
    cfg: BestOfNConfig,
    *,
    ideal_chars: int,
) -> list[Scores]:
    """Every candidate's axes and total (``verdict``: the parsed judge, ``None`` when it did not run or parse)."""
    w = cfg.weights
    out = []
    for i, (text, similar) in enumerate(zip(texts, consistency_scores(texts), strict=True), 1):
        judged = verdict.get(i) if verdict else None
        quality = None if judged is None else (judged.quality - 1) / 9
        persona = persona_code_score(text, ctx.core)
        rules, found = rule_code_score(text, ctx, cfg)
        if judged is not None:
            persona = (persona + (judged.persona - 1) / 9) / 2
            rules = min(rules, (judged.rules - 1) / 9)
        if quality is not None and quality >= cfg.outlier_judge_min:
            similar = max(similar, quality)  # a valued outlier is not held down for being unlike the rest
        s = Scores(
            quality,
            length_score(text, ideal_chars, ctx.core.boundaries.max_message_length),
            similar,
            persona,
            rules,
            violations=list(found),
        )
        axes = [
            (w.length, s.length),
            (w.consistency, s.consistency),
            (w.persona, s.persona),
            (w.rules, s.rules),
        ]
        if quality is not None:
            axes.append((w.judge, quality))
        weight = sum(a for a, _ in axes)
        s.total = sum(a * v for a, v in axes) / weight if weight else 0.0
        out.append(s)
    return out


def spread(values: Sequence[float]) -> float:
    """The population standard deviation (0.0 for fewer than two values)."""
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
