"""The persona's learned extension (seed 001 §16.2 拡張SOUL): per organisation, within allowed keys.

The core (``persona_core``) says who ソウルくん is and how it speaks; it never changes at run
time. The extension holds what an organisation taught it: learned preferences, dynamic traits,
its own rules and per-context overrides, by dotted key (``ALLOWED``). The LLM proposes a change
(``persona_update``), this module judges each one, ``state.persona_store`` applies the accepted
ones. A key of the core (``tone.*``, ``constraints.*``, ``first_person``, ...) is ``core_key``,
any other unknown key ``not_allowed``, a value out of its range ``invalid``, a value holding a
secret ``secret``, a text holding a phrase the core forbids ``core_conflict``.

Context overrides (``context_overrides.<context>.formality|emoji_usage``) narrow the tone for
one kind of message the code recognises (``CONTEXTS``). "formal" for ソウルくん is 丁寧語
(です・ます) and still ends every sentence in ウル: the core's endings always win.

>>> from shared_lib.persona.core import load_core
>>> check("tone.first_person", "俺", load_core())
'core_key'
>>> check("dynamic_traits.verbosity", 0.3, load_core()) is None
True
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from shared_lib.persona.core import PersonaCore

Reason = Literal["core_key", "not_allowed", "invalid", "secret", "core_conflict", "level", "shadow"]

# The contexts the code picks (``context_for`` in the brain); the announcement tools are data here.
CONTEXTS: dict[str, tuple[str, ...]] = {"announcement": ("announce", "send_to_all")}
# Organisation-wide: only a person of this level or above teaches it (a lower one's proposal is
# refused ``level``); a shadow turn applies nothing (``shadow``).
TEACH_MIN_LEVEL = 4
FORMALITY = ("casual", "formal", "mixed")
TOPIC_CHARS, RULE_CHARS, NOTES_CHARS, MAX_TOPICS, MAX_RULES = 30, 100, 200, 10, 10

# key -> (kind, limits): "texts" a list (a string value appends one), "text", "score" 0..1, a choice, a flag
ALLOWED: dict[str, tuple[str, Any]] = {
    "learned_preferences.favorite_topics": ("texts", (MAX_TOPICS, TOPIC_CHARS)),
    "learned_preferences.communication_style_notes": ("text", NOTES_CHARS),
    "dynamic_traits.humor_frequency": ("score", None),
    "dynamic_traits.verbosity": ("score", None),
    "custom_rules": ("texts", (MAX_RULES, RULE_CHARS)),
    **{f"context_overrides.{c}.formality": ("choice", FORMALITY) for c in CONTEXTS},
    **{f"context_overrides.{c}.emoji_usage": ("flag", None) for c in CONTEXTS},
}


class PersonaChange(BaseModel):
    """One proposed change as the turn records it: applied, or refused with its reason."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    key: str
    value: Any = None
    reason: Reason | None = None  # None: applied


class PersonaSection(BaseModel):
    """The turn's persona record: the context it was phrased in, what it taught, what was refused."""

    model_config = ConfigDict(extra="forbid")
    context: str | None = None
    applied: list[PersonaChange] = Field(default_factory=list)
    refused: list[PersonaChange] = Field(default_factory=list)

    def note(self) -> str:
        """One line for the trail (``charter turns show``): ``persona +key -key:reason``."""
        marks = [f"+{c.key}" for c in self.applied] + [f"-{c.key}:{c.reason}" for c in self.refused]
        head = [f"context={self.context}"] if self.context else []
        return " ".join(["persona", *head, *marks]) if head or marks else ""


def core_keys(core: PersonaCore) -> set[str]:
    """Every name the core defines: its sections and their fields."""
    names = set(PersonaCore.model_fields)
    for section in names.copy():
        names |= set(type(getattr(core, section)).model_fields)
    return names


def check(key: str, value: Any, core: PersonaCore, current: Any = None) -> Reason | None:
    """Why ``key = value`` may not enter the extension (``None``: it may). ``current`` is the
    key's value now (a string appended to a list must still fit)."""
    if key not in ALLOWED:
        parts = key.split(".")
        if (
            parts[0] == "context_overrides"
            and len(parts) == 3
            and f"{parts[0]}.announcement.{parts[2]}" in ALLOWED
        ):
            return "not_allowed"  # an allowed override of a context the code does not pick
        return "core_key" if set(parts) & core_keys(core) else "not_allowed"
    kind, limits = ALLOWED[key]
    if kind == "score":
        ok = isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1
        return None if ok else "invalid"
    if kind == "flag":
        return None if isinstance(value, bool) else "invalid"
    if kind == "choice":
        return None if value in limits else "invalid"
    texts = [value] if isinstance(value, str) else value
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) and t.strip() for t in texts):
        return "invalid"
    width = limits if kind == "text" else limits[1]
    if (kind == "text" and not isinstance(value, str)) or any(len(t) > width for t in texts):
        return "invalid"
    if kind == "texts" and len(merged_list(current, value)) > limits[0]:
        return "invalid"
    if any(p in t for t in texts for p in core.constraints.forbidden_phrases):
        return "core_conflict"
    return None


