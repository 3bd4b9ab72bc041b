"""The legacy keyword brain (seed 000 §2.2.1): the control arm of shadow mode and the
fallback when no LLM is configured or the kill switch is on.

A real matcher over the same registry: each enabled tool scores by its keywords found
in the message — the registry's ``keywords`` and ``brain.json`` ``legacy.intents``
``primary`` words weigh 2 + their length, ``secondary`` words 1, a ``negative`` word
takes 3 off. The best tool above ``min_score`` with a clear lead becomes a ``tool_call``
with rule-based parameters (validated by the tool's own model); missing parameters
become a clarification; a close tie becomes a clarification between the two; otherwise a
greeting from the fast-path table, a plain "I cannot answer that" to a question, or a
small-talk text. Same ``Proposal`` model as the LLM brain, with its own confidence.

It is the launch brain (prod's first stage), so it must do no harm (``brain.json``
``legacy``): hostile text gets no action, a bulk deletion is asked back one by one, words
that only say "please" (お願い) act only when a person is named, and its reasoning — which a
confirmation shows — speaks of what was asked in the persona's terms, never of keywords,
scores or tool names.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from pydantic import ValidationError

from shared_lib.brain import fast_path
from shared_lib.brain.config import BrainConfig, load_brain_config
from shared_lib.brain.legacy_params import extract, person_named
from shared_lib.persona.catalogue import Persona
from shared_lib.tools.display import labels_text
from shared_lib.tools.registry import ToolRegistry, ToolSpec
from shared_lib.turn.proposal import Proposal

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
    shaped = [p for p in (intent.patterns if intent else ()) if re.search(p, text)]
    total += 8 * len(shaped)
    hits += ["(形)"] * len(shaped)
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
    said = unicodedata.normalize("NFKC", text)
    if _any(said.lower(), [w.lower() for w in cfg.legacy.injection]):
        return _reply(persona, "legacy_injection", "決まりを変えさせようとする頼み方だった", 0.9)
    if _any(said, cfg.legacy.hostile):
        return _reply(persona, "legacy_decline", "人を困らせる・傷つけるためのお願いに読めた", 0.9)
    if _any(said, cfg.legacy.bulk) and _any(said, cfg.legacy.destructive):
        return _ask(persona, "legacy_one_by_one", "まとめて消すお願いだった（一つずつ確かめる）")
    ranked = rank(text, registry, cfg)
    best = ranked[0] if ranked and ranked[0].score >= cfg.legacy.min_score else None
    if best is not None and set(best.hits) <= set(cfg.legacy.generic) and not person_named(text):
        # a please with nobody to ask: 「よろしくお願いします」 is a greeting, 「あれお願い」 a question back
        if _greeting_key(text, cfg):
            return _text(text, persona, cfg)
        return _ask(persona, "legacy_what", "何をお願いしたいのかが、まだ分からない")
    if best is None:
        return _text(text, persona, cfg)
    # a rival that only says please (お願い) is no rival to a tool named by what it does
    rivals = [r for r in ranked[1:] if not set(r.hits) <= set(cfg.legacy.generic)]
    runner_up = rivals[0].score if rivals else 0
    if best.score - runner_up < CLEAR_LEAD:
        return _tie(best, rivals[0], persona, registry)
    params, sources = extract(best.spec, text, cfg.legacy)
    try:
        best.spec.params.model_validate(params)
    except ValidationError as exc:
        missing = sorted({str(e["loc"][0]) for e in exc.errors() if e["loc"]})
        return _need_detail(best, missing, persona, registry)
    confidence = round(min(0.85, 0.5 + 0.03 * best.score), 2)
    shown = registry.display_name(best.spec.name)
    return Proposal.model_validate(
        {
            "output_type": "tool_call",
            "reasoning": {
                "intent_understanding": f"「{shown}」のお願いだと受け取った",
                "context_used": ["いま届いたメッセージ"],
                "tool_selection_reason": f"メッセージの言葉から、「{shown}」が合うと考えた",
                "alternatives_considered": [f"「{registry.display_name(s.spec.name)}」" for s in ranked[1:3]],
            },
            "confidence": {"overall": confidence, "intent": confidence, "parameters": confidence},
            "tool_calls": [{"tool_name": best.spec.name, "parameters": params, "parameter_sources": sources}],
        }
    )


def _any(text: str, words: list[str]) -> bool:
    return any(w in text for w in words)


def _tie(best: Scored, other: Scored, persona: Persona, registry: ToolRegistry) -> Proposal:
    names = [f"「{registry.display_name(s.spec.name)}」" for s in (best, other)]
    return Proposal.model_validate(
        {
            "output_type": "clarification_needed",
            "reasoning": {
                "ambiguity_detected": f"{'と'.join(names)}のどちらのお願いにも取れた",
                "possible_interpretations": names,
            },
            "confidence": {"overall": 0.4},
            "clarification_question": persona.message("legacy_which", options="、".join(names)),
            "options": [registry.display_name(s.spec.name) for s in (best, other)],
        }
    )


def _need_detail(best: Scored, missing: list[str], persona: Persona, registry: ToolRegistry) -> Proposal:
    tool = registry.display_name(best.spec.name)
    shown = labels_text(registry, best.spec.name, missing) or "必要な情報"
    return Proposal.model_validate(
        {
            "output_type": "clarification_needed",
            "reasoning": {
                "ambiguity_detected": f"「{tool}」に必要な{shown}がメッセージから読み取れなかった",
                "possible_interpretations": [f"「{tool}」のお願い（{shown}がまだ分からない）"],
            },
            "confidence": {"overall": 0.45},
            "clarification_question": persona.message("legacy_need_detail", tool=tool, field=shown),
        }
    )


def _ask(persona: Persona, key: str, why: str) -> Proposal:
    return Proposal.model_validate(
        {
            "output_type": "clarification_needed",
            "reasoning": {"ambiguity_detected": why, "possible_interpretations": [why]},
            "confidence": {"overall": 0.4},
            "clarification_question": persona.message(key),
        }
    )


def _reply(persona: Persona, key: str, understood: str, confidence: float) -> Proposal:
    return Proposal.model_validate(
        {
            "output_type": "text_response",
            "reasoning": {
                "intent_understanding": understood,
                "no_tool_reason": "操作のお願いではないので、そのまま返事をする",
            },
            "confidence": {"overall": confidence},
            "text_response": persona.message(key),
        }
    )


def _text(text: str, persona: Persona, cfg: BrainConfig) -> Proposal:
    greeting = _greeting_key(text, cfg)
    if greeting:
        return _reply(persona, greeting, "挨拶", 0.9)
    if is_question(text, cfg):
        return _reply(persona, "legacy_cannot_answer", "質問だが、答えられる操作や資料がない", 0.6)
    if _any(text, cfg.legacy.generic) or _any(text, cfg.legacy.destructive):
        return _ask(persona, "legacy_what", "何をお願いしたいのかが、まだ分からない")
    return _reply(persona, "legacy_smalltalk", "お手伝いできる操作のお願いではない発言", 0.6)


def is_question(text: str, cfg: BrainConfig) -> bool:
    """A question as people type it: ends like one (？, か, っけ, って) or asks what/where/when."""
    norm = fast_path.normalise(text)
    return norm.endswith(tuple(cfg.legacy.question_endings)) or _any(norm, cfg.legacy.question_words)


def _greeting_key(text: str, cfg: BrainConfig) -> str | None:
    """The greeting the text is, or opens or closes with (「お疲れ様です。本日もよろしくお願いします🙇」)."""
    key = fast_path.match(text, cfg)
    if key:
        return key
    if len(text) > 60:
        return None
    parts = [p for p in re.split(r"[、。!！?？\s]+", fast_path.normalise(text)) if p]
    for part in parts[:1] + parts[-1:]:
        key = fast_path.match(part, cfg)
        if key:
            return key
    norm = fast_path.normalise(text)  # 「今日もありがとう！助かった〜」: the longest greeting it holds
    held = [k for k in cfg.fast_path.patterns if len(k) >= 5 and fast_path.normalise(k) in norm]
    return cfg.fast_path.patterns[max(held, key=len)] if held else None
