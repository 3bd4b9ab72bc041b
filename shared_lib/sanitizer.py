"""Masking of secrets and personal data (rules are data: ``config/sanitizer_rules.json``).

Text is masked before it reaches a cloud LLM or a log. ``mask`` returns the masked text
and a vault (placeholder -> original) that only the executor may use to restore values
the user really gave; nothing else ever sees the vault.

>>> masked, vault = Sanitizer.default().mask("連絡先は taro@example.com です")
>>> masked
'連絡先は [EMAIL_1] です'
>>> vault["[EMAIL_1]"]
'taro@example.com'
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

RULES_FILE = Path(__file__).parent / "config" / "sanitizer_rules.json"


class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    label: str
    pattern: str


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
    @lru_cache(maxsize=1)
    def default(cls) -> Sanitizer:
        data = RuleSet.model_validate(json.loads(RULES_FILE.read_text(encoding="utf-8")))
        return cls(data.rules)

    def mask(self, text: str, vault: dict[str, str] | None = None) -> tuple[str, dict[str, str]]:
        vault = {} if vault is None else vault
        reverse = {v: k for k, v in vault.items()}
        counters: dict[str, int] = {}
        for key in vault:
            label = key.strip("[]").rsplit("_", 1)[0]
            counters[label] = counters.get(label, 0) + 1

        for rule, rx in self._compiled:
            def _sub(m: re.Match[str], rule: Rule = rule) -> str:
                original = m.group(0)
                if original.startswith("[") and original.endswith("]"):
                    return original
                if original in reverse:
                    return reverse[original]
                counters[rule.label] = counters.get(rule.label, 0) + 1
                placeholder = f"[{rule.label}_{counters[rule.label]}]"
                vault[placeholder] = original
                reverse[original] = placeholder
                return placeholder

            text = rx.sub(_sub, text)
        return text, vault

    def mask_text(self, text: str) -> str:
        return self.mask(text)[0]

    def mask_obj(self, value: Any) -> Any:
        """Mask every string inside a JSON-like structure (for logs and LLM call records)."""
        if isinstance(value, str):
            return self.mask_text(value)
        if isinstance(value, dict):
            return {k: self.mask_obj(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.mask_obj(v) for v in value]
        return value


def unmask(value: Any, vault: dict[str, str]) -> Any:
    """Restore placeholders (executor only, for parameters the user really gave)."""
    if isinstance(value, str):
        for placeholder, original in vault.items():
            value = value.replace(placeholder, original)
        return value
    if isinstance(value, dict):
        return {k: unmask(v, vault) for k, v in value.items()}
    if isinstance(value, list):
        return [unmask(v, vault) for v in value]
    return value