def merged_list(current: Any, value: Any) -> list[str]:
    """A list key after ``value``: a string appends (once), a list replaces."""
    if isinstance(value, list):
        return [str(v) for v in value]
    now = [str(v) for v in current] if isinstance(current, list) else []
    return now if value in now else [*now, str(value)]


def set_key(ext: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """``ext`` with ``key`` (dotted) set to ``value`` (a checked one); a new dict."""
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in ext.items()}
    *parents, leaf = key.split(".")
    node = out
    for p in parents:
        node[p] = dict(node.get(p) or {})
        node = node[p]
    node[leaf] = merged_list(node.get(leaf), value) if ALLOWED[key][0] == "texts" else value
    return out


def get_key(ext: dict[str, Any], key: str) -> Any:
    node: Any = ext
    for p in key.split("."):
        node = node.get(p) if isinstance(node, dict) else None
    return node


def flat(ext: dict[str, Any]) -> dict[str, Any]:
    """The extension's allowed keys that are set, by dotted key (anything else is ignored)."""
    return {k: v for k in ALLOWED if (v := get_key(ext, k)) is not None}


def merged_view(core: PersonaCore, ext: dict[str, Any]) -> dict[str, Any]:
    """Core and extension together: the core's sections exactly as the core says, the extension's
    allowed keys beside them (never over them)."""
    view: dict[str, Any] = core.model_dump(mode="json")
    extension: dict[str, Any] = {}
    for key, value in flat(ext).items():
        extension = set_key(extension, key, value)
    return {**view, "extension": extension}


def learned_block(ext: dict[str, Any]) -> str:
    """The 「学んだ好み」 block of the prompt (the text is stored masked); ``""`` when nothing is set."""
    f = flat(ext)
    lines = []
    if topics := f.get("learned_preferences.favorite_topics"):
        lines.append(f"- よく話題になること: {'、'.join(topics)}")
    if notes := f.get("learned_preferences.communication_style_notes"):
        lines.append(f"- 伝え方のメモ: {notes}")
    for key, label in (("humor_frequency", "ユーモアの多さ"), ("verbosity", "説明の詳しさ")):
        if (score := f.get(f"dynamic_traits.{key}")) is not None:
            lines.append(f"- {label}: {score:.1f}（0〜1）")
    lines += [f"- この組織のルール: {rule}" for rule in f.get("custom_rules") or []]
    if not lines:
        return ""
    head = "【学んだ好み（この組織向け。口調・ルールはコアが優先）】"
    return "\n".join([head, *lines])


def override_text(core: PersonaCore, ext: dict[str, Any], context: str | None) -> str:
    """The instruction of ``context``'s override (``""``: none set). The core's sentence endings
    and forbidden phrases stay: "formal" is 丁寧語 that still ends in the core's ending."""
    if context is None:
        return ""
    f = flat(ext)
    formality = f.get(f"context_overrides.{context}.formality")
    emoji = f.get(f"context_overrides.{context}.emoji_usage")
    if formality is None and emoji is None:
        return ""
    endings = "・".join(f"「{e}」" for e in core.tone.sentence_endings)
    lines = [f"【この返答の場面: {CONTEXT_LABELS.get(context, context)}】"]
    if formality == "formal":
        lines.append(
            f"- 丁寧語（です・ます）で書く。それでも文末は必ず{endings}で終える（例:「お知らせしますウル」）。"
        )
    elif formality == "casual":
        lines.append(f"- くだけた口調で書く。文末は{endings}。")
    elif formality == "mixed":
        lines.append(f"- 丁寧語とくだけた口調を場面に合わせて使い分ける。文末は{endings}。")
    if emoji is False:
        lines.append("- 絵文字は使わない。")
    elif emoji is True and core.tone.emoji:
        lines.append(f"- 絵文字は{'・'.join(core.tone.emoji)}だけを使う。")
    return "\n".join(lines)


CONTEXT_LABELS = {"announcement": "アナウンス（お知らせの本文）"}


def context_of_tools(tools: list[str]) -> str | None:
    """The context a turn's tools put it in (the first that matches), else ``None``."""
    return next((c for c, names in CONTEXTS.items() if any(t in names for t in tools)), None)
