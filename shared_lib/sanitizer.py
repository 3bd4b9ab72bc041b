"""Masking of secrets and personal data (rules are data: ``config/sanitizer_rules.json``).

Text is masked before it reaches a cloud LLM or a log (seed 002 §7, seed 003
"セキュリティ"). ``mask`` returns the masked text and a *vault* (placeholder -> original).
The same value always gets the same placeholder within one vault, so the LLM can refer
to it ("[EMAIL_1]"); only the executor may turn placeholders back into values
(``shared_lib.brain.vault.restore_parameters``), nothing else ever sees a vault.

>>> masked, vault = Sanitizer.default().mask("連絡先は taro@example.com です")
>>> masked
'連絡先は [EMAIL_1] です'
>>> vault["[EMAIL_1]"]
'taro@example.com'
>>> Sanitizer.default().mask_text("password: hunter2")
'password: [SECRET_1]'
"""

from __future__ import annotations

import json
import re
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from shared_lib import config_files

RULES_FILE = Path(__file__).parent / "config" / "sanitizer_rules.json"
PLACEHOLDER = re.compile(r"\[([A-Z][A-Z_]*)_(\d+)\]")
SECRET_GROUP = "secret"


class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    label: str
    pattern: str

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        re.compile(value)
        return value


class RuleSet(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    version: int
    description: str = ""
    rules: list[Rule]


class Sanitizer:
    def __init__(self, rules: list[Rule]) -> None:
        self.rules = rules
        self._compiled = [(r, re.compile(r.pattern)) for r in rules]

    @classmethod
    def from_file(cls, path: Path | str) -> Sanitizer:
        data = RuleSet.model_validate(json.loads(Path(path).read_text(encoding="utf-8")))
        return cls(data.rules)

    @classmethod
    def default(cls) -> Sanitizer:
        """The rules of ``CHARTER_SANITIZER_RULES`` or the packaged file (cached per path)."""
        return _load(str(config_files.current().sanitizer_rules or RULES_FILE))

    def mask(self, text: str, vault: dict[str, str] | None = None) -> tuple[str, dict[str, str]]:
        """Mask ``text``; ``vault`` (extended in place) keeps numbering and values consistent."""
        vault = {} if vault is None else vault
        session = _Session(vault)
        for rule, rx in self._compiled:
            text = rx.sub(partial(session.replace, label=rule.label), text)
        return text, vault

    def mask_text(self, text: str) -> str:
        return self.mask(text)[0]

    def mask_obj(self, value: Any, vault: dict[str, str] | None = None) -> Any:
        """Mask every string inside a JSON-like structure with one shared vault."""
        vault = {} if vault is None else vault
        if isinstance(value, str):
            return self.mask(value, vault)[0]
        if isinstance(value, dict):
            return {k: self.mask_obj(v, vault) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.mask_obj(v, vault) for v in value]
        return value

    def contains_secret(self, text: str) -> bool:
        return self.mask_text(text) != text


class _Session:
    """One masking pass: reuses placeholders for values already in the vault."""

    def __init__(self, vault: dict[str, str]) -> None:
        self.vault = vault
        self.reverse = {v: k for k, v in vault.items()}
        self.counters: dict[str, int] = {}
        for key in vault:
            m = PLACEHOLDER.fullmatch(key)
            if m:
                self.counters[m.group(1)] = max(self.counters.get(m.group(1), 0), int(m.group(2)))

    def replace(self, m: re.Match[str], label: str) -> str:
        if SECRET_GROUP in m.re.groupindex and m.group(SECRET_GROUP) is not None:
            start, end = m.span(SECRET_GROUP)
            base = m.start()
            whole = m.group(0)
            return (
                whole[: start - base] + self._placeholder(m.group(SECRET_GROUP), label) + whole[end - base :]
            )
        return self._placeholder(m.group(0), label)

    def _placeholder(self, original: str, label: str) -> str:
        if PLACEHOLDER.fullmatch(original):
            return original
        if original in self.reverse:
            return self.reverse[original]
        self.counters[label] = self.counters.get(label, 0) + 1
        placeholder = f"[{label}_{self.counters[label]}]"
        self.vault[placeholder] = original
        self.reverse[original] = placeholder
        return placeholder


@lru_cache(maxsize=4)
def _load(path: str) -> Sanitizer:
    return Sanitizer.from_file(path)


def unmask(value: Any, vault: dict[str, str]) -> Any:
    """Replace placeholders found in ``vault`` (one pass; unknown placeholders stay masked)."""
    if isinstance(value, str):
        return PLACEHOLDER.sub(lambda m: vault.get(m.group(0), m.group(0)), value)
    if isinstance(value, dict):
        return {k: unmask(v, vault) for k, v in value.items()}
    if isinstance(value, list):
        return [unmask(v, vault) for v in value]
    return value
