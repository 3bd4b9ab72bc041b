"""The legacy keyword brain (seed 000 §2.2.1): the control arm of shadow mode and the
fallback when no LLM is configured or the kill switch is on.

A real matcher over the same registry: each enabled tool scores by its keywords found
in the message — the registry's ``keywords`` and ``brain.json`` ``legacy.intents``
``primary`` words weigh 2 + their length, ``secondary`` words 1, a ``negative`` word
takes 3 off. The best tool above ``min_score`` with a clear lead becomes a ``tool_call``
with rule-based parameters (validated by the tool's own model); missing parameters
become a clarification; a close tie becomes a clarification between the two; otherwise a
greeting from the fast-path table or a small-talk text. Same ``Proposal`` model as the
LLM brain, with its own confidence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import ValidationError

from shared_lib.brain import fast_path
from shared_lib.brain.config import BrainConfig, load_brain_config
from shared_lib.brain.legacy_params import extract
from shared_lib.persona import Persona
from shared_lib.proposal import Proposal
from shared_lib.tools.display import labels_text
from shared_lib.tools.registry import ToolRegistry, ToolSpec

CLEAR_LEAD = 2


@dataclass(frozen=True)
class Scored:
    spec: ToolSpec
    score: int
    hits: tuple[str, ...]


def score(spec: ToolSpec, text: str, cfg: BrainConfig) -> Scored:
    intent = cfg.legacy.intents.get(spec.name)
    primary = set(spec.keywords) | set(intent.primary if intent else ())
    secondary = set(intent.secondary if intent else ()) - primary
    hits = [k for k in sorted(primary) if k in text]
    total = sum(2 + len(k) for k in hits)
    soft = [k for k in sorted(secondary) if k in text]
    total += len(soft)
    if intent and any(n in text for n in intent.negative):
        total -= 3
    return Scored(spec, total, tuple(hits + soft))


def rank(text: str, registry: ToolRegistry, cfg: BrainConfig) -> list[Scored]:
    scored = [score(s, text, cfg) for s in registry.enabled()]
    return sorted((s for s in scored if s.score > 0), key=lambda s: (-s.score, s.spec.name))


def propose(
    text: str, *, registry: ToolRegistry, persona: Persona, cfg: BrainConfig | None = None
) -> Proposal:
    cfg = cfg or load_brain_config()
    ranked = rank(text, registry, cfg)
    best = ranked[0] if ranked and ranked[0].score >= cfg.legacy.min_score else None
    if best is None:
        return _text(text, persona, cfg)
    runner_up = ranked[1].score if len(ranked) > 1 else 0
    if best.score - runner_up < CLEAR_LEAD:
        return _tie(best, ranked[1], persona)
    params, sources = extract(best.spec, text)
    try:
        best.spec.params.model_validate(params)
    except ValidationError as exc:
        missing = sorted({str(e["loc"][0]) for e in exc.errors() if e["loc"]})
        return _need_detail(best, missing, persona, registry)
    confidence = round(min(0.85, 0.5 + 0.03 * best.score), 2)
    return Proposal.model_validate(
        {
            "output_type": "tool_call",
            "reasoning": {
                "intent_understanding": f"キーワード {', '.join(best.hits)} に一致（スコア{best.score}）",
                "context_used": ["ユーザーの最新メッセージのキーワード"],
                "tool_selection_reason": f"レガシー脳のキーワード規則で最高点の {best.spec.name} を選択",
                "alternatives_considered": [f"{s.spec.name}（スコア{s.score}）" for s in ranked[1:3]],
            },
            "confidence": {"overall": confidence, "intent": confidence, "parameters": confidence},
            "tool_calls": [{"tool_name": best.spec.name, "parameters": params, "parameter_sources": sources}],
        }
    )


def _tie(best: Scored, other: Scored, persona: Persona) -> Proposal:
    names = [best.spec.name, other.spec.name]
    return Proposal.model_validate(
        {
            "output_type": "clarification_needed",
            "reasoning": {
                "ambiguity_detected": f"キーワードが複数の機能に同程度に一致した（{best.score}対{other.score}）",
                "possible_interpretations": names,
            },
            "confidence": {"overall": 0.4},
            "clarification_question": persona.message("clarify_low_confidence"),
            "options": [s.spec.description.splitlines()[0][:60] for s in (best, other)],
        }
    )


def _need_detail(best: Scored, missing: list[str], persona: Persona, registry: ToolRegistry) -> Proposal:
    field = "、".join(missing) or "必要な情報"
    shown = labels_text(registry, best.spec.name, missing) or "必要な情報"
    return Proposal.model_validate(
        {
            "output_type": "clarification_needed",
            "reasoning": {
                "ambiguity_detected": f"{best.spec.name} に必要な {field} をキーワード規則で取り出せなかった",
                "possible_interpretations": [f"{best.spec.name} を使いたい（{field} が不足）"],
            },
            "confidence": {"overall": 0.45},
            "clarification_question": persona.message(
                "legacy_need_detail", tool=registry.display_name(best.spec.name), field=shown
            ),
        }
    )


def _text(text: str, persona: Persona, cfg: BrainConfig) -> Proposal:
    greeting = _greeting_key(text, cfg)
    return Proposal.model_validate(
        {
            "output_type": "text_response",
            "reasoning": {
                "intent_understanding": "挨拶" if greeting else "登録された機能のキーワードに一致しない発言",
                "no_tool_reason": "レガシー脳はキーワード一致がない場合に定型の応答を返す",
            },
            "confidence": {"overall": 0.9 if greeting else 0.6},
            "text_response": persona.message(greeting or "legacy_smalltalk"),
        }
    )


def _greeting_key(text: str, cfg: BrainConfig) -> str | None:
    key = fast_path.match(text, cfg)
    if key:
        return key
    head = re.split(r"[、。!！?？\s]", fast_path.normalise(text), maxsplit=1)[0]
    return fast_path.match(head, cfg)
