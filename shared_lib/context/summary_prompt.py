"""The summary calls of compaction (seed 001 §19.6): persona-aware prompts over masked text.

Every summary speaks as the persona when ``use_persona_prompt`` is on: its name, first person
and sentence endings from the immutable core, and what the organisation's extension has learned
(``persona_ext.learned_block``). Whatever the voice, it keeps decisions, promises, the person's
preferences and tool results with their values. The messages are stored masked; the transcript
is masked again before the LLM sees it (a summary never carries what the history does not),
and the answer is masked before it is stored. With a ``vault`` (compaction holding the vault's
key, the history's sealed values opened), the call reads each value as a numbered placeholder
(``[PHONE_1]``) and its answer gets the values back, for compaction to seal them in the summary
it stores: a summary keeps what was said, never a placeholder with nothing behind it. A
summary of messages (``level2``) also lists their important facts after it, in the same answer
(``summary_facts``), for compaction to keep beside the rules' facts.

>>> from shared_lib.persona.core import load_core
>>> voice = Voice.of(load_core(), {})
>>> system_prompt(voice, "level2").startswith("あなたはソウルくんです。以下の会話をソウルくんの視点で要約してください。")
True
>>> "要約してください" in system_prompt(None, "level3")
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from shared_lib.context.summary_facts import FACTS_MAX_TOKENS, FACTS_RULES, opened_facts, split_facts
from shared_lib.memory.fact_merge import Proposed
from shared_lib.persona.core import PersonaCore
from shared_lib.persona.ext import learned_block
from shared_lib.ports import LLM, LLMRequest
from shared_lib.privacy.sanitizer import Sanitizer, unmask
from shared_lib.tools.normalize import JST

Target = Literal["level2", "level3"]
ROLE_LABELS = {"user": "ユーザー", "assistant": "アシスタント"}
# what every summary keeps (seed 001 §19.2 Level 2, §19.6)
KEEP_RULES = (
    "- 重要な決定事項、約束、ユーザーの好みは必ず保持",
    "- ツール実行の結果は具体的な値を保持",
    "- 感情的なやりとりがあればそのニュアンスも保持",
    "- 会話にないことは書かない。伏せ字（[EMAIL] など）はそのまま残す",
)


@dataclass(frozen=True)
class Voice:
    """Who speaks the summary: the persona's name and voice, and the organisation's learned block."""

    name: str
    first_person: str
    endings: tuple[str, ...]
    learned: str

    @classmethod
    def of(cls, core: PersonaCore, ext: dict[str, Any]) -> Voice:
        tone = core.tone
        return cls(core.persona.name, tone.first_person, tuple(tone.sentence_endings), learned_block(ext))


def system_prompt(voice: Voice | None, target: Target) -> str:
    """The system text of a summary call: of messages (``level2``) or of summaries (``level3``)."""
    facts: tuple[str, ...] = ()
    if target == "level2":  # the messages leaving the window: their facts listed in the same answer
        task = "以下の会話を{who}要約してください。"
        size = "- 元の3割ほどの長さにまとめる"
        facts = FACTS_RULES
    else:
        task = "以下のこれまでの要約を、{who}キーポイント（何を決めたか、何を約束したか、何を作ったか）だけに要約してください。"
        size = "- 元の1割ほどの長さにまとめる"
    if voice is None:
        return "\n".join([task.format(who=""), *KEEP_RULES, size, *facts])
    lines = [f"あなたは{voice.name}です。" + task.format(who=f"{voice.name}の視点で")]
    lines.append(f"- {voice.name}の口調や視点を反映した要約にすること")
    if voice.endings:
        endings = "・".join(f"「{e}」" for e in voice.endings)
        lines.append(f"- 一人称は「{voice.first_person or '私'}」、文末は{endings}")
    text = "\n".join([*lines, *KEEP_RULES, size, *facts])
    return f"{text}\n\n{voice.learned}" if voice.learned else text


def _when(at: Any) -> str:
    return at.astimezone(JST).strftime("%m/%d %H:%M") if isinstance(at, datetime) else ""


def _masker(vault: dict[str, str] | None) -> Callable[[str], str]:
    """Stored placeholders (``[PHONE]``); with ``vault``, numbered ones whose values it records."""
    s = Sanitizer.default()
    if vault is None:
        return lambda text: str(s.mask_stored(text))
    return lambda text: s.mask(text, vault)[0]


def transcript(messages: Sequence[dict[str, Any]], vault: dict[str, str] | None = None) -> str:
    """The messages as the call reads them (``会話:`` … ``要約:``), masked (numbered into
    ``vault`` when given)."""
    mask = _masker(vault)
    lines = [
        f"{ROLE_LABELS.get(str(m.get('role')), str(m.get('role') or '?'))}（{_when(m.get('at'))}）: "
        f"{' '.join(mask(str(m.get('text') or '')).split())}"
        for m in messages
    ]
    return "\n".join(["会話:", *lines, "", "要約:"])


def summaries_text(level3: str, chunks: Sequence[str], vault: dict[str, str] | None = None) -> str:
    """Level 3 and the level-2 chunks as the input of a level-3 call, masked (numbered into
    ``vault`` when given)."""
    mask = _masker(vault)
    parts = ([f"これまでの要点: {level3}"] if level3 else []) + [f"- {c}" for c in chunks]
    return "\n".join(["これまでの要約:", *(mask(p) for p in parts), "", "要約:"])


def summarise(
    llm: LLM,
    *,
    model: str,
    system: str,
    text: str,
    max_tokens: int,
    limit: int,
    vault: dict[str, str] | None = None,
) -> str:
    """One summary call (purpose ``summary``); the answer on one line, at most ``limit`` chars,
    masked, or with ``vault`` (what ``text`` was numbered into) the values back in it, for a
    caller that seals what it stores."""
    return summarise_with_facts(
        llm, model=model, system=system, text=text, max_tokens=max_tokens, limit=limit, vault=vault
    )[0]


def summarise_with_facts(
    llm: LLM,
    *,
    model: str,
    system: str,
    text: str,
    max_tokens: int,
    limit: int,
    vault: dict[str, str] | None = None,
) -> tuple[str, tuple[Proposed, ...] | None]:
    """``summarise``, and the facts the answer listed after the summary (``summary_facts``:
    ``None`` when it listed none in the schema); the facts line's tokens are allowed for."""
    answer = llm.complete(
        LLMRequest(
            call_type="summary",
            model=model,
            max_tokens=max_tokens + (FACTS_MAX_TOKENS if FACTS_RULES[0] in system else 0),
            system=[{"type": "text", "text": system}],
            messages=[{"role": "user", "content": text}],
        )
    )
    said, facts = split_facts(answer.text())
    s = Sanitizer.default()
    flat = " ".join((said if vault is not None else s.mask_stored(said)).split())
    flat = flat if len(flat) <= limit else flat[: limit - 1] + "…"
    summary = flat if vault is None else str(unmask(flat, vault))
    return summary, (opened_facts(facts, vault) if facts is not None else None)
