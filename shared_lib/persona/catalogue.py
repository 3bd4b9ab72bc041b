"""Persona: name, language, prompts and the fixed message catalogue, all as data.

A persona is a TOML file (``personas/soulkun.toml`` by default, ``CHARTER_PERSONA`` to
override) naming its prompt files: the system prompt (seed 000 §17.4 v2.0 for ソウルくん),
the charter's instructions to the proposer (§5.2.5), and the templates of the response
integration and self-critique calls, and the specialised prompts (``prompts``: one short
text per step of seed 004 §3.3, chosen by ``brain.specialised``). Every fixed user-visible
message comes from ``messages``, never from code or an exception. It names its immutable core
(``core_file``, seed 001 §16.2) and pins the core's SHA-256 (``core_sha256``); ``verify_persona``
is the start check.

>>> p = load_persona()
>>> p.message("permission_denied").endswith("🐺")
True
>>> "【第1章】私は誰か" in p.system_prompt()
True
"""

from __future__ import annotations

import string
import tomllib
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from shared_lib.errors import ConfigError
from shared_lib.persona.core import PersonaCore, load_core, verify_core, verify_identity_text
from shared_lib.settings import config_files

PERSONA_DIR = Path(__file__).parents[1] / "personas"


class Persona(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    language: str
    system_prompt_file: str
    messages: dict[str, str]
    # the specialised prompts by name (clarify, plan, confirm_gate, summarise)
    prompts: dict[str, str] = Field(default_factory=dict)
    instructions_file: str = "brain_instructions.ja.md"
    integration_file: str = "soulkun_integration.md"
    self_critique_file: str = "soulkun_self_critique.md"
    base_dir: str = str(PERSONA_DIR)
    core_file: str = "soulkun.core.toml"
    core_sha256: str = ""  # the pin (configuration): a start with any other core refuses

    def core_path(self) -> Path:
        """The core file: beside the persona, else the packaged one of that name."""
        return _core_path(self.base_dir, self.core_file)

    def core(self) -> PersonaCore:
        return load_core(str(self.core_path()))

    def message(self, key: str, **values: object) -> str:
        """A catalogue message with ``{placeholders}`` filled; unknown keys are a config error."""
        try:
            template = self.messages[key]
        except KeyError as exc:
            raise ConfigError(f"persona {self.name!r} has no message {key!r}") from exc
        return fill(template, values)

    def has(self, key: str) -> bool:
        return key in self.messages

    def specialised(self, name: str) -> str:
        """The specialised prompt ``name`` (``""``: this persona has none of that name)."""
        return self.prompts.get(name, "").strip()

    def system_prompt(self) -> str:
        path = Path(self.base_dir) / self.system_prompt_file
        return _read(str(path)) if path.exists() else f"あなたは{self.name}です。"

    def prompt(self, which: str, **values: object) -> str:
        """A prompt file of this persona (``instructions``, ``integration``, ``self_critique``)."""
        files = {
            "instructions": self.instructions_file,
            "integration": self.integration_file,
            "self_critique": self.self_critique_file,
        }
        if which not in files:
            raise ConfigError(f"unknown prompt {which!r}")
        path = Path(self.base_dir) / files[which]
        if not path.exists():
            path = PERSONA_DIR / files[which]  # a persona may reuse the packaged templates
        if not path.exists():
            raise ConfigError(f"persona {self.name!r}: prompt file {files[which]} not found")
        return fill(_read(str(path)), values)


def verify_persona(persona: Persona, pinned: str | None = None) -> str:
    """The start check: the core's bytes are the pinned ones (``pinned``, the setting
    ``CHARTER_PERSONA_CORE_SHA256``, wins over the persona file's ``core_sha256``), and the system
    prompt is the one the core pins. The core's hash, or ``ConfigError`` (one line)."""
    path = persona.core_path()
    got = verify_core(path, pinned or persona.core_sha256)
    verify_identity_text(load_core(str(path)), Path(persona.base_dir) / persona.system_prompt_file)
    return got


def fill(template: str, values: dict[str, object]) -> str:
    """``str.format`` that tolerates missing values (empty) and shows ``None`` as なし."""
    fields = {f for _, f, _, _ in string.Formatter().parse(template) if f}
    return template.format(**{f: _show(values.get(f, "")) for f in fields})


def _show(value: object) -> object:
    return "なし" if value is None else value


@lru_cache(maxsize=32)
def _core_path(base_dir: str, core_file: str) -> Path:
    """Where a persona's core is (looked for once: the files are the deployment's, read on every
    reply, and the look was a stat of the disk each time)."""
    path = Path(base_dir) / core_file
    return path if path.exists() else PERSONA_DIR / core_file


@lru_cache(maxsize=32)
def _read(path: str) -> str:
    return Path(path).read_text(encoding="utf-8")


def load_persona(path: str | None = None) -> Persona:
    """Load ``CHARTER_PERSONA`` (a TOML file) or the default persona."""
    # resolved before the cache: a process configured with another persona file reads that one
    return _load_persona(str(path or config_files.current().persona or PERSONA_DIR / "soulkun.toml"))


@lru_cache(maxsize=8)
def _load_persona(path: str) -> Persona:
    file = Path(path)
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"persona file {file}: {exc}") from exc
    return Persona.model_validate({**data, "base_dir": str(file.parent)})
