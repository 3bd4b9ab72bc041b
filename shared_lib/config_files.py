"""Which configuration files this process uses (the packaged defaults unless overridden).

The files are data the whole process shares (policy, persona, prices, tool catalogue, brain
configuration, masking rules, routing rules), read by loaders deep in the house that have no
runtime at hand (the sanitizer masks log lines, for one). The settings name overrides
(``CHARTER_POLICY``, ``CHARTER_PERSONA``, …); the composition root applies them once per
process with ``configure``; every loader asks ``current()``. Nothing here reads the
environment.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from shared_lib.settings import Settings


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
