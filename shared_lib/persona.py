"""Persona: name, language, system prompt and the fixed message catalogue, as data.

>>> p = load_persona()
>>> p.message("permission_denied").endswith("🐺")
True
"""

from __future__ import annotations

import os
import string
import tomllib
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from shared_lib.errors import ConfigError

PERSONA_DIR = Path(__file__).with_name("personas")


class Persona(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    language: str
    system_prompt_file: str
    messages: dict[str, str]
    base_dir: str = str(PERSONA_DIR)

    def message(self, key: str, **values: object) -> str:
        """A catalogue message with ``{placeholders}`` filled; unknown keys are a config error."""
        try:
            template = self.messages[key]
        except KeyError as exc:
            raise ConfigError(f"persona {self.name!r} has no message {key!r}") from exc
        fields = {f for _, f, _, _ in string.Formatter().parse(template) if f}
        return template.format(**{f: values.get(f, "") for f in fields})

    def system_prompt(self) -> str:
        path = Path(self.base_dir) / self.system_prompt_file
        return path.read_text(encoding="utf-8") if path.exists() else f"あなたは{self.name}です。"


@lru_cache(maxsize=8)
def load_persona(path: str | None = None) -> Persona:
    """Load ``CHARTER_PERSONA`` (a TOML file) or the default persona."""
    file = Path(path or os.environ.get("CHARTER_PERSONA") or PERSONA_DIR / "soulkun.toml")
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"persona file {file}: {exc}") from exc
    return Persona.model_validate({**data, "base_dir": str(file.parent)})
