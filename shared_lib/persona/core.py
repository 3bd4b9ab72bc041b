"""The persona's core (seed 001 §16.2): identity, tone and rules, immutable and hash-pinned.

The core is one TOML file next to the persona (``personas/soulkun.core.toml`` by default); its
SHA-256 over the file's bytes is what the configuration pins. Code reads the tone and the rules
from it (the Best-of-N evaluator's persona and rule axes); the learned extension of an
organisation lives in the store and may never change a key of the core.

>>> core = load_core()
>>> core.tone.sentence_endings
['ウル']
>>> len(core_sha256()) == 64
True
"""

from __future__ import annotations

import hashlib
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shared_lib.errors import ConfigError

CORE_FILE = Path(__file__).parents[1] / "personas" / "soulkun.core.toml"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Identity(_Section):
    name: str = Field(min_length=1)
    species: str = ""
    base_personality: str = ""
    language: str = "ja"
    # The identity text (the persona's system prompt: 「私は誰か」) is part of the core: pinned here,
    # so changing it changes the core's hash too, and a start refuses a prompt that drifted.
    system_prompt_sha256: str = ""


class Tone(_Section):
    formality: Literal["casual", "formal", "mixed"] = "casual"
    first_person: str = ""
    sentence_endings: list[str] = Field(default_factory=list)
    emoji_usage: bool = True
    emoji: list[str] = Field(default_factory=list)
    sentences_min: int = Field(default=1, ge=1)
    sentences_max: int = Field(default=8, ge=1)


class Constraints(_Section):
    never_do: list[str] = Field(default_factory=list)
    always_do: list[str] = Field(default_factory=list)
    forbidden_phrases: list[str] = Field(default_factory=list)


class Boundaries(_Section):
    max_message_length: int = Field(default=2000, ge=1)
    allowed_languages: list[str] = Field(default_factory=lambda: ["ja"])


class PersonaCore(_Section):
    persona: Identity
    tone: Tone = Field(default_factory=Tone)
    constraints: Constraints = Field(default_factory=Constraints)
    boundaries: Boundaries = Field(default_factory=Boundaries)


def core_sha256(path: Path | str | None = None) -> str:
    """SHA-256 (hex) of the core file's bytes: what the configuration pins."""
    return file_sha256(Path(path or CORE_FILE), "persona core")


def file_sha256(file: Path, what: str) -> str:
    """SHA-256 (hex) of ``file``'s bytes; ``ConfigError`` naming ``what`` when it cannot be read."""
    try:
        return hashlib.sha256(file.read_bytes()).hexdigest()
    except OSError as exc:
        raise ConfigError(f"{what} {file}: {exc.strerror or exc}") from exc


def verify_core(path: Path | str, pinned: str) -> str:
    """The core's hash when it is ``pinned``; else ``ConfigError`` with one line naming the file,
    the hash it has and the pinned one (a process refuses to start on it)."""
    file, want = Path(path), pinned.strip().lower()
    got = core_sha256(file)
    if not want:
        raise ConfigError(f"persona core {file}: no pinned sha256 (core_sha256); refusing to start")
    if got != want:
        raise ConfigError(
            f"persona core {file}: sha256 {got} does not match the pinned {want}; refusing to start"
        )
    return got


def verify_identity_text(core: PersonaCore, prompt_file: Path) -> None:
    """The system prompt (the identity text) is the one the core pins, if it pins one."""
    want = core.persona.system_prompt_sha256.strip().lower()
    if not want:
        return
    got = file_sha256(prompt_file, "persona system prompt")
    if got != want:
        raise ConfigError(
            f"persona system prompt {prompt_file}: sha256 {got} does not match the core's pinned {want}; "
            "refusing to start"
        )


@lru_cache(maxsize=8)
def load_core(path: str | None = None) -> PersonaCore:
    """The core of ``path`` (default: the shipped core); ``ConfigError`` when unreadable or invalid."""
    file = Path(path or CORE_FILE)
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
        return PersonaCore.model_validate(data)
    except (OSError, tomllib.TOMLDecodeError, ValidationError) as exc:
        raise ConfigError(f"persona core {file}: {exc}") from exc
