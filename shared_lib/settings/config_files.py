"""Which configuration files this process uses (the packaged defaults unless overridden).

The files are data the whole process shares (policy, persona, prices, tool catalogue, brain
configuration, masking rules, routing rules), read by loaders deep in the house that have no
runtime at hand (the sanitizer masks log lines, for one). The settings name overrides
(``CHARTER_POLICY``, ``CHARTER_PERSONA``, …); the composition root applies them once per
process with ``configure``; every loader asks ``current()``. Nothing here reads the
environment.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from shared_lib.errors import ConfigError
from shared_lib.settings import Settings

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class ConfigFiles:
    policy: Path | None = None
    persona: Path | None = None
    prices: Path | None = None
    tools: Path | None = None
    brain: Path | None = None
    sanitizer_rules: Path | None = None
    routing: Path | None = None

    @classmethod
    def of(cls, settings: Settings) -> ConfigFiles:
        return cls(
            policy=settings.policy_file,
            persona=settings.persona_file,
            prices=settings.prices_file,
            tools=settings.tools_file,
            brain=settings.brain_config_file,
            sanitizer_rules=settings.sanitizer_rules_file,
            routing=settings.routing_file,
        )


_current = ConfigFiles()


def configure(files: ConfigFiles) -> None:
    global _current
    _current = files


def current() -> ConfigFiles:
    return _current


def parse_json_model(model: type[M], text: str, source: str) -> M:
    """``text`` (JSON) as a ``model``; one ``ConfigError`` line naming ``source`` and the first
    field at fault when it is not one (the peers and the memory configuration files)."""
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{source}: not JSON ({exc.msg}, line {exc.lineno})") from exc
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"{source}: {where + ': ' if where else ''}{first['msg']}") from exc
