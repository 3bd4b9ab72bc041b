"""Runtime settings from the environment (12-factor); validated, with clear errors."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shared_lib.errors import ConfigError


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    env: Literal["demo", "local", "test", "dev", "stg", "prod"] = "local"
    project: str = "charter-local"
    store: Literal["memory", "firestore"] = "memory"
    bus: Literal["inproc", "pubsub"] = "inproc"
    llm: Literal["anthropic", "none"] = "anthropic"
    model: str = "claude-sonnet-4-6"
    fast_model: str = "claude-haiku-4-5"
    max_tokens: int = Field(default=1500, ge=64, le=64000)
    llm_timeout_seconds: float = Field(default=30.0, gt=0)
    llm_max_retries: int = Field(default=3, ge=0, le=10)
    lease_seconds: int = Field(default=60, ge=1)
    max_steps: int = Field(default=3, ge=1, le=10)
    max_turn_seconds: float = Field(default=120.0, gt=0)
    fault_injection: bool = False
    # The Pub/Sub emulator does not dead-letter ordered subscriptions; the local stack turns
    # this on so the push handler counts attempts and dead-letters itself (see shared_lib.push).
    deadletter_fallback: bool = False
    org_default: str = "default"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        pick = {
            "env": env.get("CHARTER_ENV"),
            "project": env.get("CHARTER_PROJECT") or env.get("GOOGLE_CLOUD_PROJECT"),
            "store": env.get("CHARTER_STORE")
            or ("firestore" if env.get("FIRESTORE_EMULATOR_HOST") else None),
            "bus": env.get("CHARTER_BUS") or ("pubsub" if env.get("PUBSUB_EMULATOR_HOST") else None),
            "llm": env.get("CHARTER_LLM"),
            "model": env.get("CHARTER_MODEL"),
            "fast_model": env.get("CHARTER_FAST_MODEL"),
            "max_tokens": env.get("CHARTER_MAX_TOKENS"),
            "llm_timeout_seconds": env.get("CHARTER_LLM_TIMEOUT"),
            "llm_max_retries": env.get("CHARTER_LLM_MAX_RETRIES"),
            "lease_seconds": env.get("CHARTER_LEASE_SECONDS"),
            "max_steps": env.get("CHARTER_MAX_STEPS"),
            "fault_injection": env.get("CHARTER_FAULT_INJECTION"),
            "deadletter_fallback": env.get("CHARTER_DEADLETTER_FALLBACK"),
            "org_default": env.get("CHARTER_DEFAULT_ORG"),
        }
        try:
            return cls.model_validate({k: v for k, v in pick.items() if v not in (None, "")})
        except ValidationError as exc:
            raise ConfigError(f"invalid environment configuration: {exc}") from exc
